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
(:func:`ideal_state`) between calls, ``patterns.kernels.ideal_shares`` feeds in what other shares produced
(send clocks, reports on collective instances with members elsewhere, send clocks predicted from an
instance's end) and packs what the advance lists for others (own sends to remote receivers, instances
whose own members have all arrived); an instance ends where its last member or report arrives
(:func:`finish_collective`), and the predicted clocks waiting for it become clocks then
(:func:`release_predicted`).
:func:`ideal_replay` is that loop with nothing remote: every instance's members and every message's
receiver in the one walk.  When nothing can move although cut points are left (an inconsistent trace)
:func:`ideal_pass` lets the first blocked cut point of the lowest such location pass.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

SEND, SEND_COMPLETE, RECV, RECV_REQUEST, COLLECTIVE, INIT, FINALIZE, FORK, OMP_BARRIER, JOIN = range(1, 11)
COLL_ALL, COLL_ONE2N, COLL_N2ONE = 0, 1, 2
#: ``ctr`` of the state: the queue's length, the cut points left
QN, LEFT = 0, 1
#: columns of ``pred`` (per messages row): the instance its predicted clock waits for (-1: none), the next row
#: waiting for it (-1: the last), whether the sender is the instance's root, its computations in ``pool``
PG, PNEXT, PROOT, PSTART, PN = range(5)
#: ``pool_ctr``: the computations held in ``pool``, the predicted clocks waiting
USED, WAITING = 0, 1


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
    c_pred: np.ndarray  # per instance: the first messages row whose predicted clock waits for it (-1: none)
    pred: np.ndarray  # [messages row, PG..PN]
    pred_at: np.ndarray  # per messages row: the sender's arrival at the instance
    pool: np.ndarray  # the computations of the predicted clocks
    pool_ctr: np.ndarray  # USED, WAITING


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
     b_arr, b_max, b_done, b_in, forked, out_msg, out_coll, out_n, c_pred, pred, pred_at, pool, pool_ctr) = ideal_state(
        start, cut_off, n_messages, c_inst.shape[0], c_rows.shape[0], n_ci, b_inst.shape[0], b_off.shape[0] - 1,
        kind.shape[0], t_off.shape[0] - 1, False)
    for l in range(L):
        queue_location(l, queue, inq, ctr)
    while True:
        ideal_advance(cut_off, kind, row, comp, c_inst, c_type, c_root, c_off, c_loc, c_rows, c_need, no_remote,
                      root_here, b_inst, b_off, b_loc, m_team, m_master, t_off, t_loc, m_remote, clock, ptr, counted,
                      queue, inq, ctr, sent, msg_wait, c_arr, c_got, c_at, c_leave, c_rmax, c_rroot, b_arr, b_max,
                      b_done, b_in, forked, out_msg, out_coll, out_n, c_pred, pred, pred_at, pool, pool_ctr)
        if ctr[LEFT] <= 0:
            break
        for l in range(L):
            if ptr[l] < cut_off[l + 1]:
                ideal_pass(l, kind, row, b_inst, ptr, b_done, queue, inq, ctr)
                break
    return clock + comp_last


@numba.njit(cache=True, nogil=True)
def ideal_state(start, cut_off, n_messages, n_c_rows, n_members, n_ci, n_b_rows, n_bi, n_points, n_t, predictions):
    """A fresh state of :func:`ideal_advance`: clocks at ``start``, every location before its first cut point
    (queue it to run it), no message sent, no member arrived; empty output lists.  ``predictions``: room for
    send clocks predicted by other shares (``patterns.kernels.ideal_shares``), the walk by shares only."""
    L = start.shape[0]
    ctr = np.zeros(2, np.int64)
    ctr[LEFT] = cut_off[L] - cut_off[0]
    n_pm, n_pi = (n_messages, n_ci) if predictions else (0, 0)
    pred = np.full((n_pm, 5), -1, np.int64)
    return (start.copy(), cut_off[:L].copy(), np.zeros(n_points, np.bool_), np.empty(L + 1, np.int64),
            np.zeros(L, np.bool_), ctr, np.full(n_messages, np.nan), np.full(n_messages, -1, np.int64),
            np.zeros(n_ci, np.int64), np.zeros(n_ci, np.int64),
            np.full(n_c_rows, np.nan),  # arrival clock by collectives row
            np.full(n_members, np.nan),  # leave clock by position in c_rows
            np.full(n_ci, -np.inf), np.full(n_ci, -np.inf),
            np.zeros(n_bi, np.int64), np.full(n_bi, -np.inf), np.zeros(n_bi, np.bool_),
            np.zeros(n_b_rows, np.bool_),  # arrived, by omp_barriers row
            np.full(n_t, np.nan), np.empty(n_messages, np.int64), np.empty(n_ci, np.int64), np.zeros(2, np.int64),
            np.full(n_pi, -1, np.int64), pred, np.zeros(n_pm), np.zeros(64 if predictions else 0),
            np.zeros(2, np.int64))


