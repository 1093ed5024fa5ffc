"""Instance tables of the base wait states: one row per occurrence, the input every wait-state pattern sums.

The built-in patterns compute their severities from these tables and nothing else, so a plugin that
refines a wait state (Late Sender on short messages, barrier waits of one team, ...) filters the same
rows and stays a part of the built-in's value cell by cell::

    from patterns import Pattern, Severity, late_sender_instances

    def compute(self, ctx):
        ls = late_sender_instances(ctx)
        keep = ls["bytes"] < 4096
        return Severity(ls["cnode"][keep], ls["loc"][keep], ls["wait"][keep])

Every function returns a :class:`patterns.tables.Table` and is computed once per context (see
:func:`cached`): call it as often as you like.  Declare the replay table it reads in your pattern's
``requires`` (named below).  Rows are in no particular order.  Columns common to every table:

=========  =======  =====================================================================
``cnode``  int64    call path charged with the wait (the waiting call's own path)
``loc``    int64    location (global id) that waits
``enter``  float64  ENTER time of the waiting call
``wait``   float64  seconds waited, always > 0 (rows without waiting are left out)
=========  =======  =====================================================================

Point-to-point (``requires = ("messages",)``); ``message`` is the row of ``ctx.table("messages")``:

* :func:`late_sender_instances` (``mpi_latesender``): the receiving call (``recv_cnode``, ``recv_loc``,
  ``recv_enter``) waits ``min(send_enter, recv_exit) - recv_enter``; ``MPI_Test*`` calls never wait;
  an ``MPI_Waitall``/``MPI_Waitsome`` counts only the message with its largest wait.  Extra columns:
  ``bytes`` (as sent), ``source`` (sender's rank), ``wrong_order`` (SCOUT's check against the
  receiver's last 100 instances: a message sent earlier was received later) and ``same_source``
  (the wrong-order message came from the same rank).
* :func:`late_receiver_instances` (``mpi_latereceiver``): the send's completing call (``sendc_*``,
  an ``MPI_Send``/``MPI_Ssend`` or an ``MPI_Wait``) waits ``recvp_enter - sendc_enter`` when the two
  overlap; charged to the sender.  Extra column: ``bytes``.

MPI collectives (``requires = ("collectives",)``); ``row`` is the row of ``ctx.table("collectives")``,
``instance`` its collective instance.  Only complete instances on communicators of two or more ranks:

* :func:`mpi_barrier_wait_instances`: ``min(latest enter, own exit) - own enter`` in barriers;
* :func:`mpi_barrier_completion_instances`: ``own exit - max(earliest exit, latest enter)``;
* :func:`mpi_wait_nxn_instances`: n-to-n collectives except ``Alltoallv``/``Alltoallw``, receiving
  members: ``min(latest enter of a sending member, own exit) - own enter``;
* :func:`mpi_nxn_completion_instances`: the same collectives, members that send and receive:
  ``own exit - max(earliest exit of those, latest enter of a sender)``;
* :func:`mpi_late_broadcast_instances`: 1-to-n collectives, receiving non-roots:
  ``min(enter of the root, own exit) - own enter``;
* :func:`mpi_early_reduce_instances`: n-to-1 collectives, the receiving root:
  ``min(earliest enter of a sending non-root, own exit) - own enter``;
* :func:`mpi_early_scan_instances`: ``MPI_Scan``/``MPI_Exscan`` members that transfer data:
  ``min(latest enter of ranks 0..own rank, own exit) - own enter``.

OpenMP:

* :func:`omp_barrier_wait_instances` (``requires = ("omp_barriers",)``): ``row`` of
  ``ctx.table("omp_barriers")``, ``instance``, ``implicit`` (the call path is an implicit barrier;
  otherwise an explicit one).  ``min(latest enter of the team, own exit) - own enter``, minus the time
  the thread ran OpenMP tasks in the barrier until then (the table's ``task_busy``); barriers outside
  any team are left out.
* :func:`omp_lock_contention_instances` (``requires = ("locks",)``): ``row`` of ``ctx.table("locks")``,
  ``process``, ``lock``.  The acquiring call (critical construct, atomic, lock routine or ordered
  construct; its call path's role tells which) waits ``min(release of the previous holder, own acquisition) - own enter``.
* :func:`omp_fork_join_instances` (``requires = ("omp_teams", "omp_team_members")``): one row per team
  member (all of them, ``wait`` column absent): ``member`` (row of ``omp_team_members``), ``team`` (row
  of ``omp_teams``), ``cnode`` the parallel region's call path, ``loc``, ``fork`` = ENTER(parallel) -
  FORK and ``join`` = JOIN - EXIT(parallel) (>= 0; a missing event counts as 0), ``master``, and
  ``fork_cnode``: on the team's master the call path it forked from (the replay's record; -1 when it
  forked outside every call; the parallel region's parent when the table has no such column), -1 on
  the other members.

:func:`wait_severity` turns (a selection of) an instance table into a pattern's result; :func:`cached`
is the one place patterns keep values derived from a context; :func:`mpi_operations` names the MPI
operation of every region.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tracefmt.layout import Paradigm, Role

from .api import Severity
from .tables import Table

__all__ = [
    "cached",
    "mpi_operations",
    "late_sender_instances",
    "late_receiver_instances",
    "mpi_barrier_wait_instances",
    "mpi_barrier_completion_instances",
    "mpi_wait_nxn_instances",
    "mpi_nxn_completion_instances",
    "mpi_late_broadcast_instances",
    "mpi_early_reduce_instances",
    "mpi_early_scan_instances",
    "omp_barrier_wait_instances",
    "omp_lock_contention_instances",
    "omp_fork_join_instances",
    "wait_severity",
]


def cached(ctx, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()``, computed once per context and kept in ``ctx.derived[key]``.

    For values several patterns derive from the same context (the instance tables here, the fork/join
    shift of ``time``, ...).  Keys are module-qualified (``"patterns.late_sender"``); a plugin uses its
    own package name as prefix.  The value is shared: callers must not modify it.
    """
    try:
        return ctx.derived[key]
    except KeyError:
        value = ctx.derived[key] = compute()
        return value


