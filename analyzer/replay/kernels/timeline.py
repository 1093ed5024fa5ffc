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
not emitted.  Fork and join spans move onto the parallel region as in Scalasca: ENTER(parallel) - FORK
is charged to the parallel region after its fork cut on every team member (on the master it is taken
from the caller before the cut; a worker takes the fork time of its team from ``fork_team`` /
``fork_time``), and JOIN - EXIT(parallel) to the parallel region instead of the caller on the master.

Slow reference: ``tests/analyzer/timeline_reference.py``.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

from tracefmt import layout
from tracefmt.layout import Role

from . import idtable

from tracefmt.event_codes import (  # noqa: F401  (constants the kernels below read)
    ENTER,
    EXIT,
    MPI_COLLEXIT,
    MPI_RECV,
    MPI_RECV_REQUEST,
    MPI_SEND,
    MPI_SEND_COMPLETE,
    OMP_COLLEXIT,
    OMP_FORK,
    OMP_JOIN,
)
ROLE_PARALLEL = int(Role.OMP_PARALLEL)
ROLE_BARRIER = int(Role.OMP_BARRIER)
ROLE_IBARRIER = int(Role.OMP_IMPLICIT_BARRIER)
NO_ID = int(layout.NO_ID)

#: kinds of cut points (the ``kind`` column of the ``sync_points`` table, ``patterns.tables.CUT_KINDS``)
SEND, SEND_COMPLETE, RECV, RECV_REQUEST, COLLECTIVE, INIT, FINALIZE, FORK, OMP_BARRIER, JOIN = range(1, 11)

#: region flags (``region_flags`` argument): MPI_Init / MPI_Init_thread, MPI_Finalize
FLAG_INIT, FLAG_FINALIZE = 1, 2


@numba.njit(cache=True, nogil=True, inline="always")
def _charge(acc, seen, touched, n_touched, node, x):
    if seen[node] == 0:
        seen[node] = 1
        touched[n_touched] = node
        n_touched += 1
    acc[node] += x
    return n_touched


@numba.njit(cache=True, nogil=True, inline="always")
def _flush(acc, seen, touched, n_touched, interval, e_int, e_node, e_time, k, keep):
    """Append the accumulated times as entries of ``interval`` (unless ``keep`` is False; none of zero seconds:
    a time map holds what was spent); reset."""
    for j in range(n_touched):
        node = touched[j]
        if keep and acc[node] != 0.0:
            e_int[k] = interval
            e_node[k] = node
            e_time[k] = acc[node]
            k += 1
        acc[node] = 0.0
        seen[node] = 0
    return k


