"""The per-location walk: one pass over a location's events that assigns
every ENTER a call-tree node and records every call instance.

The call tree is shared by all locations and grows while they are walked.
It is kept as a first-child / next-sibling linked structure in plain arrays
(node 0 is a virtual super-root whose children are the real roots), so a
child lookup is a short linear scan without any hashing.
"""

from __future__ import annotations

import numba
import numpy as np

# event codes, mirrored from tracefmt.layout.EventType (numba needs plain ints)
ENTER = 1
EXIT = 2
MPI_COLLEXIT = 8
OMP_COLLEXIT = 12
ROLE_OMP_PARALLEL = 30
NO_ID = 0xFFFFFFFF

# status codes returned by walk_events
OK = 0
ERR_EXIT_EMPTY_STACK = 1  # info: event index
ERR_EXIT_MISMATCH = 2  # info: event index
ERR_BAD_REGION = 3  # info: event index
ERR_UNKNOWN_TEAM = 4  # info: event index
UNCLOSED = 5  # info: number of calls left open at the end (closed at the last event time)


@numba.njit(cache=True, nogil=True)
def _grow_i4(a, n):
    out = np.full(max(2 * a.shape[0], n), -1, np.int32)
    out[: a.shape[0]] = a
    return out


@numba.njit(cache=True, nogil=True)
def _grow_f8(a, n):
    out = np.full(max(2 * a.shape[0], n), np.inf, np.float64)
    out[: a.shape[0]] = a
    return out


@numba.njit(cache=True, nogil=True)
def walk_events(
    etype, ea, ec, ed, time,  # the location's events (type, a, c, d, time)
    region_role,  # uint8 by region id
    parent, region, first_child, next_sibling, first_visit, n_nodes,  # shared tree state
    team_keys, team_nodes,  # sorted team ids of this process -> node at the team's FORK
):
    """Walk one location.

    Returns ``(status, info, parent, region, first_child, next_sibling,
    first_visit, n_nodes, call_node, call_enter, call_exit, call_parent,
    call_team, n_calls, ev_call)`` where the tree arrays may have been
    reallocated, ``call_*`` describe each call instance (an ENTER and its
    EXIT) in ENTER order and ``ev_call[i]`` is the innermost open call at
    event ``i`` (for an ENTER the call it opens, for an EXIT the call it
    closes; -1 outside any call).
    """
    n = etype.shape[0]
    n_regions = region_role.shape[0]
    ev_call = np.full(n, -1, np.int32)
    # at most one call per event; trimmed by the caller via n_calls
    cap = 16
    for i in range(n):
        if etype[i] == ENTER:
            cap += 1
    call_node = np.empty(cap, np.int32)
    call_enter = np.empty(cap, np.float64)
    call_exit = np.empty(cap, np.float64)
    call_parent = np.empty(cap, np.int32)
    call_team = np.empty(cap, np.int64)
    stack = np.empty(cap, np.int32)  # open call ids
    depth = 0
    n_calls = 0
    for i in range(n):
        t = etype[i]
        if t == ENTER:
            r = np.int64(ea[i])
            if r >= n_regions:
                return (ERR_BAD_REGION, i, parent, region, first_child, next_sibling, first_visit, n_nodes,
                        call_node, call_enter, call_exit, call_parent, call_team, n_calls, ev_call)
            team = np.int64(-1)
            if depth > 0:
                top = stack[depth - 1]
                pnode = call_node[top]
                team = call_team[top]
            else:
                pnode = 0
            if region_role[r] == ROLE_OMP_PARALLEL and ec[i] != NO_ID:
                team = np.int64(ec[i])
                if ed[i] != 0 and ed[i] != NO_ID:
                    # a worker: continue the master's call path at the team's fork
                    k = np.searchsorted(team_keys, team)
                    if k >= team_keys.shape[0] or team_keys[k] != team:
                        return (ERR_UNKNOWN_TEAM, i, parent, region, first_child, next_sibling, first_visit,
                                n_nodes, call_node, call_enter, call_exit, call_parent, call_team, n_calls, ev_call)
                    pnode = team_nodes[k]
            # find or create the child (pnode, r)
            child = first_child[pnode]
            last = -1
            while child >= 0 and region[child] != r:
                last = child
                child = next_sibling[child]
            if child < 0:
                if n_nodes >= parent.shape[0]:
                    parent = _grow_i4(parent, n_nodes + 1)
                    region = _grow_i4(region, n_nodes + 1)
                    first_child = _grow_i4(first_child, n_nodes + 1)
                    next_sibling = _grow_i4(next_sibling, n_nodes + 1)
                    first_visit = _grow_f8(first_visit, n_nodes + 1)
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
            c = n_calls
            n_calls += 1
            call_node[c] = child
            call_enter[c] = time[i]
            call_exit[c] = np.nan
            call_parent[c] = stack[depth - 1] if depth > 0 else -1
            call_team[c] = team
            stack[depth] = c
            depth += 1
            ev_call[i] = c
        elif t == EXIT or t == MPI_COLLEXIT or t == OMP_COLLEXIT:
            if depth == 0:
                return (ERR_EXIT_EMPTY_STACK, i, parent, region, first_child, next_sibling, first_visit, n_nodes,
                        call_node, call_enter, call_exit, call_parent, call_team, n_calls, ev_call)
            c = stack[depth - 1]
            if np.int64(region[call_node[c]]) != np.int64(ea[i]):
                return (ERR_EXIT_MISMATCH, i, parent, region, first_child, next_sibling, first_visit, n_nodes,
                        call_node, call_enter, call_exit, call_parent, call_team, n_calls, ev_call)
            depth -= 1
            call_exit[c] = time[i]
            ev_call[i] = c
        else:
            ev_call[i] = stack[depth - 1] if depth > 0 else -1
    status = OK
    info = 0
    if depth > 0:
        # a truncated location: close what is still open at its last timestamp
        status = UNCLOSED
        info = depth
        last_t = time[n - 1]
        for k in range(depth):
            call_exit[stack[k]] = last_t
    return (status, info, parent, region, first_child, next_sibling, first_visit, n_nodes,
            call_node, call_enter, call_exit, call_parent, call_team, n_calls, ev_call)