@numba.njit(cache=True, nogil=True)
def queue_location(l, queue, inq, ctr):
    if not inq[l]:
        queue[ctr[QN]] = l
        ctr[QN] += 1
        inq[l] = True


@numba.njit(cache=True, nogil=True)
def ideal_advance(cut_off, kind, row, comp, c_inst, c_type, c_root, c_off, c_loc, c_rows, c_need, c_remote,
                  c_root_own, b_inst, b_off, b_loc, m_team, m_master, t_off, t_loc, m_remote,
                  clock, ptr, counted, queue, inq, ctr, sent, msg_wait, c_arr, c_got, c_at, c_leave, c_rmax, c_rroot,
                  b_arr, b_max, b_done, b_in, forked, out_msg, out_coll, out_n, c_pred, pred, pred_at, pool, pool_ctr):
    """Run the queued locations (and those they wake) until each is blocked or done.

    Inputs as :func:`ideal_replay`'s, and for the walk by shares: ``c_need`` the members of each instance
    over all shares, ``c_remote`` whether some are on another share, ``c_root_own`` whether the root whose
    arrival counts (the last in location order) is in this walk, ``m_remote`` per messages row whether its
    receiver is elsewhere.  The state (:func:`ideal_state`) is updated in place; ``out_msg[:out_n[0]]`` are
    the messages rows sent to a remote receiver, ``out_coll[:out_n[1]]`` the instances with remote members
    whose own members have all arrived, appended by each call (set ``out_n`` to 0 to start the lists anew;
    each message and instance comes once, so they never overflow)."""
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
                        finish_collective(g, c_type[g], c_off, c_rows, c_root, c_at, c_leave, c_rmax, c_rroot,
                                          c_root_own[g])
                        for q in range(c_off[g], c_off[g + 1]):
                            ml = c_loc[q]
                            if ml != l and not inq[ml]:
                                queue[qn] = ml
                                qn += 1
                                inq[ml] = True
                        if c_pred.shape[0] and c_pred[g] >= 0:  # the sends other members reach right after it
                            ctr[QN] = qn
                            release_predicted(g, c_type, c_rmax, c_rroot, c_pred, pred, pred_at, pool, pool_ctr, sent,
                                              msg_wait, queue, inq, ctr)
                            qn = ctr[QN]
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
    queue_location(l, queue, inq, ctr)


@numba.njit(cache=True, nogil=True)
def release_predicted(g, c_type, c_rmax, c_rroot, c_pred, pred, pred_at, pool, pool_ctr, sent, msg_wait, queue, inq,
                      ctr):
    """Instance ``g`` has just ended: the send clocks predicted by other member shares that wait for it
    (``patterns.kernels.ideal_shares``) become the messages' clocks, their waiting receivers queued.  Each
    sender leaves as :func:`finish_collective` lets a member leave (the instance's type, latest arrival and
    root's, the same on every member share: ``c_rmax``/``c_rroot`` hold those over every member) and adds its
    computations one after the other, as its own walk adds them."""
    r = c_pred[g]
    while r >= 0:
        cl = leave_time(c_type[g], pred[r, PROOT] != 0, pred_at[r], c_rmax[g], c_rroot[g])
        for t in range(pred[r, PSTART], pred[r, PSTART] + pred[r, PN]):
            cl += pool[t]
        sent[r] = cl
        nxt = pred[r, PNEXT]
        pred[r, PG], pred[r, PNEXT] = -1, -1
        pool_ctr[WAITING] -= 1
        if msg_wait[r] >= 0:
            queue_location(msg_wait[r], queue, inq, ctr)
        r = nxt
    c_pred[g] = -1


@numba.njit(cache=True, nogil=True)
def finish_collective(g, typ, c_off, c_rows, c_root, c_at, c_leave, c_rmax, c_rroot, root_own):
    """Leave times of the members in this walk of a complete collective instance (``c_rmax[g]``: the latest
    arrival elsewhere; ``c_rroot[g]``: the root's there, used unless ``root_own``).  ``c_rmax[g]`` and
    ``c_rroot[g]`` become those over every member: what :func:`release_predicted` leaves with."""
    latest = c_rmax[g]
    root_t = c_rroot[g]
    for q in range(c_off[g], c_off[g + 1]):
        latest = max(latest, c_at[c_rows[q]])
        if c_root[c_rows[q]] and root_own:
            root_t = c_at[c_rows[q]]
    for q in range(c_off[g], c_off[g + 1]):
        c_leave[q] = leave_time(typ, c_root[c_rows[q]], c_at[c_rows[q]], latest, root_t)
    c_rmax[g], c_rroot[g] = latest, root_t


@numba.njit(cache=True, nogil=True)
def leave_time(typ, is_root, own, latest, root_t):
    """A member's leave time: arrived at ``own``, the instance's latest arrival and its root's."""
    if typ == COLL_ONE2N and not is_root and root_t > -np.inf:
        return max(own, root_t)
    if typ == COLL_N2ONE and not is_root:
        return own
    return max(own, latest)


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