@numba.njit(cache=True, nogil=True)
def cut_timeline(etype, time, ea, ec, ed, ee, call_node, call_enter, region_role, region_flags, is_worker, fork_team, fork_time,
                 acc, seen, loc, cuts, c0, entries, e0):
    """Cut points and per-interval exclusive times of one location (see the module docstring), written into the
    share's columns ``cuts`` from row ``c0`` and ``entries`` from row ``e0``.

    ``etype``, ``time``, ``ea`` (region of ENTER/EXIT, team of OMP_FORK/JOIN), ``ec``/``ed`` (team and
    thread number of a parallel ENTER), ``ee`` (request id of the MPI events): the location's event
    columns; ``call_node`` and ``call_enter``: builder node and time of every ENTER, in ENTER order (the
    replay's ``Calls``);
    ``region_role`` (uint8) and ``region_flags`` (uint8, FLAG_*) by region id; ``fork_team`` (sorted)
    and ``fork_time``: the forks of the process's masters walked so far; ``acc`` (float64) and
    ``seen`` (int8): zeroed scratch arrays at least as long as the call tree, left zeroed; ``loc``: the
    location's id.  ``cuts``: the columns (location int32, cut number, kind int8, event index, time,
    call node int32, call ENTER time) with room for ``len(etype)`` rows from ``c0``; ``entries``: (location int32,
    interval, node int32, seconds) with room for ``3 * len(etype) + 16`` rows from ``e0`` (every charge adds at
    most one entry, a JOIN three); the cut number, event index and interval columns int32 where they fit (the
    caller chooses the type of the tables' ``cut`` columns).  Written straight into the columns the tables are made
    of: per-location arrays copied out and joined afterwards were twice that memory, faulted in afresh.

    Returns ``(n_cuts, n_entries, send_cuts, recv_cuts, in_order, fork_teams, fork_times)``: per cut point (in
    order; its number is its index + 1) its kind, event index, time and call (the one entered or left, else the
    innermost open one) as its node and ENTER time (-1 and NaN outside every call); the entries (interval, node,
    seconds), in interval order unless ``in_order`` is False (a join shift into an interval closed before its
    JOIN); per MPI_SEND, in event order, ``[event index, own cut, cut of its completion]`` (a blocking send
    completes at its own cut, an unfinished one at -1); per MPI_RECV, in event order, ``[own cut, cut of its
    posting]``; the team and time of every OMP_FORK, in event order (for the workers walked later).
    """
    n = etype.shape[0]
    n_send = 0
    n_recv = 0
    n_post = 0
    n_fork = 0
    for i in range(n):  # the sizes of the per-kind tables (each event is at most one cut point: n bounds those)
        t = etype[i]
        if t == MPI_SEND:
            n_send += 1
        elif t == MPI_RECV:
            n_recv += 1
        elif t == MPI_RECV_REQUEST:
            n_post += 1
        elif t == OMP_FORK:
            n_fork += 1
    c_loc, c_cut, cut_kind, cut_event, cut_time, cut_node, cut_enter = cuts
    e_loc, e_int, e_node, e_time = entries
    n_entries = 3 * n + 16
    room_cuts = min(c_loc.shape[0], c_cut.shape[0], cut_kind.shape[0], cut_event.shape[0], cut_time.shape[0],
                    cut_node.shape[0], cut_enter.shape[0]) - c0
    room_entries = min(e_loc.shape[0], e_int.shape[0], e_node.shape[0], e_time.shape[0]) - e0
    if room_cuts < n or room_entries < n_entries:
        raise ValueError("cut_timeline: too little room in the columns")
    # this location's rows (views: the loop below indexes from 0)
    cut_kind, cut_event, cut_time = cut_kind[c0:], cut_event[c0:], cut_time[c0:]
    cut_node, cut_enter = cut_node[c0:], cut_enter[c0:]
    e_int, e_node, e_time = e_int[e0:], e_node[e0:], e_time[e0:]
    send_cuts = np.full((n_send, 3), -1, np.int64)
    recv_cuts = np.full((n_recv, 2), -1, np.int64)
    own_team = np.empty(n_fork, np.int64)  # this location's own forks (a master's)
    own_time = np.empty(n_fork, np.float64)
    m = call_node.shape[0] + 1
    n_cut, k, in_order, n_own = _cut(
        etype, time, ea, ec, ed, ee, call_node, call_enter, region_role, region_flags, is_worker, fork_team,
        fork_time, acc, seen, cut_kind, cut_event, cut_time, cut_node, cut_enter, e_int, e_node, e_time,
        send_cuts, recv_cuts, idtable.new_table(n_send), idtable.new_table(n_post), own_team, own_time,
        np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.int64), np.empty(m, np.int64))
    for j in range(n_cut):
        c_loc[c0 + j] = loc
        c_cut[c0 + j] = j + 1
    for j in range(k):
        e_loc[e0 + j] = loc
    return n_cut, k, send_cuts, recv_cuts, in_order, own_team[:n_own], own_time[:n_own]


