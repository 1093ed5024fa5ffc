"""``expert-profile``'s per-location pass: region stack, per-region columns, overhead classes.

One call walks one location's events in order and accumulates, in place,
into arrays shared with the other locations of its process, so the sums
are taken in exactly the order of the pure-Python loop
(``tests/reports/profile_reference.py``) and the results are
bit-identical.  First-touch order of regions and overhead rows is recorded
as sequence stamps because the report lists them in that order.

Inputs and result are the named bundles below (the events come as a
:class:`tracefmt.columns.EventColumns`, as for the replay); problems are
:mod:`tracefmt.nesting` codes.  Unlike the replay, a plain EXIT closes
the innermost region whatever it names (as ompP's loop did); a collective
exit must name it, and nothing may stay open at the end.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

from tracefmt.layout import Role
from tracefmt.nesting import EXIT_EMPTY_STACK, EXIT_MISMATCH, OK, UNCLOSED, UNDEFINED_REGION

from tracefmt.event_codes import (  # noqa: F401  (constants the kernels below read)
    ENTER,
    EXIT,
    MPI_COLLEXIT,
    MPI_RECV,
    MPI_SEND,
    OMP_COLLEXIT,
)
ROLE_SINGLE = int(Role.OMP_SINGLE)

#: the columns of a region's profile per thread (``Accumulators.vals[region]``)
COLUMNS = ("execT", "execC", "bodyT", "enterT", "exitT", "mpiT", "inV", "outV", "recvC", "sendC", "collC")
EXEC_T, EXEC_C, BODY_T, ENTER_T, EXIT_T = (COLUMNS.index(c) for c in ("execT", "execC", "bodyT", "enterT", "exitT"))
#: MPI activity, counted per thread as it happens; a region's columns get the change over its instance
ACTIVITY = ("mpiT", "inV", "outV", "recvC", "sendC", "collC")
ACT_MPI_T, ACT_IN_V, ACT_OUT_V, ACT_RECV_C, ACT_SEND_C, ACT_COLL_C = range(len(ACTIVITY))
FIRST_ACTIVITY = COLUMNS.index(ACTIVITY[0])  # the column of activity k is FIRST_ACTIVITY + k
assert COLUMNS[FIRST_ACTIVITY:] == ACTIVITY

#: ompP's overhead classes; an overhead row (``Accumulators.ovh[row]``) is [Total, *OVERHEADS]
OVERHEADS = ("Synch", "Imbal", "Limpar", "Mgmt", "MPI")
OVH_TOTAL = 0
OVH_SYNCH, OVH_IMBAL, OVH_LIMPAR, OVH_MGMT, OVH_MPI = (1 + OVERHEADS.index(o) for o in OVERHEADS)

#: per-region overhead class codes (``RegionTable.cls``): an overhead column, or
CLS_NONE = 0  # no class of its own (Total is never a class)
CLS_IMPLICIT_BARRIER = -1  # Limpar below a single, Imbal elsewhere

#: the first-touch counters (``Accumulators.seq``)
SEQ_REGIONS, SEQ_OVERHEAD_ROWS = 0, 1


class EventVolumes(NamedTuple):
    """Per event: the collective data volume of an MPI_COLLEXIT (0 elsewhere), float64."""

    sent: np.ndarray
    recvd: np.ndarray


class TeamTimes(NamedTuple):
    """FORK and JOIN time of the process's teams, each by team id (int64, ascending)."""

    fork_team: np.ndarray
    fork_time: np.ndarray  # float64
    join_team: np.ndarray
    join_time: np.ndarray  # float64


class RegionTable(NamedTuple):
    """Per region id (ids need not be dense): what the pass needs to know about a region."""

    valid: np.ndarray  # bool: defined
    role: np.ndarray  # int64 Role
    is_mpi: np.ndarray  # bool
    is_parallel: np.ndarray  # bool
    has_body: np.ndarray  # bool: body columns (critical, ordered, single, parallel)
    body_of: np.ndarray  # int64: role of the construct a *_BODY region belongs to, -1 otherwise
    is_crit_ord: np.ndarray  # bool: critical or ordered (waiting to enter is Synch)
    cls: np.ndarray  # int64 overhead class code (CLS_* or an OVH_* column)
    ovh: np.ndarray  # int64 overhead row of a parallel region's name, -1 otherwise
    program: int  # the overhead row of the whole program


class Accumulators(NamedTuple):
    """Where the pass adds up, in place."""

    vals: np.ndarray  # float64 [region, COLUMNS] of this (rank, thread)
    reg_stamp: np.ndarray  # int64 first-touch stamp per region, -1: untouched
    ovh: np.ndarray  # float64 [overhead row, Total + OVERHEADS] of this process
    ovh_stamp: np.ndarray  # int64 first-touch stamp per overhead row of this process
    seq: np.ndarray  # int64 [SEQ_REGIONS, SEQ_OVERHEAD_ROWS]: first touches so far