@numba.njit(cache=True, nogil=True)
def pair_requests(req, is_open):
    """Pair each opening event with the next closing event of the same id.

    ``req`` and ``is_open`` list the events in trace order.  Returns for each
    position the position of its partner (open -> close, close -> open) or
    -1.  A request id may be reused once its request is closed.
    """
    n = req.shape[0]
    partner = np.full(n, -1, np.int64)
    order = np.argsort(req, kind="mergesort")  # stable: trace order within an id
    for j in range(n - 1):
        p = order[j]
        q = order[j + 1]
        if is_open[p] and not is_open[q] and req[p] == req[q]:
            partner[p] = q
            partner[q] = p
    return partner


@numba.njit(cache=True, nogil=True)
def pair_locks(lock, is_acquire):
    """Pair each lock acquisition with its release on the same location.

    Releases close the most recent open acquisition of the same lock (a
    stack per lock, so nested locks pair inside-out).  Returns the partner
    position of every event, or -1.
    """
    n = lock.shape[0]
    partner = np.full(n, -1, np.int64)
    order = np.argsort(lock, kind="mergesort")
    stack = np.empty(n, np.int64)
    depth = 0
    prev = -1
    for j in range(n):
        p = order[j]
        if lock[p] != prev:
            depth = 0
            prev = lock[p]
        if is_acquire[p]:
            stack[depth] = p
            depth += 1
        elif depth > 0:
            depth -= 1
            partner[p] = stack[depth]
            partner[stack[depth]] = p
    return partner
