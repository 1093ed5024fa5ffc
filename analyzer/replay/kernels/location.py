"""The fused per-location pass: walk the calls and cut out the table rows at once.

``replay_location`` reads one location's events exactly once.  It assigns
every ENTER a node of the shared call tree (first-child / next-sibling
arrays, node 0 a virtual super-root, as in ``walk.py``), records every call
instance, and writes the location's rows of every compound-event table into
preallocated typed arrays: sends (with the call that completed a
non-blocking send), receives (with the call that posted them), collective
exits, forks, joins, team members, barriers and lock acquisitions.  Request
and lock pairing happens during the same pass.

Rows come back as one int64 matrix and one float64 matrix per kind
(``[column, row]``, so every column is a contiguous row of the matrix); the
column names are the tuples below, in matrix order.  ``analyzer.replay``
turns them into named fragments.  Slow reference: the per-location part of
``analyzer.reference.location_rows_reference``.

OpenMP teams are referred to by *team references*: ``(location << 32) | k``
for the k-th fork on that location.  They do not depend on how the
locations are split between workers, and ``analyzer.matching.build_omp``
turns them into dense team ids without searching.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt import layout
from tracefmt.layout import EventType, Role

from . import idtable


# event codes and roles as plain ints (numba treats module-level ints as compile-time constants)
ENTER = int(EventType.ENTER)
EXIT = int(EventType.EXIT)
MPI_SEND = int(EventType.MPI_SEND)
MPI_RECV = int(EventType.MPI_RECV)
MPI_SEND_COMPLETE = int(EventType.MPI_SEND_COMPLETE)
MPI_RECV_REQUEST = int(EventType.MPI_RECV_REQUEST)
MPI_REQUEST_CANCELLED = int(EventType.MPI_REQUEST_CANCELLED)
MPI_COLLEXIT = int(EventType.MPI_COLLEXIT)
OMP_FORK = int(EventType.OMP_FORK)
OMP_JOIN = int(EventType.OMP_JOIN)
OMP_COLLEXIT = int(EventType.OMP_COLLEXIT)
OMP_ACQUIRE_LOCK = int(EventType.OMP_ACQUIRE_LOCK)
OMP_RELEASE_LOCK = int(EventType.OMP_RELEASE_LOCK)
ROLE_OMP_PARALLEL = int(Role.OMP_PARALLEL)
ROLE_OMP_BARRIER = int(Role.OMP_BARRIER)
ROLE_OMP_IMPLICIT_BARRIER = int(Role.OMP_IMPLICIT_BARRIER)
NO_ID = int(layout.NO_ID)

# status codes (the first four as in walk.py, so error messages are shared)
OK = 0
ERR_EXIT_EMPTY_STACK = 1  # info: event index
ERR_EXIT_MISMATCH = 2  # info: event index
ERR_BAD_REGION = 3  # info: event index
ERR_UNKNOWN_TEAM = 4  # info: event index (not raised: DEFER comes first)
UNCLOSED = 5  # info: number of calls left open at the end (closed at the last event time)
DEFER = 6  # info: event index of a worker ENTER whose team is not forked yet; nothing was changed

# ---- row layouts: (int64 columns, float64 columns) per kind ----------------
# *_call columns are call indices on the location (-1: outside any call); the
# *_region / *_cnode / *_enter / *_exit columns are filled from them.
SEND_I = ("dest", "comm", "tag", "bytes", "send_request", "send_flags", "send_pos",
          "send_region", "send_cnode", "sendc_region", "sendc_cnode")
SEND_F = ("send_time", "send_enter", "send_exit", "sendc_enter", "sendc_exit")
RECV_I = ("source", "comm", "tag", "recv_bytes", "recv_request", "recv_flags", "recv_seq", "recv_call",
          "post_pos", "recv_region", "recv_cnode", "recvp_region", "recvp_cnode")
RECV_F = ("recv_time", "post_time", "recv_enter", "recv_exit", "recvp_enter", "recvp_exit")
COLL_I = ("comm", "root", "sent", "recvd", "pos", "region", "cnode")
COLL_F = ("enter", "exit")
FORK_I = ("team_id", "size", "fork_node", "parent_team_id", "parent_ref")
FORK_F = ("fork_time",)
JOIN_I = ("team_id", "team_ref")
JOIN_F = ("join_time",)
MEMBER_I = ("team_id", "team_ref", "thread_num", "region", "cnode")
MEMBER_F = ("enter", "exit")
BARRIER_I = ("team_id", "team_ref", "seq", "region", "cnode", "implicit", "call")
BARRIER_F = ("enter", "exit")
LOCK_I = ("lock", "order", "region", "cnode")
LOCK_F = ("acquire_time", "release_time", "call_enter", "call_exit")




def _call_cols(ints, floats, prefix, enter="enter", exit_="exit"):
    """Matrix rows of the region, cnode, enter and exit columns filled from one call index per row."""
    return (ints.index(prefix + "region"), ints.index(prefix + "cnode"), floats.index(prefix + enter),
            floats.index(prefix + exit_))


# compile-time constants for the kernel
_SEND_CALL = _call_cols(SEND_I, SEND_F, "send_")
_SENDC_CALL = _call_cols(SEND_I, SEND_F, "sendc_")
_RECV_CALL = _call_cols(RECV_I, RECV_F, "recv_")
_RECVP_CALL = _call_cols(RECV_I, RECV_F, "recvp_")
_COLL_CALL = _call_cols(COLL_I, COLL_F, "")
_MEMBER_CALL = _call_cols(MEMBER_I, MEMBER_F, "")
_BARRIER_CALL = _call_cols(BARRIER_I, BARRIER_F, "")
_LOCK_CALL = _call_cols(LOCK_I, LOCK_F, "", "call_enter", "call_exit")


@numba.njit(cache=True, nogil=True)
def _reserve_i4(a, n_used, cap):
    """``a`` with its first ``n_used`` entries in a new array of length ``cap`` (the rest untouched)."""
    out = np.empty(cap, np.int32)
    out[:n_used] = a[:n_used]
    return out


@numba.njit(cache=True, nogil=True)
def _reserve_f8(a, n_used, cap):
    out = np.empty(cap, np.float64)
    out[:n_used] = a[:n_used]
    return out


@numba.njit(cache=True, nogil=True)
def _first_rows(m, k):
    """The first ``k`` rows (columns of the matrix) of a ``[column, row]`` matrix, contiguous."""
    return m if k == m.shape[1] else m[:, :k].copy()


@numba.njit(cache=True, nogil=True)
def _find_team(team_keys, team_values, team):
    """Value stored for ``team`` in the sorted ``team_keys``, or -1."""
    k = np.searchsorted(team_keys, team)
    if k < team_keys.shape[0] and team_keys[k] == team:
        return team_values[k]
    return -1


@numba.njit(cache=True, nogil=True)
def _fill_call_cols(calls, node, enter, exit_, region, ints, floats, ci_region, ci_node, cf_enter, cf_exit):
    """Region / node / enter / exit columns of the rows from their call indices (``calls``, -1: none)."""
    for j in range(calls.shape[0]):
        c = calls[j]
        if c >= 0:
            ints[ci_region, j] = region[node[c]]
            ints[ci_node, j] = node[c]
            floats[cf_enter, j] = enter[c]
            floats[cf_exit, j] = exit_[c]
        else:
            ints[ci_region, j] = -1
            ints[ci_node, j] = -1
            floats[cf_enter, j] = np.nan
            floats[cf_exit, j] = np.nan


@numba.njit(cache=True, nogil=True)
def replay_location(
    etype, flags, ea, eb, ec, ed, ee, time,  # the location's events
    loc,  # its global location id
    region_role,  # uint8 by region id
    parent, region, first_child, next_sibling, first_visit, n_nodes,  # shared tree state
    team_keys, team_nodes, team_refs,  # sorted team ids forked so far in this process -> fork node, team ref
):
    """Walk one location and cut out its table rows (see the module docstring).

    Returns ``(status, info, tree, calls, rows)``: ``tree`` is ``(parent,
    region, first_child, next_sibling, first_visit, n_nodes)`` (arrays may
    have been reallocated); ``calls`` is ``(node, enter, exit, parent)`` per
    call instance in ENTER order; ``rows`` holds ``(ints, floats)`` for sends,
    receives, collectives, forks, joins, members, barriers, locks, in that
    order.  With status DEFER nothing else is meaningful and the tree is
    unchanged.
    """
    n = etype.shape[0]
    n_regions = region_role.shape[0]
    # ---- pass 1: sizes, and whether every worker's team is already known
    n_enter = n_send = n_recv = n_post = n_coll = n_fork = n_join = n_acq = n_member = n_barrier = 0
    for i in range(n):
        t = etype[i]
        if t == ENTER:
            n_enter += 1
            r = np.int64(ea[i])
            if r < n_regions:
                role = region_role[r]
                if role == ROLE_OMP_PARALLEL and ec[i] != NO_ID:
                    n_member += 1
                    if ed[i] != 0 and ed[i] != NO_ID and _find_team(team_keys, team_nodes, np.int64(ec[i])) < 0:
                        empty = (np.zeros((0, 0), np.int64), np.zeros((0, 0), np.float64))
                        return (DEFER, i, (parent, region, first_child, next_sibling, first_visit, n_nodes),
                                (np.zeros(0, np.int32), np.zeros(0), np.zeros(0), np.zeros(0, np.int32)),
                                (empty, empty, empty, empty, empty, empty, empty, empty))
                elif role == ROLE_OMP_BARRIER or role == ROLE_OMP_IMPLICIT_BARRIER:
                    n_barrier += 1
        elif t == MPI_SEND:
            n_send += 1
        elif t == MPI_RECV:
            n_recv += 1
        elif t == MPI_RECV_REQUEST:
            n_post += 1
        elif t == MPI_COLLEXIT:
            n_coll += 1
        elif t == OMP_FORK:
            n_fork += 1
        elif t == OMP_JOIN:
            n_join += 1
        elif t == OMP_ACQUIRE_LOCK:
            n_acq += 1

    # room for one new tree node per ENTER, reserved before the loop: reallocating inside it would make
    # numba reference-count the tree arrays on every event (the spare room is not touched, so costs no memory)
    if parent.shape[0] < n_nodes + n_enter:
        cap = n_nodes + n_enter
        parent = _reserve_i4(parent, n_nodes, cap)
        region = _reserve_i4(region, n_nodes, cap)
        first_child = _reserve_i4(first_child, n_nodes, cap)
        next_sibling = _reserve_i4(next_sibling, n_nodes, cap)
        first_visit = _reserve_f8(first_visit, n_nodes, cap)

    # ---- per-call state
    call_node = np.empty(n_enter, np.int32)
    call_enter = np.empty(n_enter, np.float64)
    call_exit = np.empty(n_enter, np.float64)
    call_parent = np.empty(n_enter, np.int32)
    # per open call, by stack level (only the levels reached are ever touched): the team of the
    # innermost parallel region (-1 outside), its reference, the level of that parallel region, and
    # at a parallel region's own level the barriers seen so far in its team
    stack = np.empty(n_enter + 1, np.int32)
    level_team = np.empty(n_enter + 1, np.int64)
    level_team_ref = np.empty(n_enter + 1, np.int64)
    level_team_level = np.empty(n_enter + 1, np.int64)
    level_barriers = np.empty(n_enter + 1, np.int64)
    depth = 0
    n_calls = 0

    # ---- rows, with the calls they refer to
    s_i = np.empty((len(SEND_I), n_send), np.int64)
    s_f = np.empty((len(SEND_F), n_send), np.float64)
    s_call = np.empty(n_send, np.int64)
    sc_call = np.empty(n_send, np.int64)
    s_keep = np.ones(n_send, np.bool_)
    r_i = np.empty((len(RECV_I), n_recv), np.int64)
    r_f = np.empty((len(RECV_F), n_recv), np.float64)
    r_call = np.empty(n_recv, np.int64)
    rp_call = np.empty(n_recv, np.int64)
    p_pos = np.empty(n_post, np.int64)  # posted receive requests: event, time, call
    p_time = np.empty(n_post, np.float64)
    p_call = np.empty(n_post, np.int64)
    c_i = np.empty((len(COLL_I), n_coll), np.int64)
    c_f = np.empty((len(COLL_F), n_coll), np.float64)
    c_call = np.empty(n_coll, np.int64)
    f_i = np.empty((len(FORK_I), n_fork), np.int64)
    f_f = np.empty((len(FORK_F), n_fork), np.float64)
    j_i = np.empty((len(JOIN_I), n_join), np.int64)
    j_f = np.empty((len(JOIN_F), n_join), np.float64)
    m_i = np.empty((len(MEMBER_I), n_member), np.int64)
    m_f = np.empty((len(MEMBER_F), n_member), np.float64)
    m_call = np.empty(n_member, np.int64)
    b_i = np.empty((len(BARRIER_I), n_barrier), np.int64)
    b_f = np.empty((len(BARRIER_F), n_barrier), np.float64)
    b_call = np.empty(n_barrier, np.int64)
    l_i = np.empty((len(LOCK_I), n_acq), np.int64)
    l_f = np.empty((len(LOCK_F), n_acq), np.float64)
    l_call = np.empty(n_acq, np.int64)
    held_row = np.empty(n_acq, np.int64)  # open acquisitions, innermost last
    n_held = 0
    # request id -> send row / posted request, while the request is open
    send_keys, send_rows, send_state = idtable.new_table(n_send)
    post_keys, post_rows, post_state = idtable.new_table(n_post)
    ks = kr = kp = kc = kf = kj = km = kb = kl = 0

    for i in range(n):
        t = etype[i]
        top = stack[depth - 1] if depth > 0 else -1
        if t == ENTER:
            r = np.int64(ea[i])
            if r >= n_regions:
                return (ERR_BAD_REGION, i, (parent, region, first_child, next_sibling, first_visit, n_nodes),
                        (call_node, call_enter, call_exit, call_parent),
                        ((s_i, s_f), (r_i, r_f), (c_i, c_f), (f_i, f_f), (j_i, j_f), (m_i, m_f), (b_i, b_f),
                         (l_i, l_f)))
            team = np.int64(-1)
            team_ref = np.int64(-1)
            team_level = np.int64(-1)
            pnode = 0
            if top >= 0:
                pnode = call_node[top]
                team = level_team[depth - 1]
                team_ref = level_team_ref[depth - 1]
                team_level = level_team_level[depth - 1]
            c = n_calls
            role = region_role[r]
            if role == ROLE_OMP_PARALLEL and ec[i] != NO_ID:
                team = np.int64(ec[i])
                team_level = depth
                level_barriers[depth] = 0
                tnum = np.int64(ed[i])
                if tnum != 0 and tnum != NO_ID:
                    # a worker: continue the master's call path at the team's fork
                    pnode = _find_team(team_keys, team_nodes, team)
                    team_ref = _find_team(team_keys, team_refs, team)
                else:
                    # the master: its own most recent fork of that team, else one from its process
                    team_ref = -1
                    for k in range(kf - 1, -1, -1):
                        if f_i[0, k] == team:
                            team_ref = (np.int64(loc) << 32) | k
                            break
                    if team_ref < 0:
                        team_ref = _find_team(team_keys, team_refs, team)
                    tnum = 0
                m_i[0, km] = team
                m_i[1, km] = team_ref
                m_i[2, km] = tnum
                m_call[km] = c
                km += 1
            elif (role == ROLE_OMP_BARRIER or role == ROLE_OMP_IMPLICIT_BARRIER) and team >= 0:
                b_i[0, kb] = team
                b_i[1, kb] = team_ref
                b_i[2, kb] = level_barriers[team_level]  # k-th barrier of this thread in the team
                level_barriers[team_level] += 1
                b_i[5, kb] = 1 if role == ROLE_OMP_IMPLICIT_BARRIER else 0
                b_i[6, kb] = c
                b_call[kb] = c
                kb += 1
            # find or create the child (pnode, r)
            child = first_child[pnode]
            last = -1
            while child >= 0 and region[child] != r:
                last = child
                child = next_sibling[child]
            if child < 0:
                child = n_nodes
                n_nodes += 1
                parent[child] = pnode
                region[child] = r
                first_child[child] = -1
                next_sibling[child] = -1
                first_visit[child] = time[i]
                if last < 0:
                    first_child[pnode] = child
                else:
                    next_sibling[last] = child
            elif time[i] < first_visit[child]:
                first_visit[child] = time[i]
            n_calls += 1
            call_node[c] = child
            call_enter[c] = time[i]
            call_exit[c] = np.nan
            call_parent[c] = top
            level_team[depth] = team
            level_team_ref[depth] = team_ref
            level_team_level[depth] = team_level
            stack[depth] = c
            depth += 1
        elif t == EXIT or t == MPI_COLLEXIT or t == OMP_COLLEXIT:
            if depth == 0 or np.int64(region[call_node[top]]) != np.int64(ea[i]):
                return (ERR_EXIT_EMPTY_STACK if depth == 0 else ERR_EXIT_MISMATCH, i,
                        (parent, region, first_child, next_sibling, first_visit, n_nodes),
                        (call_node, call_enter, call_exit, call_parent),
                        ((s_i, s_f), (r_i, r_f), (c_i, c_f), (f_i, f_f), (j_i, j_f), (m_i, m_f), (b_i, b_f),
                         (l_i, l_f)))
            depth -= 1
            call_exit[top] = time[i]
            if t == MPI_COLLEXIT:
                c_i[0, kc] = -1 if eb[i] == NO_ID else np.int64(eb[i])
                c_i[1, kc] = -1 if ec[i] == NO_ID else np.int64(ec[i])
                c_i[2, kc] = np.int64(ed[i])
                c_i[3, kc] = np.int64(ee[i])
                c_i[4, kc] = i
                c_call[kc] = top
                kc += 1
        elif t == MPI_SEND:
            req = ee[i]
            s_i[0, ks] = -1 if ea[i] == NO_ID else np.int64(ea[i])
            s_i[1, ks] = -1 if eb[i] == NO_ID else np.int64(eb[i])
            s_i[2, ks] = np.int64(ec[i])
            s_i[3, ks] = np.int64(ed[i])
            s_i[4, ks] = np.int64(req)
            s_i[5, ks] = flags[i]
            s_i[6, ks] = i
            s_f[0, ks] = time[i]
            s_call[ks] = top
            if req != 0:
                sc_call[ks] = -1  # until a completion is seen
                idtable.put(send_keys, send_rows, send_state, req, ks)
            else:
                sc_call[ks] = top  # a blocking send completes in its own call
            ks += 1
        elif t == MPI_SEND_COMPLETE or t == MPI_REQUEST_CANCELLED:
            row = idtable.take(send_keys, send_rows, send_state, ee[i])
            if row >= 0:
                sc_call[row] = top
                if t == MPI_REQUEST_CANCELLED:
                    s_keep[row] = False  # a cancelled send never happened
        elif t == MPI_RECV_REQUEST:
            p_pos[kp] = i
            p_time[kp] = time[i]
            p_call[kp] = top
            idtable.put(post_keys, post_rows, post_state, ee[i], kp)
            kp += 1
        elif t == MPI_RECV:
            req = ee[i]
            r_i[0, kr] = -1 if ea[i] == NO_ID else np.int64(ea[i])
            r_i[1, kr] = -1 if eb[i] == NO_ID else np.int64(eb[i])
            r_i[2, kr] = np.int64(ec[i])
            r_i[3, kr] = np.int64(ed[i])
            r_i[4, kr] = np.int64(req)
            r_i[5, kr] = flags[i]
            r_i[6, kr] = kr
            r_i[7, kr] = (np.int64(loc) << 32) | max(top, 0)
            r_f[0, kr] = time[i]
            r_call[kr] = top
            post = idtable.take(post_keys, post_rows, post_state, req) if req != 0 else -1
            if post >= 0:
                r_i[8, kr] = p_pos[post]
                r_f[1, kr] = p_time[post]
                rp_call[kr] = p_call[post]
            else:
                r_i[8, kr] = i
                r_f[1, kr] = time[i]
                rp_call[kr] = top
            kr += 1
        elif t == OMP_FORK:
            f_i[0, kf] = np.int64(ea[i])
            f_i[1, kf] = np.int64(ec[i])
            f_i[2, kf] = call_node[top] if top >= 0 else 0  # 0: the super-root, outside any call
            f_i[3, kf] = level_team[depth - 1] if depth > 0 else -1
            f_i[4, kf] = level_team_ref[depth - 1] if depth > 0 else -1
            f_f[0, kf] = time[i]
            kf += 1
        elif t == OMP_JOIN:
            team = np.int64(ea[i])
            j_i[0, kj] = team
            ref = np.int64(-1)
            for k in range(kf - 1, -1, -1):
                if f_i[0, k] == team:
                    ref = (np.int64(loc) << 32) | k
                    break
            if ref < 0:
                ref = _find_team(team_keys, team_refs, team)
            j_i[1, kj] = ref
            j_f[0, kj] = time[i]
            kj += 1
        elif t == OMP_ACQUIRE_LOCK:
            l_i[0, kl] = np.int64(np.int32(ea[i]))
            l_i[1, kl] = np.int64(ed[i])
            l_f[0, kl] = time[i]
            l_f[1, kl] = np.nan
            l_call[kl] = top
            held_row[n_held] = kl
            n_held += 1
            kl += 1
        elif t == OMP_RELEASE_LOCK:
            # releases the innermost open acquisition of the same lock
            lock = np.int64(np.int32(ea[i]))
            for h in range(n_held - 1, -1, -1):
                if l_i[0, held_row[h]] == lock:
                    l_f[1, held_row[h]] = time[i]
                    for g in range(h, n_held - 1):
                        held_row[g] = held_row[g + 1]
                    n_held -= 1
                    break

    status = OK
    info = 0
    if depth > 0:
        # a truncated location: close what is still open at its last timestamp
        status = UNCLOSED
        info = depth
        for k in range(depth):
            call_exit[stack[k]] = time[n - 1]

    # members and barriers were sized by an upper bound (team-less ones have no row)
    m_i, m_f, m_call = _first_rows(m_i, km), _first_rows(m_f, km), m_call[:km]
    b_i, b_f, b_call = _first_rows(b_i, kb), _first_rows(b_f, kb), b_call[:kb]

    # ---- call columns of the rows, now that every call has its exit
    cn, ce, cx = call_node, call_enter, call_exit
    _fill_call_cols(s_call, cn, ce, cx, region, s_i, s_f, *_SEND_CALL)
    _fill_call_cols(sc_call, cn, ce, cx, region, s_i, s_f, *_SENDC_CALL)
    _fill_call_cols(r_call, cn, ce, cx, region, r_i, r_f, *_RECV_CALL)
    _fill_call_cols(rp_call, cn, ce, cx, region, r_i, r_f, *_RECVP_CALL)
    _fill_call_cols(c_call, cn, ce, cx, region, c_i, c_f, *_COLL_CALL)
    _fill_call_cols(m_call, cn, ce, cx, region, m_i, m_f, *_MEMBER_CALL)
    _fill_call_cols(b_call, cn, ce, cx, region, b_i, b_f, *_BARRIER_CALL)
    _fill_call_cols(l_call, cn, ce, cx, region, l_i, l_f, *_LOCK_CALL)
    sends = (s_i, s_f)
    if ks and not s_keep.all():
        sends = (s_i[:, s_keep].copy(), s_f[:, s_keep].copy())
    # hand back the tree with modest spare room, not the reservation
    cap = max(256, 2 * n_nodes)
    if parent.shape[0] > 2 * cap:
        tree = (parent[:cap].copy(), region[:cap].copy(), first_child[:cap].copy(), next_sibling[:cap].copy(),
                first_visit[:cap].copy(), n_nodes)
    else:
        tree = (parent, region, first_child, next_sibling, first_visit, n_nodes)
    return (status, info, tree, (call_node, call_enter, call_exit, call_parent),
            (sends, (r_i, r_f), (c_i, c_f), (f_i, f_f), (j_i, j_f), (m_i, m_f), (b_i, b_f), (l_i, l_f)))