class ProfileStatus(NamedTuple):
    """What :func:`profile_location` returns.

    ``status``: a :mod:`tracefmt.nesting` code; ``event``/``time``: the
    offending event (UNCLOSED: -1 and the enter time of the innermost open
    region); ``region``: the innermost open region (EXIT_MISMATCH,
    UNCLOSED); ``time_in_parallel``: the thread's time inside outermost
    parallel regions.
    """

    status: int
    event: int
    time: float
    region: int
    time_in_parallel: float


@numba.njit(cache=True, nogil=True)
def _touch(stamp, k, seq, which):
    if stamp[k] < 0:
        stamp[k] = seq[which]
        seq[which] += 1


@numba.njit(cache=True, nogil=True)
def _nonneg(x):
    # Python's max(x, 0.0): keeps x unless 0.0 is strictly larger (so -0.0 and NaN stay)
    return 0.0 if 0.0 > x else x


@numba.njit(cache=True, nogil=True)
def _team_time(teams, times, team):
    # NaN: the team's FORK/JOIN was not recorded; the caller then uses the thread's own ENTER/EXIT
    k = np.searchsorted(teams, team)
    if k < teams.shape[0] and teams[k] == team:
        return times[k]
    return np.nan


@numba.njit(cache=True, nogil=True)
def profile_location(events, volumes, teams, regions, acc):
    """Accumulate one location's profile into ``acc``; returns a :class:`ProfileStatus`.

    ``events``: the location's ``EventColumns``; ``volumes``: its
    :class:`EventVolumes`; ``teams``: the :class:`TeamTimes` of its process
    (``c`` of a parallel region's ENTER names its team); ``regions``: the
    :class:`RegionTable`; ``acc``: the :class:`Accumulators`, ``vals`` this
    (rank, thread)'s, ``ovh``/``ovh_stamp`` its process's.
    """
    time, etype, a, c, d = events.time, events.type, events.a, events.c, events.d
    coll_sent, coll_recvd = volumes.sent, volumes.recvd
    fork_team, fork_time, join_team, join_time = teams.fork_team, teams.fork_time, teams.join_team, teams.join_time
    reg_valid, reg_role, reg_is_mpi, reg_is_parallel = regions.valid, regions.role, regions.is_mpi, regions.is_parallel
    reg_has_body, reg_body_of, reg_is_crit_ord = regions.has_body, regions.body_of, regions.is_crit_ord
    reg_cls, reg_ovh, program = regions.cls, regions.ovh, regions.program
    vals, reg_stamp, ovh, ovh_stamp, seq = acc.vals, acc.reg_stamp, acc.ovh, acc.ovh_stamp, acc.seq
    n = time.shape[0]
    n_reg = reg_valid.shape[0]
    depth = 0
    max_depth = 1
    for i in range(n):
        ty = etype[i]
        if ty == ENTER:
            depth += 1
            if depth > max_depth:
                max_depth = depth
        elif ty == EXIT or ty == MPI_COLLEXIT or ty == OMP_COLLEXIT:
            depth -= 1
    s_rid = np.empty(max_depth, np.int64)
    s_t0 = np.empty(max_depth, np.float64)
    s_c0 = np.empty((max_depth, len(ACTIVITY)), np.float64)
    s_b0 = np.empty(max_depth, np.float64)
    s_b1 = np.empty(max_depth, np.float64)
    s_hb0 = np.zeros(max_depth, np.bool_)
    s_hb1 = np.zeros(max_depth, np.bool_)
    s_fork = np.empty(max_depth, np.float64)
    s_join = np.empty(max_depth, np.float64)
    par = np.empty(max_depth, np.int64)
    active = np.zeros(n_reg, np.int64)
    counters = np.zeros(len(ACTIVITY), np.float64)  # this thread's running MPI activity (ACT_*)
    sp = 0
    psp = 0
    mpi_depth = 0
    tip = 0.0
    for i in range(n):
        ty = etype[i]
        t = time[i]
        if ty == ENTER:
            rid = np.int64(a[i])
            if rid >= n_reg or not reg_valid[rid]:
                return ProfileStatus(UNDEFINED_REGION, i, t, -1, tip)
            s_rid[sp] = rid
            s_t0[sp] = t
            for k in range(len(ACTIVITY)):
                s_c0[sp, k] = counters[k]
            s_hb0[sp] = False
            s_hb1[sp] = False
            if reg_is_parallel[rid]:
                s_fork[sp] = _team_time(fork_team, fork_time, np.int64(c[i]))
                s_join[sp] = _team_time(join_team, join_time, np.int64(c[i]))
            sp += 1
            active[rid] += 1
            if reg_is_mpi[rid]:
                mpi_depth += 1
            if reg_body_of[rid] >= 0 and sp >= 2 and reg_role[s_rid[sp - 2]] == reg_body_of[rid]:
                s_b0[sp - 2] = t
                s_hb0[sp - 2] = True
            if reg_is_parallel[rid]:
                par[psp] = reg_ovh[rid]
                psp += 1
        elif ty == EXIT or ty == MPI_COLLEXIT or ty == OMP_COLLEXIT:
            if sp == 0:
                return ProfileStatus(EXIT_EMPTY_STACK, i, t, -1, tip)
            sp -= 1
            rid = s_rid[sp]
            t0 = s_t0[sp]
            if ty == MPI_COLLEXIT:
                if np.int64(a[i]) != rid:
                    return ProfileStatus(EXIT_MISMATCH, i, t, rid, tip)
                counters[ACT_OUT_V] += coll_sent[i]
                counters[ACT_IN_V] += coll_recvd[i]
                counters[ACT_COLL_C] += 1
            if reg_is_mpi[rid]:
                mpi_depth -= 1
                if mpi_depth == 0:
                    counters[ACT_MPI_T] += t - t0
                    if psp > 0:
                        _touch(ovh_stamp, par[psp - 1], seq, SEQ_OVERHEAD_ROWS)
                        ovh[par[psp - 1], OVH_MPI] += t - t0
                    _touch(ovh_stamp, program, seq, SEQ_OVERHEAD_ROWS)
                    ovh[program, OVH_MPI] += t - t0
            active[rid] -= 1
            _touch(reg_stamp, rid, seq, SEQ_REGIONS)
            vals[rid, EXEC_C] += 1
            if reg_body_of[rid] >= 0 and sp > 0 and reg_role[s_rid[sp - 1]] == reg_body_of[rid]:
                s_b1[sp - 1] = t
                s_hb1[sp - 1] = True
            parent_role = reg_role[s_rid[sp - 1]] if sp > 0 else -1
            if active[rid] == 0:
                vals[rid, EXEC_T] += t - t0
                for k in range(len(ACTIVITY)):
                    vals[rid, FIRST_ACTIVITY + k] += counters[k] - s_c0[sp, k]
            if reg_is_parallel[rid]:
                psp -= 1
                f = s_fork[sp]
                if np.isnan(f):
                    f = t0
                j = s_join[sp]
                if np.isnan(j):
                    j = t
                enter_t = _nonneg(t0 - f)
                exit_t = _nonneg(j - t)
                vals[rid, BODY_T] += t - t0
                vals[rid, ENTER_T] += enter_t
                vals[rid, EXIT_T] += exit_t
                vals[rid, EXEC_T] += enter_t + exit_t  # execT spans fork to join on every thread
                o = reg_ovh[rid]
                _touch(ovh_stamp, o, seq, SEQ_OVERHEAD_ROWS)
                ovh[o, OVH_TOTAL] += (t - t0) + enter_t + exit_t
                ovh[o, OVH_MGMT] += enter_t + exit_t
                _touch(ovh_stamp, program, seq, SEQ_OVERHEAD_ROWS)
                ovh[program, OVH_MGMT] += enter_t + exit_t
                if psp == 0:
                    tip += (t - t0) + enter_t + exit_t
            elif reg_has_body[rid] and s_hb0[sp] and s_hb1[sp]:
                b0 = s_b0[sp]
                b1 = s_b1[sp]
                enter_t = b0 - t0
                exit_t = t - b1
                vals[rid, BODY_T] += b1 - b0
                vals[rid, ENTER_T] += enter_t
                vals[rid, EXIT_T] += exit_t
                if reg_is_crit_ord[rid]:
                    if psp > 0:
                        o = par[psp - 1]
                        _touch(ovh_stamp, o, seq, SEQ_OVERHEAD_ROWS)
                        ovh[o, OVH_SYNCH] += enter_t
                        ovh[o, OVH_MGMT] += exit_t
                    _touch(ovh_stamp, program, seq, SEQ_OVERHEAD_ROWS)
                    ovh[program, OVH_SYNCH] += enter_t
                    ovh[program, OVH_MGMT] += exit_t
            cls = reg_cls[rid]
            if cls == CLS_IMPLICIT_BARRIER:
                cls = OVH_LIMPAR if parent_role == ROLE_SINGLE else OVH_IMBAL
            if cls != CLS_NONE:
                if psp > 0:
                    o = par[psp - 1]
                    _touch(ovh_stamp, o, seq, SEQ_OVERHEAD_ROWS)
                    ovh[o, cls] += t - t0
                _touch(ovh_stamp, program, seq, SEQ_OVERHEAD_ROWS)
                ovh[program, cls] += t - t0
        elif ty == MPI_SEND:
            counters[ACT_SEND_C] += 1
            counters[ACT_OUT_V] += d[i]
        elif ty == MPI_RECV:
            counters[ACT_RECV_C] += 1
            counters[ACT_IN_V] += d[i]
    if sp > 0:
        return ProfileStatus(UNCLOSED, -1, s_t0[sp - 1], s_rid[sp - 1], tip)
    return ProfileStatus(OK, -1, 0.0, -1, tip)


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