def mpi_operations(ctx) -> list[str]:
    """Lower-case MPI operation of every region id (``"send"`` for ``MPI_Send``), ``""`` for others."""
    return cached(ctx, "patterns.mpi_operations", lambda: [
        n[4:].lower() if int(p) == Paradigm.MPI and n[:4].upper() == "MPI_" else ""
        for n, p in zip(ctx.region_name, ctx.region_paradigm)
    ])


def _calls(ctx, regions: np.ndarray, pred) -> np.ndarray:
    """Boolean per entry of ``regions``: an MPI operation for which ``pred(operation)`` holds."""
    ids = np.array([i for i, op in enumerate(mpi_operations(ctx)) if op and pred(op)], np.int64)
    return np.isin(regions, ids)


def _positive(x: np.ndarray) -> np.ndarray:
    """max(x, 0) with NaN (a missing event) counted as no time."""
    return np.where(np.isfinite(x) & (x > 0), x, 0.0)


# --------------------------------------------------------------------------
# point-to-point
# --------------------------------------------------------------------------
def late_sender_instances(ctx) -> Table:
    """Late Sender instances (see the module docstring); reads ``messages``."""
    return cached(ctx, "patterns.late_sender", lambda: _late_sender(ctx))


def _late_sender(ctx) -> Table:
    # the wrong-order ring is a numba kernel: imported when first needed, not with the package
    from .kernels.wrongorder import RING_SIZE, wrong_order

    M = ctx.table("messages")
    n = len(M)
    test = _calls(ctx, M["recv_region"], lambda op: op.startswith("test"))
    multi = _calls(ctx, M["recv_region"], lambda op: op in ("waitall", "waitsome"))
    wait = np.minimum(M["send_enter"], M["recv_exit"]) - M["recv_enter"]
    cand = ~test & (wait > 0)
    single_rows = np.flatnonzero(cand & ~multi)
    # position of the step on its location: receive r -> 3 r (+1 for its ring check);
    # a Waitall's instance is reported at the call's exit, after all its receives
    seq = M["recv_seq"]
    call_last = np.zeros(n, np.int64)
    if n:
        calls, inv = np.unique(M["recv_call"], return_inverse=True)
        last = np.full(len(calls), -1, np.int64)
        np.maximum.at(last, inv, seq)
        call_last = last[inv]
    mrows = np.flatnonzero(cand & multi)
    if len(mrows):  # the largest wait of each multi-completion call
        o = mrows[np.lexsort((-wait[mrows], M["recv_call"][mrows]))]
        first = np.ones(len(o), bool)
        first[1:] = M["recv_call"][o][1:] != M["recv_call"][o][:-1]
        multi_rows = o[first]
    else:
        multi_rows = np.zeros(0, np.int64)
    rows = np.concatenate([single_rows, multi_rows])
    pos = np.concatenate([3 * seq[single_rows], 3 * call_last[multi_rows] + 2]) if n else np.zeros(0)
    loc = M["recv_loc"][rows]
    send_time = M["send_time"][rows]
    source = M["send_rank"][rows]
    # wrong order: replay the ring per receiving location
    n_i = len(rows)
    step_loc = np.concatenate([loc, M["recv_loc"]]).astype(np.int64)
    step_pos = np.concatenate([pos.astype(np.int64), 3 * seq + 1]).astype(np.int64)
    kind = np.concatenate([np.zeros(n_i, np.int8), np.ones(n, np.int8)])
    st = np.concatenate([send_time, M["send_time"]]).astype(np.float64)
    src = np.concatenate([source, M["send_rank"]]).astype(np.int64)
    iid = np.concatenate([np.arange(n_i), np.full(n, -1)]).astype(np.int64)
    o = np.lexsort((step_pos, step_loc))
    wo, same = wrong_order(step_loc[o], kind[o], st[o], src[o], iid[o], RING_SIZE)
    wrong, same_source = np.zeros(n_i, bool), np.zeros(n_i, bool)
    wrong[: len(wo)] = wo
    same_source[: len(same)] = same
    cnode = M["recv_cnode"][rows].astype(np.int64)
    loc = loc.astype(np.int64)
    return Table({
        "message": rows.astype(np.int64), "cnode": cnode,
        "loc": loc, "enter": M["recv_enter"][rows], "wait": within_call_time(ctx, cnode, loc, wait[rows]),
        "bytes": M["bytes"][rows], "source": source, "wrong_order": wrong, "same_source": same_source,
    })


