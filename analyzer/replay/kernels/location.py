"""The fused per-location pass: walk the calls and cut out the table rows at once.

``replay_location`` reads one location's events exactly once.  It assigns
every ENTER a node of the shared call tree (first-child / next-sibling
arrays, node 0 a virtual super-root), records every call instance, and
writes the location's rows of every compound-event table into preallocated
typed arrays: sends (with the call that completed a non-blocking send),
receives (with the call that posted them), collective exits, forks, joins,
team members, barriers and lock acquisitions, OpenMP task creations and
execution fragments, thread (pthread) events.  Request and lock pairing
happens during the same pass.  Its inputs and result are the named bundles
of :mod:`.bundles`; problems are :mod:`tracefmt.nesting` codes.

Rows come back as one int64 matrix and one float64 matrix per kind
(``[column, row]``, so every column is a contiguous row of the matrix); the
column names are the tuples below, in matrix order, and ``SI.dest`` (and
so on for every kind) is the matrix row of a column.  ``analyzer.replay``
turns them into named fragments.  Slow reference:
``tests/analyzer/kernel_references.location_rows_reference``.

OpenMP teams are referred to by *team references*: ``(location << 32) | k``
for the k-th fork on that location.  They do not depend on how the
locations are split between workers, and ``analyzer.replay.matching.build_omp``
turns them into dense team ids without searching.

Task-aware call paths (format 2.1): a task fragment (ENTER of a region of
role OMP_TASK) is a call like any other on its location (its parent call is
the barrier, taskwait or task it runs in, so that call's exclusive time
excludes it), but its call-tree node is a child of the innermost parallel
region open on the location (outside every parallel region: of the
location's outermost call), so every instance of a task construct executed
by any thread of a team has the one call path ``.../!$omp parallel/!$omp
task``, whatever it ran inside.  A thread lifetime (THREAD_BEGIN ..
THREAD_END) continues its creator's call path: its top-level calls are
children of the call that holds the THREAD_CREATE of that thread, published
like a fork under the key ``THREAD_KEY | thread id`` (the location is
deferred until its creator has been walked).

Size: one fused kernel and its row layouts; every kind of row is cut out in the
same single pass over a location's events, which splitting would break.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

from tracefmt import layout
from tracefmt.layout import Role
from tracefmt.sorted_lookup import search
from tracefmt.nesting import DEFER, EXIT_EMPTY_STACK, EXIT_MISMATCH, OK, UNCLOSED, UNDEFINED_REGION

from . import idtable
from .bundles import Calls, LocationResult, RowMatrices, Rows, TreeState


# event codes and roles as plain ints (numba treats module-level ints as compile-time constants)
from tracefmt.event_codes import (  # noqa: F401  (constants the kernels below read)
    ENTER,
    EXIT,
    MPI_COLLEXIT,
    MPI_RECV,
    MPI_RECV_REQUEST,
    MPI_REQUEST_CANCELLED,
    MPI_SEND,
    MPI_SEND_COMPLETE,
    OMP_ACQUIRE_LOCK,
    OMP_COLLEXIT,
    OMP_FORK,
    OMP_JOIN,
    OMP_RELEASE_LOCK,
    OMP_TASK_BEGIN,
    OMP_TASK_CREATE,
    OMP_TASK_END,
    THREAD_BEGIN,
    THREAD_CREATE,
    THREAD_END,
    THREAD_JOIN,
)
ROLE_OMP_TASK = int(Role.OMP_TASK)
#: thread creations share the known-teams table with OpenMP teams under this bit (team ids are u32)
THREAD_KEY = np.int64(1) << 40
ROLE_OMP_PARALLEL = int(Role.OMP_PARALLEL)
ROLE_OMP_BARRIER = int(Role.OMP_BARRIER)
ROLE_OMP_IMPLICIT_BARRIER = int(Role.OMP_IMPLICIT_BARRIER)
NO_ID = int(layout.NO_ID)

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
# one row per task execution fragment: the task region's call, and the call it ran in (its host)
TASK_I = ("task", "begin_how", "end_how", "task_region", "region", "cnode", "host_region", "host_cnode", "call",
          "host_call", "outer_call")
TASK_F = ("enter", "exit", "host_enter", "host_exit")
# one row per OMP_TASK_CREATE, with the creating call
TCREATE_I = ("task", "parent", "task_region", "flags", "dependences", "region", "cnode")
TCREATE_F = ("time", "call_enter", "call_exit")
# one row per THREAD_* event (kind: its event type), with the call it lies in
THREAD_I = ("kind", "thread", "region", "cnode")
THREAD_F = ("time", "call_enter", "call_exit")


def column_index(kind: str, columns: tuple[str, ...]):
    """The matrix row of every column by name, as a constant numba folds: ``column_index("x", C).name``."""
    return namedtuple(kind, columns)(*range(len(columns)))


# matrix rows by column name (compile-time constants for the kernel)
SI, SF = column_index("SendInts", SEND_I), column_index("SendFloats", SEND_F)
RI, RF = column_index("RecvInts", RECV_I), column_index("RecvFloats", RECV_F)
CI, CF = column_index("CollInts", COLL_I), column_index("CollFloats", COLL_F)
FI, FF = column_index("ForkInts", FORK_I), column_index("ForkFloats", FORK_F)
JI, JF = column_index("JoinInts", JOIN_I), column_index("JoinFloats", JOIN_F)
MI, MF = column_index("MemberInts", MEMBER_I), column_index("MemberFloats", MEMBER_F)
BI, BF = column_index("BarrierInts", BARRIER_I), column_index("BarrierFloats", BARRIER_F)
LI, LF = column_index("LockInts", LOCK_I), column_index("LockFloats", LOCK_F)
TI, TF = column_index("TaskInts", TASK_I), column_index("TaskFloats", TASK_F)
CRI, CRF = column_index("TaskCreateInts", TCREATE_I), column_index("TaskCreateFloats", TCREATE_F)
HI, HF = column_index("ThreadInts", THREAD_I), column_index("ThreadFloats", THREAD_F)

# the (region, cnode, enter, exit) columns filled from one call index per row
_SEND_CALL = (SI.send_region, SI.send_cnode, SF.send_enter, SF.send_exit)
_SENDC_CALL = (SI.sendc_region, SI.sendc_cnode, SF.sendc_enter, SF.sendc_exit)
_RECV_CALL = (RI.recv_region, RI.recv_cnode, RF.recv_enter, RF.recv_exit)
_RECVP_CALL = (RI.recvp_region, RI.recvp_cnode, RF.recvp_enter, RF.recvp_exit)
_COLL_CALL = (CI.region, CI.cnode, CF.enter, CF.exit)
_MEMBER_CALL = (MI.region, MI.cnode, MF.enter, MF.exit)
_BARRIER_CALL = (BI.region, BI.cnode, BF.enter, BF.exit)
_LOCK_CALL = (LI.region, LI.cnode, LF.call_enter, LF.call_exit)
_TASK_CALL = (TI.region, TI.cnode, TF.enter, TF.exit)
_TASK_HOST = (TI.host_region, TI.host_cnode, TF.host_enter, TF.host_exit)
_TCREATE_CALL = (CRI.region, CRI.cnode, CRF.call_enter, CRF.call_exit)
_THREAD_CALL = (HI.region, HI.cnode, HF.call_enter, HF.call_exit)


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
def _no_rows():
    empty = RowMatrices(np.zeros((0, 0), np.int64), np.zeros((0, 0), np.float64))
    return Rows(empty, empty, empty, empty, empty, empty, empty, empty, empty, empty, empty)


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
def replay_location(events, loc, region_role, tree, teams):
    """Walk one location and cut out its table rows (see the module docstring).

    ``events``: its :class:`tracefmt.columns.EventColumns`; ``loc``: its global
    location id; ``region_role``: uint8 role by region id; ``tree``: the
    :class:`~.bundles.TreeState` grown so far; ``teams``: the
    :class:`~.bundles.KnownTeams` of its process.  Returns a
    :class:`~.bundles.LocationResult`, whose tree arrays may have been
    reallocated.
    """
    etype, flags, time = events.type, events.flags, events.time
    ea, eb, ec, ed, ee = events.a, events.b, events.c, events.d, events.e
    parent, region, first_child, next_sibling = tree.parent, tree.region, tree.first_child, tree.next_sibling
    first_visit, n_nodes = tree.first_visit, tree.n_nodes
    team_keys, team_nodes, team_refs = teams.team_id, teams.fork_node, teams.team_ref
    n = etype.shape[0]
    n_regions = region_role.shape[0]
    # ---- pass 1: sizes, and whether every worker's team is already known
    n_enter = n_send = n_recv = n_post = n_coll = n_fork = n_join = n_acq = n_member = n_barrier = 0
    n_task = n_tcreate = n_thread = 0
    for i in range(n):
        t = etype[i]
        if t == ENTER:
            n_enter += 1
            r = np.int64(ea[i])
            if r < n_regions:
                role = region_role[r]
                if role == ROLE_OMP_PARALLEL and ec[i] != NO_ID:
                    n_member += 1
                    if ed[i] != 0 and ed[i] != NO_ID and search(np.int64(ec[i]), team_keys, team_nodes) < 0:
                        no_calls = Calls(np.zeros(0, np.int32), np.zeros(0), np.zeros(0), np.zeros(0, np.int32))
                        return LocationResult(DEFER, i, -1, tree, no_calls, _no_rows())
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
        elif t == OMP_TASK_BEGIN:
            n_task += 1
        elif t == OMP_TASK_CREATE:
            n_tcreate += 1
        elif t == THREAD_CREATE or t == THREAD_BEGIN or t == THREAD_END or t == THREAD_JOIN:
            n_thread += 1
            if t == THREAD_BEGIN and search(THREAD_KEY | np.int64(ed[i]), team_keys, team_nodes) < 0:
                no_calls = Calls(np.zeros(0, np.int32), np.zeros(0), np.zeros(0), np.zeros(0, np.int32))
                return LocationResult(DEFER, i, -1, tree, no_calls, _no_rows())

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
    tk_i = np.empty((len(TASK_I), n_task), np.int64)
    tk_f = np.empty((len(TASK_F), n_task), np.float64)
    tk_call = np.empty(n_task, np.int64)
    tk_host = np.empty(n_task, np.int64)
    open_frag = np.empty(n_task, np.int64)  # open fragment rows, innermost last
    n_open_frag = 0
    cr_i = np.empty((len(TCREATE_I), n_tcreate), np.int64)
    cr_f = np.empty((len(TCREATE_F), n_tcreate), np.float64)
    cr_call = np.empty(n_tcreate, np.int64)
    th_i = np.empty((len(THREAD_I), n_thread), np.int64)
    th_f = np.empty((len(THREAD_F), n_thread), np.float64)
    th_call = np.empty(n_thread, np.int64)
    graft = np.int64(-1)  # inside a thread lifetime: the node its top-level calls continue, else -1
    kt = kcr = kth = 0
    # request id -> send row / posted request, while the request is open
    send_keys, send_rows, send_state = idtable.new_table(n_send)
    post_keys, post_rows, post_state = idtable.new_table(n_post)
    ks = kr = kp = kc = kf = kj = km = kb = kl = 0
    status = OK
    info = 0
    open_region = np.int64(-1)  # at an EXIT_MISMATCH

    for i in range(n):
        t = etype[i]
        top = stack[depth - 1] if depth > 0 else -1
        if t == ENTER:
            r = np.int64(ea[i])
            if r >= n_regions:
                status = UNDEFINED_REGION
                info = i
                break
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
            if depth == 0 and graft >= 0:
                pnode = graft  # a thread lifetime continues its creator's call path
            if role == ROLE_OMP_TASK and depth > 0:
                # a task fragment: under the innermost parallel region here (else the outermost call)
                pnode = call_node[stack[team_level]] if team_level >= 0 else call_node[stack[0]]
            if role == ROLE_OMP_PARALLEL and ec[i] != NO_ID:
                team = np.int64(ec[i])
                team_level = depth
                level_barriers[depth] = 0
                tnum = np.int64(ed[i])
                if tnum != 0 and tnum != NO_ID:
                    # a worker: continue the master's call path at the team's fork
                    pnode = search(team, team_keys, team_nodes)
                    team_ref = search(team, team_keys, team_refs)
                else:
                    # the master: its own most recent fork of that team, else one from its process
                    team_ref = -1
                    for k in range(kf - 1, -1, -1):
                        if f_i[FI.team_id, k] == team:
                            team_ref = (np.int64(loc) << 32) | k
                            break
                    if team_ref < 0:
                        team_ref = search(team, team_keys, team_refs)
                    tnum = 0
                m_i[MI.team_id, km] = team
                m_i[MI.team_ref, km] = team_ref
                m_i[MI.thread_num, km] = tnum
                m_call[km] = c
                km += 1
            elif (role == ROLE_OMP_BARRIER or role == ROLE_OMP_IMPLICIT_BARRIER) and team >= 0:
                b_i[BI.team_id, kb] = team
                b_i[BI.team_ref, kb] = team_ref
                b_i[BI.seq, kb] = level_barriers[team_level]  # k-th barrier of this thread in the team
                level_barriers[team_level] += 1
                b_i[BI.implicit, kb] = 1 if role == ROLE_OMP_IMPLICIT_BARRIER else 0
                b_i[BI.call, kb] = c
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
            if depth == 0:
                status = EXIT_EMPTY_STACK
                info = i
                break
            if np.int64(region[call_node[top]]) != np.int64(ea[i]):
                status = EXIT_MISMATCH
                info = i
                open_region = np.int64(region[call_node[top]])
                break
            depth -= 1
            call_exit[top] = time[i]
            if t == MPI_COLLEXIT:
                c_i[CI.comm, kc] = -1 if eb[i] == NO_ID else np.int64(eb[i])
                c_i[CI.root, kc] = -1 if ec[i] == NO_ID else np.int64(ec[i])
                c_i[CI.sent, kc] = np.int64(ed[i])
                c_i[CI.recvd, kc] = np.int64(ee[i])
                c_i[CI.pos, kc] = i
                c_call[kc] = top
                kc += 1
        elif t == MPI_SEND:
            req = ee[i]
            s_i[SI.dest, ks] = -1 if ea[i] == NO_ID else np.int64(ea[i])
            s_i[SI.comm, ks] = -1 if eb[i] == NO_ID else np.int64(eb[i])
            s_i[SI.tag, ks] = np.int64(ec[i])
            s_i[SI.bytes, ks] = np.int64(ed[i])
            s_i[SI.send_request, ks] = np.int64(req)
            s_i[SI.send_flags, ks] = flags[i]
            s_i[SI.send_pos, ks] = i
            s_f[SF.send_time, ks] = time[i]
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
            r_i[RI.source, kr] = -1 if ea[i] == NO_ID else np.int64(ea[i])
            r_i[RI.comm, kr] = -1 if eb[i] == NO_ID else np.int64(eb[i])
            r_i[RI.tag, kr] = np.int64(ec[i])
            r_i[RI.recv_bytes, kr] = np.int64(ed[i])
            r_i[RI.recv_request, kr] = np.int64(req)
            r_i[RI.recv_flags, kr] = flags[i]
            r_i[RI.recv_seq, kr] = kr
            r_i[RI.recv_call, kr] = (np.int64(loc) << 32) | max(top, 0)
            r_f[RF.recv_time, kr] = time[i]
            r_call[kr] = top
            post = idtable.take(post_keys, post_rows, post_state, req) if req != 0 else -1
            if post >= 0:
                r_i[RI.post_pos, kr] = p_pos[post]
                r_f[RF.post_time, kr] = p_time[post]
                rp_call[kr] = p_call[post]
            else:
                r_i[RI.post_pos, kr] = i
                r_f[RF.post_time, kr] = time[i]
                rp_call[kr] = top
            kr += 1
        elif t == OMP_FORK:
            f_i[FI.team_id, kf] = np.int64(ea[i])
            f_i[FI.size, kf] = np.int64(ec[i])
            f_i[FI.fork_node, kf] = call_node[top] if top >= 0 else 0  # 0: the super-root, outside any call
            f_i[FI.parent_team_id, kf] = level_team[depth - 1] if depth > 0 else -1
            f_i[FI.parent_ref, kf] = level_team_ref[depth - 1] if depth > 0 else -1
            f_f[FF.fork_time, kf] = time[i]
            kf += 1
        elif t == OMP_JOIN:
            team = np.int64(ea[i])
            j_i[JI.team_id, kj] = team
            ref = np.int64(-1)
            for k in range(kf - 1, -1, -1):
                if f_i[FI.team_id, k] == team:
                    ref = (np.int64(loc) << 32) | k
                    break
            if ref < 0:
                ref = search(team, team_keys, team_refs)
            j_i[JI.team_ref, kj] = ref
            j_f[JF.join_time, kj] = time[i]
            kj += 1
        elif t == OMP_ACQUIRE_LOCK:
            l_i[LI.lock, kl] = np.int64(np.int32(ea[i]))
            l_i[LI.order, kl] = np.int64(ed[i])
            l_f[LF.acquire_time, kl] = time[i]
            l_f[LF.release_time, kl] = np.nan
            l_call[kl] = top
            held_row[n_held] = kl
            n_held += 1
            kl += 1
        elif t == OMP_RELEASE_LOCK:
            # releases the innermost open acquisition of the same lock
            lock = np.int64(np.int32(ea[i]))
            for h in range(n_held - 1, -1, -1):
                if l_i[LI.lock, held_row[h]] == lock:
                    l_f[LF.release_time, held_row[h]] = time[i]
                    for g in range(h, n_held - 1):
                        held_row[g] = held_row[g + 1]
                    n_held -= 1
                    break
        elif t == OMP_TASK_BEGIN:
            tk_i[TI.task, kt] = np.int64(ed[i])
            tk_i[TI.begin_how, kt] = np.int64(ec[i])
            tk_i[TI.end_how, kt] = -1  # until its OMP_TASK_END
            tk_i[TI.task_region, kt] = np.int64(ea[i])
            tk_call[kt] = top  # the task region's call (ENTER just before)
            tk_host[kt] = call_parent[top] if top >= 0 else -1
            # the fragment it runs in, at any depth (its time is not the outer task's own)
            tk_i[TI.outer_call, kt] = tk_call[open_frag[n_open_frag - 1]] if n_open_frag > 0 else -1
            open_frag[n_open_frag] = kt
            n_open_frag += 1
            kt += 1
        elif t == OMP_TASK_END:
            task = np.int64(ed[i])
            for h in range(n_open_frag - 1, -1, -1):
                if tk_i[TI.task, open_frag[h]] == task:
                    tk_i[TI.end_how, open_frag[h]] = np.int64(ec[i])
                    n_open_frag = h
                    break
        elif t == OMP_TASK_CREATE:
            cr_i[CRI.task, kcr] = np.int64(ed[i])
            cr_i[CRI.parent, kcr] = np.int64(ee[i])
            cr_i[CRI.task_region, kcr] = np.int64(ea[i])
            cr_i[CRI.flags, kcr] = flags[i]
            cr_i[CRI.dependences, kcr] = np.int64(ec[i])
            cr_f[CRF.time, kcr] = time[i]
            cr_call[kcr] = top
            kcr += 1
        elif t == THREAD_CREATE or t == THREAD_BEGIN or t == THREAD_END or t == THREAD_JOIN:
            th_i[HI.kind, kth] = t
            th_i[HI.thread, kth] = np.int64(ed[i])
            th_f[HF.time, kth] = time[i]
            th_call[kth] = top
            kth += 1
            if t == THREAD_BEGIN:
                graft = np.int64(search(THREAD_KEY | np.int64(ed[i]), team_keys, team_nodes))
            elif t == THREAD_END:
                graft = -1

    if status != OK:  # the caller raises: no rows, and the calls only as far as they got
        return LocationResult(status, info, open_region,
                              TreeState(parent, region, first_child, next_sibling, first_visit, n_nodes),
                              Calls(call_node, call_enter, call_exit, call_parent), _no_rows())
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
    _fill_call_cols(tk_call, cn, ce, cx, region, tk_i, tk_f, *_TASK_CALL)
    _fill_call_cols(tk_host, cn, ce, cx, region, tk_i, tk_f, *_TASK_HOST)
    for j in range(kt):  # call ids unique over the trace: (location << 32) | call index
        tk_i[TI.call, j] = (np.int64(loc) << 32) | tk_call[j] if tk_call[j] >= 0 else -1
        tk_i[TI.host_call, j] = (np.int64(loc) << 32) | tk_host[j] if tk_host[j] >= 0 else -1
        outer = tk_i[TI.outer_call, j]
        tk_i[TI.outer_call, j] = (np.int64(loc) << 32) | outer if outer >= 0 else -1
    _fill_call_cols(cr_call, cn, ce, cx, region, cr_i, cr_f, *_TCREATE_CALL)
    _fill_call_cols(th_call, cn, ce, cx, region, th_i, th_f, *_THREAD_CALL)
    sends = RowMatrices(s_i, s_f)
    if ks and not s_keep.all():
        sends = RowMatrices(s_i[:, s_keep].copy(), s_f[:, s_keep].copy())
    rows = Rows(sends, RowMatrices(r_i, r_f), RowMatrices(c_i, c_f), RowMatrices(f_i, f_f), RowMatrices(j_i, j_f),
                RowMatrices(m_i, m_f), RowMatrices(b_i, b_f), RowMatrices(l_i, l_f), RowMatrices(tk_i, tk_f),
                RowMatrices(cr_i, cr_f), RowMatrices(th_i, th_f))
    # hand back the tree with modest spare room, not the reservation
    cap = max(256, 2 * n_nodes)
    if parent.shape[0] > 2 * cap:
        grown = TreeState(parent[:cap].copy(), region[:cap].copy(), first_child[:cap].copy(),
                          next_sibling[:cap].copy(), first_visit[:cap].copy(), n_nodes)
    else:
        grown = TreeState(parent, region, first_child, next_sibling, first_visit, n_nodes)
    return LocationResult(status, info, open_region, grown, Calls(call_node, call_enter, call_exit, call_parent), rows)


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
