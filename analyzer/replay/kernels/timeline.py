"""One location's time line cut at its synchronisation points: the input of the backward replay.

``cut_timeline`` walks a location's events once more (after ``location.replay_location``, whose
call nodes it reuses) and does two things at once:

* it numbers the *cut points* in event order (1, 2, ...): every event that can become a
  synchronisation point of the critical-path and delay analysis (``patterns.backward``): each
  MPI_SEND, MPI_SEND_COMPLETE, MPI_RECV_REQUEST, MPI_RECV and MPI_COLLEXIT, the first EXIT of
  MPI_Init(_thread) and of MPI_Finalize, the ENTER of a parallel region that belongs to a team
  (its fork on this thread), the EXIT of an OpenMP barrier inside a team, and OMP_JOIN;
* it sums the exclusive time of every call path between consecutive cut points: interval ``j``
  holds the time from cut ``j - 1`` to cut ``j`` (interval 1 starts at the first event,
  interval ``n + 1`` ends at the last one).

Time is charged the way Scalasca's time maps are (``TmapCacheHandler``): at an ENTER the time
since the previous ENTER/EXIT goes to the caller (nothing outside every call), at an EXIT to the
call being left, and at OMP_JOIN the time up to the join goes to the call the master is in.  A
cut at an ENTER or EXIT is placed *before* that event is charged, so the call that holds an MPI
event (or a barrier's EXIT) lies after its cut.  On worker threads (``is_worker``) the time
outside parallel regions is dropped: the interval that ends at a fork, and the last one, are
not emitted.  Fork and join spans are moved onto the parallel region later
(``analyzer.replay.timeline``), where the team's fork and join times are known.

Slow reference: ``tests/analyzer/timeline_reference.py``.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt import layout
from tracefmt.layout import EventType, Role

from . import idtable

ENTER = int(EventType.ENTER)
EXIT = int(EventType.EXIT)
MPI_SEND = int(EventType.MPI_SEND)
MPI_RECV = int(EventType.MPI_RECV)
MPI_SEND_COMPLETE = int(EventType.MPI_SEND_COMPLETE)
MPI_RECV_REQUEST = int(EventType.MPI_RECV_REQUEST)
MPI_COLLEXIT = int(EventType.MPI_COLLEXIT)
OMP_COLLEXIT = int(EventType.OMP_COLLEXIT)
OMP_JOIN = int(EventType.OMP_JOIN)
ROLE_PARALLEL = int(Role.OMP_PARALLEL)
ROLE_BARRIER = int(Role.OMP_BARRIER)
ROLE_IBARRIER = int(Role.OMP_IMPLICIT_BARRIER)
NO_ID = int(layout.NO_ID)

#: kinds of cut points (the ``kind`` column of the ``sync_points`` table, ``patterns.tables.CUT_KINDS``)
SEND, SEND_COMPLETE, RECV, RECV_REQUEST, COLLECTIVE, INIT, FINALIZE, FORK, OMP_BARRIER, JOIN = range(1, 11)

#: region flags (``region_flags`` argument): MPI_Init / MPI_Init_thread, MPI_Finalize
FLAG_INIT, FLAG_FINALIZE = 1, 2


@numba.njit(cache=True, nogil=True)
def _flush(acc, touched, n_touched, interval, e_int, e_node, e_time, k):
    """Append the accumulated times as entries of ``interval``; reset the accumulator."""
    for j in range(n_touched):
        node = touched[j]
        e_int[k] = interval
        e_node[k] = node
        e_time[k] = acc[node]
        acc[node] = 0.0
        k += 1
    return k


@numba.njit(cache=True, nogil=True)
def _drop(acc, touched, n_touched):
    for j in range(n_touched):
        acc[touched[j]] = 0.0


@numba.njit(cache=True, nogil=True)
def cut_timeline(etype, time, ea, ec, ee, call_node, region_role, region_flags, is_worker, acc, seen):
    """Cut points and per-interval exclusive times of one location (see the module docstring).

    ``etype``, ``time``, ``ea`` (region of ENTER/EXIT), ``ec`` (team id of a parallel ENTER), ``ee``
    (request id of the MPI events): the location's event columns; ``call_node``: builder node of every ENTER, in ENTER order (the
    replay's ``Calls.node``); ``region_role`` (uint8) and ``region_flags`` (uint8, FLAG_*) by
    region id; ``acc`` (float64) and ``seen`` (int8): zeroed scratch arrays at least as long as the
    call tree, left zeroed.

    Returns ``(cut_kind, cut_event, cut_time, cut_aux, cut_call, e_interval, e_node, e_time,
    send_cuts, recv_cuts)``: per cut point (in order; its number is its index + 1) its kind, event
    index, time, ``aux`` (for FORK: the interval holding the EXIT of that parallel region, -1 if it
    never ends; -1 otherwise) and call (the call the event belongs to: the one entered or left, or
    the innermost open one; -1 outside every call); the entries (interval, node, seconds) in interval order; per
    MPI_SEND, in event order, ``[event index, own cut, cut of its completion]`` (a blocking send
    completes at its own cut, an unfinished one at -1); per MPI_RECV, in event order,
    ``[own cut, cut of its posting]`` (its MPI_RECV_REQUEST's, or its own for a blocking receive).
    """
    n = etype.shape[0]
    n_cut = 0
    n_send = 0
    n_recv = 0
    n_post = 0
    for i in range(n):
        t = etype[i]
        if t == MPI_SEND:
            n_send += 1
        elif t == MPI_RECV:
            n_recv += 1
        elif t == MPI_RECV_REQUEST:
            n_post += 1
    cap = n + 1  # at most one cut per event
    cut_kind = np.empty(cap, np.int8)
    cut_event = np.empty(cap, np.int64)
    cut_time = np.empty(cap, np.float64)
    cut_aux = np.empty(cap, np.int64)
    cut_call = np.empty(cap, np.int64)
    e_int = np.empty(2 * n + 2, np.int64)
    e_node = np.empty(2 * n + 2, np.int32)
    e_time = np.empty(2 * n + 2, np.float64)
    send_cuts = np.full((n_send, 3), -1, np.int64)
    recv_cuts = np.full((n_recv, 2), -1, np.int64)
    sreq_keys, sreq_vals, sreq_state = idtable.new_table(n_send)
    rreq_keys, rreq_vals, rreq_state = idtable.new_table(n_post)
    touched = np.empty(call_node.shape[0] + 1, np.int32)
    n_touched = 0
    stack = np.empty(call_node.shape[0] + 1, np.int32)  # call index per open level
    team_level = np.empty(call_node.shape[0] + 1, np.int64)  # open parallel regions with a team, by level
    fork_of_level = np.empty(call_node.shape[0] + 1, np.int64)  # the cut of that region's fork
    depth = 0
    n_team = 0
    k_call = 0
    k_ent = 0
    ks = 0
    kr = 0
    last = 0.0
    init_done = False
    fini_done = False
    for i in range(n):
        t = etype[i]
        now = time[i]
        if t == ENTER:
            c = k_call
            k_call += 1
            if depth > 0:
                node = call_node[stack[depth - 1]]
                if seen[node] == 0:
                    seen[node] = 1
                    touched[n_touched] = node
                    n_touched += 1
                acc[node] += now - last
            last = now
            r = np.int64(ea[i])
            team_level[depth] = 0
            if r < region_role.shape[0] and region_role[r] == ROLE_PARALLEL and ec[i] != NO_ID:
                if is_worker:
                    _drop(acc, touched, n_touched)
                    for j in range(n_touched):
                        seen[touched[j]] = 0
                    n_touched = 0
                else:
                    k_ent = _flush(acc, touched, n_touched, n_cut + 1, e_int, e_node, e_time, k_ent)
                    for j in range(n_touched):
                        seen[touched[j]] = 0
                    n_touched = 0
                cut_kind[n_cut] = FORK
                cut_event[n_cut] = i
                cut_time[n_cut] = now
                cut_aux[n_cut] = -1
                cut_call[n_cut] = c
                n_cut += 1
                team_level[depth] = 1
                fork_of_level[depth] = n_cut - 1
                n_team += 1
            stack[depth] = c
            depth += 1
            continue
        if t == EXIT or t == MPI_COLLEXIT or t == OMP_COLLEXIT:
            if depth == 0:
                continue
            r = np.int64(ea[i])
            kind = 0
            if r < region_role.shape[0]:
                role = region_role[r]
                if t == MPI_COLLEXIT:
                    kind = COLLECTIVE
                elif region_flags[r] == FLAG_INIT and not init_done:
                    kind = INIT
                    init_done = True
                elif region_flags[r] == FLAG_FINALIZE and not fini_done:
                    kind = FINALIZE
                    fini_done = True
                elif (role == ROLE_BARRIER or role == ROLE_IBARRIER) and n_team > 0:
                    kind = OMP_BARRIER
            if kind != 0:
                k_ent = _flush(acc, touched, n_touched, n_cut + 1, e_int, e_node, e_time, k_ent)
                for j in range(n_touched):
                    seen[touched[j]] = 0
                n_touched = 0
                cut_kind[n_cut] = kind
                cut_event[n_cut] = i
                cut_time[n_cut] = now
                cut_aux[n_cut] = -1
                cut_call[n_cut] = stack[depth - 1]
                n_cut += 1
            depth -= 1
            node = call_node[stack[depth]]
            if seen[node] == 0:
                seen[node] = 1
                touched[n_touched] = node
                n_touched += 1
            acc[node] += now - last
            last = now
            if team_level[depth] == 1:
                n_team -= 1
                cut_aux[fork_of_level[depth]] = n_cut + 1  # the interval this EXIT is charged to
            continue
        kind = 0
        if t == MPI_SEND:
            kind = SEND
        elif t == MPI_SEND_COMPLETE:
            kind = SEND_COMPLETE
        elif t == MPI_RECV:
            kind = RECV
        elif t == MPI_RECV_REQUEST:
            kind = RECV_REQUEST
        elif t == OMP_JOIN:
            kind = JOIN
            if depth > 0:
                node = call_node[stack[depth - 1]]
                if seen[node] == 0:
                    seen[node] = 1
                    touched[n_touched] = node
                    n_touched += 1
                acc[node] += now - last
            last = now
        if kind == 0:
            continue
        k_ent = _flush(acc, touched, n_touched, n_cut + 1, e_int, e_node, e_time, k_ent)
        for j in range(n_touched):
            seen[touched[j]] = 0
        n_touched = 0
        cut_kind[n_cut] = kind
        cut_event[n_cut] = i
        cut_time[n_cut] = now
        cut_aux[n_cut] = -1
        cut_call[n_cut] = stack[depth - 1] if depth > 0 else -1
        n_cut += 1
        if kind == SEND:
            send_cuts[ks, 0] = i
            send_cuts[ks, 1] = n_cut
            if ee[i] != 0:  # completed by a later MPI_SEND_COMPLETE with the same request
                idtable.put(sreq_keys, sreq_vals, sreq_state, ee[i], ks)
            else:
                send_cuts[ks, 2] = n_cut
            ks += 1
        elif kind == SEND_COMPLETE:
            row = idtable.take(sreq_keys, sreq_vals, sreq_state, ee[i])
            if row >= 0:
                send_cuts[row, 2] = n_cut
        elif kind == RECV_REQUEST:
            idtable.put(rreq_keys, rreq_vals, rreq_state, ee[i], n_cut)
        elif kind == RECV:
            recv_cuts[kr, 0] = n_cut
            post = idtable.take(rreq_keys, rreq_vals, rreq_state, ee[i]) if ee[i] != 0 else -1
            recv_cuts[kr, 1] = post if post >= 0 else n_cut
            kr += 1
    if is_worker:
        _drop(acc, touched, n_touched)
    else:
        k_ent = _flush(acc, touched, n_touched, n_cut + 1, e_int, e_node, e_time, k_ent)
    for j in range(n_touched):
        seen[touched[j]] = 0
    return (cut_kind[:n_cut].copy(), cut_event[:n_cut].copy(), cut_time[:n_cut].copy(), cut_aux[:n_cut].copy(),
            cut_call[:n_cut].copy(), e_int[:k_ent].copy(), e_node[:k_ent].copy(), e_time[:k_ent].copy(), send_cuts, recv_cuts)
