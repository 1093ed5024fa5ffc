"""OpenMP barrier waits from the ``omp_barriers`` table in two passes over its rows (``patterns.instances``).

A member waits at a barrier instance from its ENTER until the latest ENTER of the instance (its own EXIT if that
comes first), less the time it ran OpenMP tasks in there: ``min(latest, exit) - enter - task_busy``, counted where
that is positive and finite.  Rows count where team, call path and instance are set (>= 0) and the call path's
role is an explicit or implicit barrier; the latest ENTER is taken over every member with a team, call path and
instance, whatever its call path's role, as NaN where one of them is NaN (``np.maximum`` semantics).

The NumPy version of the same rows (gathers and masks over every row, about 50 ms at 10^7 events) is gone; the
slow reference is ``tests/patterns/barrier_waits_reference.py``.  One kernel for both passes: each jitted function
costs a load from numba's cache on an analysis's first call.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies


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
def barrier_waits(team, cnode, instance, key, enter, exit_, busy, has_busy, loc, role_of_cnode, barrier_role,
                  implicit_role, latest, o_row, o_instance, o_cnode, o_loc, o_enter, o_wait, o_implicit) -> int:
    """Every member that waits, in row order: row, instance, call path, location, ENTER, wait, and whether the
    barrier is an implicit one, written into the ``o_*`` arrays (room for every row); returns how many.

    ``key``: the instance ids, or the same numbered densely where they are sparse (the index into ``latest``,
    -inf on entry, one per key: the instances' latest ENTERs, computed in the first pass)."""
    for r in range(team.shape[0]):
        if team[r] < 0 or cnode[r] < 0 or instance[r] < 0:
            continue
        v = key[r]
        e = enter[r]
        if e != e or latest[v] != latest[v]:
            latest[v] = np.nan
        elif e > latest[v]:
            latest[v] = e
    k = 0
    for r in range(team.shape[0]):
        v = instance[r]
        c = cnode[r]
        if team[r] < 0 or c < 0 or v < 0:
            continue
        if c >= role_of_cnode.shape[0]:  # NumPy's indexing would have refused it too
            raise IndexError("omp_barriers: a call path outside the call tree")
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
    return k


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
