"""The run on an ideal network: a forward replay of the synchronisation structure in which every MPI call
costs nothing but the waiting its dependencies impose (Dimemas' ideal machine: zero latency, infinite
bandwidth), for the POP transfer efficiency (``patterns.pop``).

:func:`ideal_replay` walks every location's cut points (``sync_points``) in order.  Its clock starts at
the location's first event and advances by the computation between consecutive cut points (the
``time_segments`` of call paths that are neither MPI communication or synchronisation nor OpenMP
barriers: their time is what the replay itself re-creates).  At a receive it waits for the matching send's
clock (sends never block); at an MPI collective until every member has arrived (a 1-to-N receiver only for
the root, an N-to-1 root for all, everything else for all); at an OpenMP barrier for the whole team; a
worker thread starts a parallel region at its master's fork.  Everything else (Init, Finalize, posting,
completion, join) costs nothing.  Returns each location's clock at its end.  Slow reference:
``tests/patterns/pop_reference.py`` (``ideal_end``).

The replay by shares of processes (``analyzer.distributed.share_pop``) runs the same loop,
:func:`ideal_advance`, over a share's own locations, round after round: it keeps the state
(:func:`ideal_state`) between calls, :func:`ideal_deliver` feeds in what other shares produced (send
clocks of messages an own location receives; for a collective instance with members elsewhere, every other
member share's report on its members, :func:`own_arrivals`, folded here into the latest arrival, root and
type over all members, so the instance ends where the last report or member arrives) and the advance
lists what others wait for (own sends to remote receivers, instances whose own members have all arrived).
:func:`ideal_replay` is that loop with nothing remote: every instance's members and every message's
receiver in the one walk.  When nothing can move although cut points are left (an inconsistent trace)
:func:`ideal_pass` lets the first blocked cut point of the lowest such location pass.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

SEND, SEND_COMPLETE, RECV, RECV_REQUEST, COLLECTIVE, INIT, FINALIZE, FORK, OMP_BARRIER, JOIN = range(1, 11)
COLL_ALL, COLL_ONE2N, COLL_N2ONE = 0, 1, 2
#: ``ctr`` of the state: the queue's length, the cut points left
QN, LEFT = 0, 1


class IdealState(NamedTuple):
    """The state :func:`ideal_state` returns, by name (pass it on as ``*state``)."""

    clock: np.ndarray  # per location
    ptr: np.ndarray  # its next cut point
    counted: np.ndarray  # per cut point: the computation before it added
    queue: np.ndarray  # locations to run
    inq: np.ndarray
    ctr: np.ndarray  # QN, LEFT
    sent: np.ndarray  # per messages row
    msg_wait: np.ndarray
    c_arr: np.ndarray  # per collective instance: members arrived here
    c_got: np.ndarray  # and elsewhere
    c_at: np.ndarray  # per collectives row
    c_leave: np.ndarray  # per position in c_rows
    c_rmax: np.ndarray  # per instance with members elsewhere: the latest arrival of all
    c_rroot: np.ndarray  # the arrival of the root that counts
    b_arr: np.ndarray  # per OpenMP barrier instance
    b_max: np.ndarray
    b_done: np.ndarray
    b_in: np.ndarray  # per omp_barriers row
    forked: np.ndarray  # per team
    out_msg: np.ndarray
    out_coll: np.ndarray
    out_n: np.ndarray


@numba.njit(cache=True, nogil=True)
def ideal_replay(cut_off, kind, row, comp, comp_last, start, c_inst, c_type, c_root, c_off, c_loc, c_rows,
                 b_inst, b_off, b_loc, m_team, m_master, t_off, t_loc, n_messages):
    """Final clock per location (see the module docstring).

    Per location ``l`` its cut points are ``cut_off[l]:cut_off[l+1]`` (``kind``, ``row``: the
    ``sync_points`` columns), ``comp[i]`` the computation in the interval that ends at cut point ``i``,
    ``comp_last[l]`` the one after its last.  Collectives: ``c_inst``/``c_root`` per collectives row
    (-1: not part of a complete instance), ``c_type`` per instance, its members' locations and rows
    ``c_loc[c_off[g]:c_off[g+1]]``, ``c_rows``; OpenMP barriers: ``b_inst`` per omp_barriers row and the
    members' locations; forks: ``m_team``/``m_master`` per omp_team_members row, each team's member
    locations ``t_loc[t_off[t]:t_off[t+1]]``.
    """
    L = start.shape[0]
    n_ci = c_off.shape[0] - 1
    c_need = c_off[1:] - c_off[:-1]  # every member in this walk
    no_remote, root_here = np.zeros(n_ci, np.bool_), np.ones(n_ci, np.bool_)
    m_remote = np.zeros(n_messages, np.bool_)
    (clock, ptr, counted, queue, inq, ctr, sent, msg_wait, c_arr, c_got, c_at, c_leave, c_rmax, c_rroot,
     b_arr, b_max, b_done, b_in, forked, out_msg, out_coll, out_n) = ideal_state(
        start, cut_off, n_messages, c_inst.shape[0], c_rows.shape[0], n_ci, b_inst.shape[0], b_off.shape[0] - 1,
        kind.shape[0], t_off.shape[0] - 1)
    for l in range(L):
        _push(l, queue, inq, ctr)
    while True:
        ideal_advance(cut_off, kind, row, comp, c_inst, c_type, c_root, c_off, c_loc, c_rows, c_need, no_remote,
                      root_here, b_inst, b_off, b_loc, m_team, m_master, t_off, t_loc, m_remote, clock, ptr, counted,
                      queue, inq, ctr, sent, msg_wait, c_arr, c_got, c_at, c_leave, c_rmax, c_rroot, b_arr, b_max,
                      b_done, b_in, forked, out_msg, out_coll, out_n)
        if ctr[LEFT] <= 0:
            break
        for l in range(L):
            if ptr[l] < cut_off[l + 1]:
                ideal_pass(l, kind, row, b_inst, ptr, b_done, queue, inq, ctr)
                break
    return clock + comp_last


@numba.njit(cache=True, nogil=True)
def ideal_state(start, cut_off, n_messages, n_c_rows, n_members, n_ci, n_b_rows, n_bi, n_points, n_t):
    """A fresh state of :func:`ideal_advance`: clocks at ``start``, every location before its first cut point
    (queue it to run it), no message sent, no member arrived; empty output lists."""
    L = start.shape[0]
    ctr = np.zeros(2, np.int64)
    ctr[LEFT] = cut_off[L] - cut_off[0]
    return (start.copy(), cut_off[:L].copy(), np.zeros(n_points, np.bool_), np.empty(L + 1, np.int64),
            np.zeros(L, np.bool_), ctr, np.full(n_messages, np.nan), np.full(n_messages, -1, np.int64),
            np.zeros(n_ci, np.int64), np.zeros(n_ci, np.int64),
            np.full(n_c_rows, np.nan),  # arrival clock by collectives row
            np.full(n_members, np.nan),  # leave clock by position in c_rows
            np.full(n_ci, -np.inf), np.full(n_ci, -np.inf),
            np.zeros(n_bi, np.int64), np.full(n_bi, -np.inf), np.zeros(n_bi, np.bool_),
            np.zeros(n_b_rows, np.bool_),  # arrived, by omp_barriers row
            np.full(n_t, np.nan), np.empty(n_messages, np.int64), np.empty(n_ci, np.int64), np.zeros(2, np.int64))


@numba.njit(cache=True, nogil=True)
def _push(l, queue, inq, ctr):
    if not inq[l]:
        queue[ctr[QN]] = l
        ctr[QN] += 1
        inq[l] = True


@numba.njit(cache=True, nogil=True)
def ideal_advance(cut_off, kind, row, comp, c_inst, c_type, c_root, c_off, c_loc, c_rows, c_need, c_remote,
                  c_root_own, b_inst, b_off, b_loc, m_team, m_master, t_off, t_loc, m_remote,
                  clock, ptr, counted, queue, inq, ctr, sent, msg_wait, c_arr, c_got, c_at, c_leave, c_rmax, c_rroot,
                  b_arr, b_max, b_done, b_in, forked, out_msg, out_coll, out_n):
    """Run the queued locations (and those they wake) until each is blocked or done.

    Inputs as :func:`ideal_replay`'s, and for the walk by shares: ``c_need`` the members of each instance
    over all shares, ``c_remote`` whether some are on another share, ``c_root_own`` whether the root whose
    arrival counts (the last in location order) is in this walk, ``m_remote`` per messages row whether its
    receiver is elsewhere.  The state (:func:`ideal_state`) is updated in place; ``out_msg[:out_n[0]]`` are
    the messages rows sent to a remote receiver in this call, ``out_coll[:out_n[1]]`` the instances with
    remote members whose own members have all arrived now."""
    out_n[0] = 0
    out_n[1] = 0
    qn, left = ctr[QN], ctr[LEFT]
    while qn > 0:
        qn -= 1
        l = queue[qn]
        inq[l] = False
        # the location's position and clock in locals, stored back when it stops: the arrays are arguments
        # (the state kept between calls), so the compiler cannot keep their elements in registers itself
        i, end, cl = ptr[l], cut_off[l + 1], clock[l]
        while i < end:
            k = kind[i]
            r = row[i]
            if not counted[i]:
                cl += comp[i]
                counted[i] = True
            if k == SEND and r >= 0:
                sent[r] = cl
                if m_remote[r]:
                    m_remote[r] = False  # one send per message
                    out_msg[out_n[0]] = r
                    out_n[0] += 1
                w = msg_wait[r]
                if w >= 0 and not inq[w]:  # queued inline: a helper call per step costs its arrays' reference counts
                    queue[qn] = w
                    qn += 1
                    inq[w] = True
            elif k == RECV and r >= 0:
                if np.isnan(sent[r]):
                    msg_wait[r] = l
                    break
                cl = max(cl, sent[r])
            elif k == COLLECTIVE and r >= 0 and c_inst[r] >= 0:
                g = c_inst[r]
                if np.isnan(c_at[r]):
                    c_at[r] = cl
                    c_arr[g] += 1
                    if c_remote[g] and c_arr[g] == c_off[g + 1] - c_off[g]:
                        out_coll[out_n[1]] = g
                        out_n[1] += 1
                    if c_arr[g] + c_got[g] == c_need[g]:
                        _finish_collective(g, c_type[g], c_off, c_rows, c_root, c_at, c_leave, c_rmax[g],
                                           c_rroot[g], c_root_own[g])
                        for q in range(c_off[g], c_off[g + 1]):
                            ml = c_loc[q]
                            if ml != l and not inq[ml]:
                                queue[qn] = ml
                                qn += 1
                                inq[ml] = True
                if c_arr[g] + c_got[g] < c_need[g]:
                    break
                for q in range(c_off[g], c_off[g + 1]):
                    if c_rows[q] == r:
                        cl = c_leave[q]
            elif k == OMP_BARRIER and r >= 0 and b_inst[r] >= 0:
                g = b_inst[r]
                if not b_in[r]:
                    b_in[r] = True
                    b_arr[g] += 1
                    b_max[g] = max(b_max[g], cl)
                    if b_arr[g] == b_off[g + 1] - b_off[g]:
                        b_done[g] = True
                        for q in range(b_off[g], b_off[g + 1]):
                            ml = b_loc[q]
                            if ml != l and not inq[ml]:
                                queue[qn] = ml
                                qn += 1
                                inq[ml] = True
                if not b_done[g]:
                    break
                cl = max(cl, b_max[g])
            elif k == FORK and r >= 0 and m_team[r] >= 0:
                t = m_team[r]
                if m_master[r]:
                    forked[t] = cl
                    for q in range(t_off[t], t_off[t + 1]):
                        ml = t_loc[q]
                        if ml != l and not inq[ml]:
                            queue[qn] = ml
                            qn += 1
                            inq[ml] = True
                else:
                    if np.isnan(forked[t]):
                        break
                    cl = forked[t]
            i += 1
            left -= 1
        ptr[l], clock[l] = i, cl
    ctr[QN], ctr[LEFT] = qn, left


@numba.njit(cache=True, nogil=True)
def ideal_pass(l, kind, row, b_inst, ptr, b_done, queue, inq, ctr):
    """Let location ``l``'s blocked cut point pass (nothing can move although cut points are left: an
    inconsistent trace); an OpenMP barrier counts as complete from then on.  Queues ``l``."""
    i = ptr[l]
    ptr[l] += 1
    ctr[LEFT] -= 1
    if kind[i] == OMP_BARRIER and row[i] >= 0 and b_inst[row[i]] >= 0:
        b_done[b_inst[row[i]]] = True
    _push(l, queue, inq, ctr)


@numba.njit(cache=True, nogil=True)
def ideal_deliver(msg_rows, msg_clocks, inst, count, latest, root_loc, root, last_loc, last_type, c_off, c_loc,
                  c_rows, c_type, c_root, c_need, c_root_own, r_root_loc, r_last_loc, sent, msg_wait, c_arr, c_got,
                  c_at, c_leave, c_rmax, c_rroot, queue, inq, ctr):
    """What other shares produced, into the state of :func:`ideal_advance`: the send clock of each messages
    row ``msg_rows`` (its waiting receiver queued); per report ``j`` of another member share on instance
    ``inst[j]`` (dense ids): its members' number, latest arrival, last root (global location, -1: none) and
    that root's arrival, its last member's global location and type.  The reports fold into the instance's
    part elsewhere (``c_got``, ``c_rmax``); the root and type are those of the member last in location order,
    as the serial replay takes them: ``r_root_loc``/``r_last_loc`` hold the locations of the latest so far
    (the own last root's and last member's to begin with).  Once every member has arrived the instance is
    finished and its own members queued; if own members are still to come, :func:`ideal_advance` finishes it
    when the last one arrives."""
    for j in range(msg_rows.shape[0]):
        r = msg_rows[j]
        sent[r] = msg_clocks[j]
        w = msg_wait[r]
        if w >= 0:
            _push(w, queue, inq, ctr)
    for j in range(inst.shape[0]):
        g = inst[j]
        c_got[g] += count[j]
        c_rmax[g] = max(c_rmax[g], latest[j])
        if root_loc[j] > r_root_loc[g]:
            r_root_loc[g], c_rroot[g], c_root_own[g] = root_loc[j], root[j], False
        if last_loc[j] > r_last_loc[g]:
            r_last_loc[g], c_type[g] = last_loc[j], last_type[j]
        # every report counts at least one member: the sum reaches c_need at the instance's last report only
        if c_arr[g] + c_got[g] == c_need[g]:
            _finish_collective(g, c_type[g], c_off, c_rows, c_root, c_at, c_leave, c_rmax[g], c_rroot[g],
                               c_root_own[g])
            for q in range(c_off[g], c_off[g + 1]):
                _push(c_loc[q], queue, inq, ctr)


@numba.njit(cache=True, nogil=True)
def own_arrivals(inst, c_off, c_rows, c_root, c_at):
    """Per instance of ``inst`` (dense ids) the latest arrival of its members in this walk, and the position
    in ``c_rows`` of its last root here (-1: none) and that root's arrival (-inf: none)."""
    latest = np.full(inst.shape[0], -np.inf)
    root_q = np.full(inst.shape[0], -1, np.int64)
    root = np.full(inst.shape[0], -np.inf)
    for j in range(inst.shape[0]):
        g = inst[j]
        for q in range(c_off[g], c_off[g + 1]):
            latest[j] = max(latest[j], c_at[c_rows[q]])
            if c_root[c_rows[q]]:
                root_q[j], root[j] = q, c_at[c_rows[q]]
    return latest, root_q, root


@numba.njit(cache=True, nogil=True)
def _finish_collective(g, typ, c_off, c_rows, c_root, c_at, c_leave, remote_latest, remote_root, root_own):
    """Leave times of the members in this walk of a complete collective instance (``remote_latest``: the
    latest arrival elsewhere; ``remote_root``: the root's there, used unless ``root_own``)."""
    latest = remote_latest
    root_t = remote_root
    for q in range(c_off[g], c_off[g + 1]):
        latest = max(latest, c_at[c_rows[q]])
        if c_root[c_rows[q]] and root_own:
            root_t = c_at[c_rows[q]]
    for q in range(c_off[g], c_off[g + 1]):
        own = c_at[c_rows[q]]
        if typ == COLL_ONE2N and not c_root[c_rows[q]] and root_t > -np.inf:
            c_leave[q] = max(own, root_t)
        elif typ == COLL_N2ONE and not c_root[c_rows[q]]:
            c_leave[q] = own
        else:
            c_leave[q] = max(own, latest)