@numba.njit(cache=True, nogil=True, _nrt=False)
def _cut(etype, time, ea, ec, ed, ee, call_node, call_enter, region_role, region_flags, is_worker, fork_team, fork_time,
         acc, seen, cut_kind, cut_event, cut_time, cut_node, cut_enter, e_int, e_node, e_time, send_cuts, recv_cuts,
         sreq, rreq, own_team, own_time, touched, stack, team_level, level_team):
    """The walk of :func:`cut_timeline` over what it allocated (``stack``: call index per open level, ``team_level``:
    1 where the open call is a parallel region of a team, set at each ENTER; ``sreq`` / ``rreq``: request tables).
    Without numba's runtime: it allocates nothing, and with it every inlined helper's array arguments cost two
    atomic reference-count updates per cut point.  Returns (cut points, entries, in order, own forks)."""
    n = etype.shape[0]
    sreq_keys, sreq_vals, sreq_state = sreq
    rreq_keys, rreq_vals, rreq_state = rreq
    n_own = 0
    nt = 0
    depth = 0
    n_team = 0
    n_cut = 0
    k_call = 0
    k = 0
    ks = 0
    kr = 0
    last = 0.0
    init_done = False
    fini_done = False
    in_order = True
    # the last parallel region left on this thread: team, node, caller node, time, interval
    px_team = np.int64(-1)
    px_node = -1
    px_caller = -1
    px_time = 0.0
    px_interval = -1
    for i in range(n):
        t = etype[i]
        now = time[i]
        kind = 0
        call = stack[depth - 1] if depth > 0 else -1
        if t == ENTER:
            c = k_call
            k_call += 1
            if depth > 0:
                node = call_node[stack[depth - 1]]
                if seen[node] == 0:
                    seen[node] = 1
                    touched[nt] = node
                    nt += 1
                acc[node] += now - last
            last = now
            r = np.int64(ea[i])
            team_level[depth] = 0
            if r < region_role.shape[0] and region_role[r] == ROLE_PARALLEL and ec[i] != NO_ID:
                team = np.int64(ec[i])
                tnum = np.int64(ed[i])
                fork = np.nan
                if tnum != 0 and tnum != NO_ID:  # a worker: its master's fork of the team
                    x = np.searchsorted(fork_team, team)
                    if x < fork_team.shape[0] and fork_team[x] == team:
                        fork = fork_time[x]
                else:
                    for x in range(n_own - 1, -1, -1):
                        if own_team[x] == team:
                            fork = own_time[x]
                            break
                span = now - fork if now - fork > 0 else 0.0  # NaN (no fork) compares False: 0
                if not is_worker and depth > 0:
                    nt = _charge(acc, seen, touched, nt, call_node[stack[depth - 1]], -span)
                k = _flush(acc, seen, touched, nt, n_cut + 1, e_int, e_node, e_time, k, not is_worker)
                nt = 0
                cut_kind[n_cut] = FORK
                cut_event[n_cut] = i
                cut_time[n_cut] = now
                cut_node[n_cut] = call_node[c]
                cut_enter[n_cut] = call_enter[c]
                n_cut += 1
                nt = _charge(acc, seen, touched, nt, call_node[c], span)
                team_level[depth] = 1
                level_team[depth] = team
                n_team += 1
            stack[depth] = c
            depth += 1
            continue
        if t == EXIT or t == MPI_COLLEXIT or t == OMP_COLLEXIT:
            if depth == 0:
                continue
            r = np.int64(ea[i])
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
                k = _flush(acc, seen, touched, nt, n_cut + 1, e_int, e_node, e_time, k, True)
                nt = 0
                cut_kind[n_cut] = kind
                cut_event[n_cut] = i
                cut_time[n_cut] = now
                cut_node[n_cut] = call_node[call] if call >= 0 else -1
                cut_enter[n_cut] = call_enter[call] if call >= 0 else np.nan
                n_cut += 1
            depth -= 1
            node = call_node[stack[depth]]
            if seen[node] == 0:
                seen[node] = 1
                touched[nt] = node
                nt += 1
            acc[node] += now - last
            last = now
            if team_level[depth] == 1:
                n_team -= 1
                px_team = level_team[depth]
                px_node = node
                px_caller = call_node[stack[depth - 1]] if depth > 0 else -1
                px_time = now
                px_interval = n_cut + 1
            continue
        if t == MPI_SEND:
            kind = SEND
        elif t == MPI_SEND_COMPLETE:
            kind = SEND_COMPLETE
        elif t == MPI_RECV:
            kind = RECV
        elif t == MPI_RECV_REQUEST:
            kind = RECV_REQUEST
        elif t == OMP_FORK:
            own_team[n_own] = np.int64(ea[i])
            own_time[n_own] = now
            n_own += 1
        elif t == OMP_JOIN:
            kind = JOIN
            if depth > 0:
                nt = _charge(acc, seen, touched, nt, call_node[stack[depth - 1]], now - last)
            last = now
            if not is_worker and px_team == np.int64(ea[i]) and px_node >= 0:
                span = now - px_time if now - px_time > 0 else 0.0
                if px_interval == n_cut + 1:  # still open: move the span within it
                    nt = _charge(acc, seen, touched, nt, px_node, span)
                    if px_caller >= 0:
                        nt = _charge(acc, seen, touched, nt, px_caller, -span)
                elif span > 0:  # the parallel region's interval is closed already: late entries
                    e_int[k], e_node[k], e_time[k] = px_interval, px_node, span
                    k += 1
                    if px_caller >= 0:
                        e_int[k], e_node[k], e_time[k] = px_interval, px_caller, -span
                        k += 1
                    in_order = False
                px_node = -1
        if kind == 0:
            continue
        k = _flush(acc, seen, touched, nt, n_cut + 1, e_int, e_node, e_time, k, True)
        nt = 0
        cut_kind[n_cut] = kind
        cut_event[n_cut] = i
        cut_time[n_cut] = now
        cut_node[n_cut] = call_node[call] if call >= 0 else -1
        cut_enter[n_cut] = call_enter[call] if call >= 0 else np.nan
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
    k = _flush(acc, seen, touched, nt, n_cut + 1, e_int, e_node, e_time, k, not is_worker)
    return n_cut, k, in_order, n_own


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
