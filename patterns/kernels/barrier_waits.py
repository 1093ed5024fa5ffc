"""OpenMP barrier waits from the ``omp_barriers`` table in three passes over its rows (``patterns.instances``).

A member waits at a barrier instance from its ENTER until the latest ENTER of the instance (its own EXIT if that
comes first), less the time it ran OpenMP tasks in there: ``min(latest, exit) - enter - task_busy``, counted where
that is positive and finite.  Rows count where team, call path and instance are set (>= 0) and the call path's
role is an explicit or implicit barrier; the latest ENTER is taken over every counted-or-not member with a team,
call path and instance, as NaN where one of them is NaN (``np.maximum`` semantics).

The NumPy version of the same rows (gathers and masks over every row, about 50 ms at 10^7 events) is the slow
reference: ``tests/patterns/barrier_waits_reference.py``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, inline="always")
def _wait(latest, ex, enter, busy, has_busy):
    """The wait of one member, as ``_positive(np.minimum(latest, exit) - enter [- task_busy])``."""
    if latest != latest or ex != ex:
        first = np.nan
    else:
        first = latest if latest < ex else ex
    w = first - enter
    if has_busy:
        w = w - busy
    return w if np.isfinite(w) and w > 0 else 0.0


@numba.njit(cache=True, nogil=True)
def latest_enters(team, cnode, instance, key, enter, latest) -> None:
    """``latest[key[r]]`` := the latest ENTER of the instance of row ``r`` (``latest``: -inf on entry; ``key``: the
    instance ids, or the same numbered densely where they are sparse)."""
    for r in range(team.shape[0]):
        if team[r] < 0 or cnode[r] < 0 or instance[r] < 0:
            continue
        v = key[r]
        e = enter[r]
        if e != e or latest[v] != latest[v]:
            latest[v] = np.nan
        elif e > latest[v]:
            latest[v] = e


@numba.njit(cache=True, nogil=True)
def count_waits(team, cnode, instance, key, enter, exit_, busy, has_busy, role_of_cnode, barrier_role, implicit_role,
                latest) -> int:
    """The number of rows with a positive wait (see the module docstring)."""
    n = 0
    for r in range(team.shape[0]):
        v = instance[r]
        c = cnode[r]
        if team[r] < 0 or c < 0 or v < 0:
            continue
        role = role_of_cnode[c]
        if role != barrier_role and role != implicit_role:
            continue
        if _wait(latest[key[r]], exit_[r], enter[r], busy[r] if has_busy else 0.0, has_busy) > 0:
            n += 1
    return n


@numba.njit(cache=True, nogil=True)
def write_waits(team, cnode, instance, key, enter, exit_, busy, has_busy, loc, role_of_cnode, barrier_role,
                implicit_role, latest, o_row, o_instance, o_cnode, o_loc, o_enter, o_wait, o_implicit) -> None:
    """The rows :func:`count_waits` counted, in row order: row, instance, call path, location, ENTER, wait, and
    whether the barrier is an implicit one."""
    k = 0
    for r in range(team.shape[0]):
        v = instance[r]
        c = cnode[r]
        if team[r] < 0 or c < 0 or v < 0:
            continue
        role = role_of_cnode[c]
        if role != barrier_role and role != implicit_role:
            continue
        w = _wait(latest[key[r]], exit_[r], enter[r], busy[r] if has_busy else 0.0, has_busy)
        if w > 0:
            o_row[k] = r
            o_instance[k] = v
            o_cnode[k] = c
            o_loc[k] = loc[r]
            o_enter[k] = enter[r]
            o_wait[k] = w
            o_implicit[k] = role == implicit_role
            k += 1
