"""``expert-profile``'s per-location pass: region stack, per-region columns, overhead classes.

One call walks one location's events in order and accumulates, in place,
into arrays shared with the other locations of its process, so the sums
are taken in exactly the order of the pure-Python loop
(``tests/reports/profile_reference.py``) and the results are
bit-identical.  First-touch order of regions and overhead rows is recorded
as sequence stamps because the report lists them in that order.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.layout import EventType, Role

ENTER = int(EventType.ENTER)
EXIT = int(EventType.EXIT)
MPI_COLLEXIT = int(EventType.MPI_COLLEXIT)
OMP_COLLEXIT = int(EventType.OMP_COLLEXIT)
MPI_SEND = int(EventType.MPI_SEND)
MPI_RECV = int(EventType.MPI_RECV)
ROLE_SINGLE = int(Role.OMP_SINGLE)

#: per-region overhead class codes (``reg_cls``): index into [Total, Synch, Imbal, Limpar, Mgmt, MPI]
CLS_NONE = 0
CLS_IMPLICIT_BARRIER = -1  # Limpar below a single, Imbal elsewhere

#: status codes returned by :func:`profile_location`
OK = 0
EXIT_WITHOUT_ENTER = 1  # info = event index
NEVER_LEFT = 2  # info = region id, info_t = its enter time
UNKNOWN_REGION = 3  # info = event index
COLLEXIT_MISMATCH = 4  # info = event index, info2 = the open region (its volume needs the right name)


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
def profile_location(time, etype, a, c, d, coll_sent, coll_recvd, fork_team, fork_time, join_team, join_time,
                     reg_valid, reg_role, reg_is_mpi, reg_is_parallel, reg_has_body, reg_body_of, reg_is_crit_ord,
                     reg_cls, reg_ovh, program, vals, reg_stamp, ovh, ovh_stamp, seq):
    """Accumulate one location's profile; returns ``(status, info, info_t, info2, time_in_parallel)``.

    Per event: ``coll_sent``/``coll_recvd`` hold the collective volume of
    MPI_COLLEXIT events; ``fork_*``/``join_*`` give the FORK/JOIN time
    of the process's teams (``*_team`` ascending, ``c`` of a parallel
    region's ENTER names its team).  Per region id:
    ``reg_body_of`` the role of the construct a ``*_BODY`` region belongs to
    (-1 otherwise), ``reg_ovh`` the overhead row of a parallel region's name.
    ``vals`` [region, column] is this (rank, thread)'s table; ``ovh``
    [name, Total..MPI] is the process's; ``seq`` [2] counts first touches
    of regions and of overhead rows.
    """
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
    s_c0 = np.empty((max_depth, 6), np.float64)
    s_b0 = np.empty(max_depth, np.float64)
    s_b1 = np.empty(max_depth, np.float64)
    s_hb0 = np.zeros(max_depth, np.bool_)
    s_hb1 = np.zeros(max_depth, np.bool_)
    s_fork = np.empty(max_depth, np.float64)
    s_join = np.empty(max_depth, np.float64)
    par = np.empty(max_depth, np.int64)
    active = np.zeros(n_reg, np.int64)
    counters = np.zeros(6, np.float64)  # mpiT, inV, outV, recvC, sendC, collC of this thread
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
                return UNKNOWN_REGION, i, t, 0, tip
            s_rid[sp] = rid
            s_t0[sp] = t
            for k in range(6):
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
                return EXIT_WITHOUT_ENTER, i, t, 0, tip
            sp -= 1
            rid = s_rid[sp]
            t0 = s_t0[sp]
            if ty == MPI_COLLEXIT:
                if np.int64(a[i]) != rid:
                    return COLLEXIT_MISMATCH, i, t, rid, tip
                counters[2] += coll_sent[i]
                counters[1] += coll_recvd[i]
                counters[5] += 1
            if reg_is_mpi[rid]:
                mpi_depth -= 1
                if mpi_depth == 0:
                    counters[0] += t - t0
                    if psp > 0:
                        _touch(ovh_stamp, par[psp - 1], seq, 1)
                        ovh[par[psp - 1], 5] += t - t0
                    _touch(ovh_stamp, program, seq, 1)
                    ovh[program, 5] += t - t0
            active[rid] -= 1
            _touch(reg_stamp, rid, seq, 0)
            vals[rid, 1] += 1
            if reg_body_of[rid] >= 0 and sp > 0 and reg_role[s_rid[sp - 1]] == reg_body_of[rid]:
                s_b1[sp - 1] = t
                s_hb1[sp - 1] = True
            parent_role = reg_role[s_rid[sp - 1]] if sp > 0 else -1
            if active[rid] == 0:
                vals[rid, 0] += t - t0
                for k in range(6):
                    vals[rid, 5 + k] += counters[k] - s_c0[sp, k]
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
                vals[rid, 2] += t - t0
                vals[rid, 3] += enter_t
                vals[rid, 4] += exit_t
                vals[rid, 0] += enter_t + exit_t  # execT spans fork to join on every thread
                o = reg_ovh[rid]
                _touch(ovh_stamp, o, seq, 1)
                ovh[o, 0] += (t - t0) + enter_t + exit_t
                ovh[o, 4] += enter_t + exit_t
                _touch(ovh_stamp, program, seq, 1)
                ovh[program, 4] += enter_t + exit_t
                if psp == 0:
                    tip += (t - t0) + enter_t + exit_t
            elif reg_has_body[rid] and s_hb0[sp] and s_hb1[sp]:
                b0 = s_b0[sp]
                b1 = s_b1[sp]
                enter_t = b0 - t0
                exit_t = t - b1
                vals[rid, 2] += b1 - b0
                vals[rid, 3] += enter_t
                vals[rid, 4] += exit_t
                if reg_is_crit_ord[rid]:
                    if psp > 0:
                        o = par[psp - 1]
                        _touch(ovh_stamp, o, seq, 1)
                        ovh[o, 1] += enter_t
                        ovh[o, 4] += exit_t
                    _touch(ovh_stamp, program, seq, 1)
                    ovh[program, 1] += enter_t
                    ovh[program, 4] += exit_t
            cls = reg_cls[rid]
            if cls == CLS_IMPLICIT_BARRIER:
                cls = 3 if parent_role == ROLE_SINGLE else 2
            if cls != CLS_NONE:
                if psp > 0:
                    o = par[psp - 1]
                    _touch(ovh_stamp, o, seq, 1)
                    ovh[o, cls] += t - t0
                _touch(ovh_stamp, program, seq, 1)
                ovh[program, cls] += t - t0
        elif ty == MPI_SEND:
            counters[4] += 1
            counters[2] += d[i]
        elif ty == MPI_RECV:
            counters[3] += 1
            counters[1] += d[i]
    if sp > 0:
        return NEVER_LEFT, s_rid[sp - 1], s_t0[sp - 1], 0, tip
    return OK, 0, 0.0, 0, tip