def late_receiver_instances(ctx) -> Table:
    """Late Receiver instances (see the module docstring); reads ``messages``."""
    return cached(ctx, "patterns.late_receiver", lambda: _late_receiver(ctx))


def _late_receiver(ctx) -> Table:
    M = ctx.table("messages")
    blocking = _calls(ctx, M["sendc_region"], lambda op: op in ("send", "ssend", "wait"))
    overlap = M["sendc_exit"] >= M["recvp_enter"]
    wait = M["recvp_enter"] - M["sendc_enter"]
    rows = np.flatnonzero(blocking & overlap & (wait > 0))
    cnode = M["sendc_cnode"][rows].astype(np.int64)
    loc = M["send_loc"][rows].astype(np.int64)
    return Table({
        "message": rows.astype(np.int64), "cnode": cnode,
        "loc": loc, "enter": M["sendc_enter"][rows], "wait": within_call_time(ctx, cnode, loc, wait[rows]),
        "bytes": M["bytes"][rows],
    })


def within_call_time(ctx, cnode: np.ndarray, loc: np.ndarray, wait: np.ndarray) -> np.ndarray:
    """The waits, scaled down in a (call path, location) cell where together they exceed the exclusive time the
    waiting call path holds there.

    A wait is measured from the call's ENTER and EXIT, but time the call spends in regions nested inside it (the
    runtime records the completion of a non-blocking collective inside an MPI_Waitall as such a region) belongs
    to those regions, exclusive along the call tree.  Where that leaves less than the waits, every wait of the
    cell is scaled by the same factor, so the wait states stay a part of their time category and a filter over
    the instances stays a part of the whole.  Cells within their time are untouched (factor exactly 1).
    """
    wait = np.asarray(wait, np.float64)
    if not len(wait):
        return wait
    cells, inv = np.unique(cnode * ctx.n_locations + loc, return_inverse=True)
    total = np.bincount(inv, weights=wait, minlength=len(cells))
    held = np.asarray(ctx.excl_time, np.float64)[cells // ctx.n_locations, cells % ctx.n_locations]
    over = total > held
    if not over.any():
        return wait
    factor = np.ones(len(cells))
    factor[over] = np.maximum(held[over], 0.0) / total[over]
    return wait * factor[inv]


# --------------------------------------------------------------------------
# MPI collectives
# --------------------------------------------------------------------------
_COLL_ROLES = {
    "barrier": (Role.MPI_COLL_BARRIER,),
    "nxn": (Role.MPI_COLL_ALL2ALL,),
    "one2all": (Role.MPI_COLL_ONE2ALL,),
    "all2one": (Role.MPI_COLL_ALL2ONE,),
    "scan": (Role.MPI_COLL_OTHER,),
}


class _Collective:
    """The rows of complete instances (>= 2 members) of one class of collectives.

    ``idx``: their rows in the collectives table; ``r``: their columns; ``inst``: dense instance ids.
    """

    def __init__(self, ctx, kind: str):
        T = ctx.table("collectives")
        role = ctx.region_role[np.maximum(T["region"], 0)] if len(T) else np.zeros(0, np.uint8)
        ok = np.isin(role, [int(r) for r in _COLL_ROLES[kind]]) & (T["n_members"] >= 2) & (T["region"] >= 0)
        if "complete" in T:
            ok &= T["complete"]
        if kind == "nxn":  # the v/w variants carry per-pair counts: not an n-to-n wait
            ok &= ~_calls(ctx, T["region"], lambda op: op in ("alltoallv", "alltoallw"))
        self.idx = np.flatnonzero(ok)
        self.r = {k: v[ok] for k, v in T.items()}
        _, inst = np.unique(self.r["instance"], return_inverse=True)
        self.inst = inst.astype(np.int64)

    def per_instance(self, op, values, init) -> np.ndarray:
        """``op`` (np.maximum or np.minimum) of ``values`` over each row's instance, for every row."""
        n = int(self.inst.max()) + 1 if len(self.inst) else 0
        out = np.full(n, init, np.float64)
        op.at(out, self.inst, values)
        return out[self.inst]

    def instances(self, wait: np.ndarray, order: np.ndarray | None = None) -> Table:
        """The rows (in ``order``, default all in table order) whose ``wait`` is positive."""
        sel = np.arange(len(self.idx)) if order is None else order
        keep = sel[wait > 0]
        r = self.r
        return Table({
            "row": self.idx[keep].astype(np.int64), "instance": r["instance"][keep],
            "cnode": r["cnode"][keep].astype(np.int64), "loc": r["loc"][keep].astype(np.int64),
            "enter": r["enter"][keep], "wait": wait[wait > 0],
        })


def mpi_barrier_wait_instances(ctx) -> Table:
    """Wait at MPI barriers (see the module docstring); reads ``collectives``."""

    def compute():
        c = _Collective(ctx, "barrier")
        latest = c.per_instance(np.maximum, c.r["enter"], -np.inf)
        return c.instances(np.minimum(latest, c.r["exit"]) - c.r["enter"])

    return cached(ctx, "patterns.mpi_barrier_wait", compute)


def mpi_barrier_completion_instances(ctx) -> Table:
    """Barrier completion (see the module docstring); reads ``collectives``."""

    def compute():
        c = _Collective(ctx, "barrier")
        latest = c.per_instance(np.maximum, c.r["enter"], -np.inf)
        first_out = c.per_instance(np.minimum, c.r["exit"], np.inf)
        return c.instances(c.r["exit"] - np.maximum(first_out, latest))

    return cached(ctx, "patterns.mpi_barrier_completion", compute)


def _nxn(ctx):
    c = _Collective(ctx, "nxn")
    sent, recvd = c.r["sent"] > 0, c.r["recvd"] > 0
    latest = c.per_instance(np.maximum, np.where(sent, c.r["enter"], -np.inf), -np.inf)
    first_out = c.per_instance(np.minimum, np.where(sent & recvd, c.r["exit"], np.inf), np.inf)
    return c, sent, recvd, latest, first_out


def mpi_wait_nxn_instances(ctx) -> Table:
    """Wait at N x N (see the module docstring); reads ``collectives``."""

    def compute():
        c, _, recvd, latest, _ = _nxn(ctx)
        return c.instances(np.where(recvd, np.minimum(latest, c.r["exit"]) - c.r["enter"], 0.0))

    return cached(ctx, "patterns.mpi_wait_nxn", compute)


def mpi_nxn_completion_instances(ctx) -> Table:
    """N x N completion (see the module docstring); reads ``collectives``."""

    def compute():
        c, sent, recvd, latest, first_out = _nxn(ctx)
        return c.instances(np.where(sent & recvd, c.r["exit"] - np.maximum(first_out, latest), 0.0))

    return cached(ctx, "patterns.mpi_nxn_completion", compute)


def mpi_late_broadcast_instances(ctx) -> Table:
    """Late Broadcast (see the module docstring); reads ``collectives``."""

    def compute():
        c = _Collective(ctx, "one2all")
        is_root = c.r["rank"] == c.r["root"]
        root_enter = c.per_instance(np.maximum, np.where(is_root, c.r["enter"], -np.inf), -np.inf)
        waits = ~is_root & (c.r["recvd"] > 0) & np.isfinite(root_enter)
        return c.instances(np.where(waits, np.minimum(root_enter, c.r["exit"]) - c.r["enter"], 0.0))

    return cached(ctx, "patterns.mpi_late_broadcast", compute)


def mpi_early_reduce_instances(ctx) -> Table:
    """Early Reduce (see the module docstring); reads ``collectives``."""

    def compute():
        c = _Collective(ctx, "all2one")
        is_root = c.r["rank"] == c.r["root"]
        sends = ~is_root & (c.r["sent"] > 0)
        first_in = c.per_instance(np.minimum, np.where(sends, c.r["enter"], np.inf), np.inf)
        waits = is_root & (c.r["recvd"] > 0)
        return c.instances(np.where(waits, np.minimum(first_in, c.r["exit"]) - c.r["enter"], 0.0))

    return cached(ctx, "patterns.mpi_early_reduce", compute)


def mpi_early_scan_instances(ctx) -> Table:
    """Early Scan (see the module docstring); reads ``collectives`` (and the trace's communicators)."""

    def compute():
        c = _Collective(ctx, "scan")
        r, inst = c.r, c.inst
        act = np.flatnonzero((r["sent"] > 0) | (r["recvd"] > 0))
        comms = ctx.trace.defs.comms if ctx.trace is not None else {}
        # comm-local rank of every row: position of its global rank in the communicator's group
        local = np.empty(len(act), np.int64)
        for k, row in enumerate(act):
            ranks = comms[int(r["comm"][row])].ranks if int(r["comm"][row]) in comms else ()
            rk = int(r["rank"][row])
            local[k] = ranks.index(rk) if rk in ranks else rk
        o = act[np.lexsort((local, inst[act]))]
        latest_below = np.empty(len(o))
        cur, run = -1, -np.inf
        for k, row in enumerate(o):
            if inst[row] != cur:
                cur, run = inst[row], -np.inf
            run = max(run, r["enter"][row])
            latest_below[k] = run
        return c.instances(np.minimum(latest_below, r["exit"][o]) - r["enter"][o], order=o)

    return cached(ctx, "patterns.mpi_early_scan", compute)


# --------------------------------------------------------------------------
# OpenMP
# --------------------------------------------------------------------------
def omp_barrier_wait_instances(ctx) -> Table:
    """OpenMP barrier waits (see the module docstring); reads ``omp_barriers``."""
    return cached(ctx, "patterns.omp_barrier_wait", lambda: _omp_barrier_wait(ctx))


def _omp_barrier_wait(ctx) -> Table:
    from .kernels.barrier_waits import barrier_waits  # numba: when analyzing

    bar = ctx.table("omp_barriers")
    team, cnode = np.asarray(bar["team"]), np.asarray(bar["cnode"])
    instance = np.asarray(bar["instance"], np.int64)
    enter, exit_ = np.asarray(bar["enter"], np.float64), np.asarray(bar["exit"], np.float64)
    has_busy = "task_busy" in bar  # time spent running OpenMP tasks in the barrier is no wait (format 2.1)
    busy = np.asarray(bar["task_busy"], np.float64) if has_busy else enter
    key, top = instance, (int(instance.max()) + 1 if len(instance) else 0)
    if top > 4 * len(instance) + 16:  # sparse ids (not from the replay): the latest ENTERs by dense ids
        _, key = np.unique(instance, return_inverse=True)
        key = key.reshape(-1)
        top = int(key.max()) + 1
    role = np.asarray(ctx.cnode_role())
    n = len(instance)  # room for every row; the rows past the last written are never touched
    out = {"row": np.empty(n, np.int64), "instance": np.empty(n, np.int64), "cnode": np.empty(n, np.int64),
           "loc": np.empty(n, np.int64), "enter": np.empty(n, np.float64), "wait": np.empty(n, np.float64),
           "implicit": np.empty(n, np.bool_)}
    k = barrier_waits(team, cnode, instance, key, enter, exit_, busy, has_busy, np.asarray(bar["loc"]), role,
                      role.dtype.type(Role.OMP_BARRIER), role.dtype.type(Role.OMP_IMPLICIT_BARRIER),
                      np.full(max(top, 0), -np.inf), *out.values())
    return Table({name: col[:k] for name, col in out.items()})


def omp_lock_contention_instances(ctx) -> Table:
    """Lock contention (see the module docstring); reads ``locks``."""
    return cached(ctx, "patterns.omp_lock_contention", lambda: _omp_lock_contention(ctx))


def _omp_lock_contention(ctx) -> Table:
    locks = ctx.table("locks")
    cnode = np.asarray(locks["cnode"], np.int64)
    idx = np.flatnonzero(cnode >= 0)
    prev = np.asarray(locks["prev_release_time"], np.float64)[idx]
    acquired = np.asarray(locks["acquire_time"], np.float64)[idx]
    enter = np.asarray(locks["call_enter"], np.float64)[idx]
    wait = _positive(np.minimum(prev, acquired) - enter)
    keep = wait > 0
    idx = idx[keep]
    return Table({
        "row": idx, "process": np.asarray(locks["process"], np.int64)[idx],
        "lock": np.asarray(locks["lock"], np.int64)[idx], "cnode": cnode[idx],
        "loc": np.asarray(locks["loc"], np.int64)[idx], "enter": enter[keep], "wait": wait[keep],
    })


def omp_fork_join_instances(ctx) -> Table:
    """Fork and join spans of every team member (see the module docstring); reads ``omp_teams`` and
    ``omp_team_members``."""
    return cached(ctx, "patterns.omp_fork_join", lambda: _omp_fork_join(ctx))


def _omp_fork_join(ctx) -> Table:
    teams = ctx.table("omp_teams")
    members = ctx.table("omp_team_members")
    team_ids = np.asarray(teams["team"], np.int64)
    m_team = np.asarray(members["team"], np.int64)
    if len(teams) == 0:
        found, row = np.zeros(len(m_team), bool), np.zeros(len(m_team), np.int64)
    elif np.array_equal(team_ids, np.arange(len(team_ids))):  # dense ids in row order, as the replay builds them
        found = (m_team >= 0) & (m_team < len(team_ids))
        row = np.where(found, m_team, 0)
    else:
        order = np.argsort(team_ids, kind="stable")
        pos = np.searchsorted(team_ids[order], m_team)
        found = np.zeros(len(m_team), bool)
        ok = pos < len(order)
        found[ok] = team_ids[order][pos[ok]] == m_team[ok]
        row = order[np.where(found, pos, 0)]
    cnode = np.asarray(teams["parallel_cnode"], np.int64)[row] if len(teams) else row
    keep = found & (cnode >= 0)
    member, row, cnode = np.flatnonzero(keep), row[keep], cnode[keep]
    loc = np.asarray(members["loc"], np.int64)[member]

    def team_col(name, dtype):
        return np.asarray(teams[name], dtype)[row]

    fork = _positive(np.asarray(members["enter"], np.float64)[member] - team_col("fork_time", np.float64))
    join = _positive(team_col("join_time", np.float64) - np.asarray(members["exit"], np.float64)[member])
    master = loc == team_col("master_loc", np.int64)
    if "fork_cnode" in teams:
        fork_cnode = team_col("fork_cnode", np.int64)
    else:
        fork_cnode = np.asarray(ctx.calltree.parent, np.int64)[cnode]
    return Table({
        "member": member, "team": row, "cnode": cnode, "loc": loc, "fork": fork, "join": join,
        "master": master, "fork_cnode": np.where(master, fork_cnode, -1),
    })


def wait_severity(instances: Table, keep: np.ndarray | None = None) -> Severity:
    """The ``wait`` of the rows of an instance table (those ``keep`` selects, a boolean mask), as a
    :class:`~patterns.api.Severity` at their ``(cnode, loc)``: what a wait-state pattern returns."""
    if keep is None:
        return Severity(instances["cnode"], instances["loc"], instances["wait"])
    return Severity(instances["cnode"][keep], instances["loc"][keep], instances["wait"][keep])
