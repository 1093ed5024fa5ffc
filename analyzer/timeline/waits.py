"""Every wait-state instance of an analysis as an interval on the waiting location, with its cause.

The instance tables of ``patterns.instances`` say who waited how long from when; this module adds
*where on the time line* the waiting happened and *what it waited for*: the location and time of
the event whose lateness ended the wait.

=============================  ==========================  =============================================
property                       the waiting interval         the cause (location, time)
=============================  ==========================  =============================================
mpi_latesender (_wo where     receive ENTER + wait         the sender, ENTER of its send call
received in wrong order)
mpi_latereceiver               send ENTER + wait            the receiver, ENTER of its posting call
mpi_barrier_wait               ENTER + wait                 the last member to enter
mpi_wait_nxn                   ENTER + wait                 the last sending member to enter
mpi_latebroadcast              ENTER + wait                 the root, its ENTER
mpi_earlyreduce                ENTER + wait                 the first sending non-root, its ENTER
mpi_earlyscan                  ENTER + wait                 the last of the lower ranks to enter
mpi_barrier_completion,        the last ``wait`` seconds    the first member to leave, its EXIT
mpi_nxn_completion             before EXIT
omp_ebarrier_wait,             ENTER + wait                 the last thread to enter
omp_ibarrier_wait
omp_lock_contention_critical,  ENTER of the acquiring call  the previous holder, its release
omp_lock_contention_api        + wait
omp_fork                       FORK .. ENTER(parallel)      the master, its FORK (workers only: the
                               on a worker                  master's own span has no other cause)
omp_idle_threads               the master's serial time,    the master, at the end of the interval (the
                               cut at its ENTERs/EXITs      FORK that ends the idleness, or its next call)
mpi_rma_wait_at_fence,         ENTER + wait                 the last process to enter the call
mpi_rma_wait_at_create, _free
mpi_rma_sync_late_post,        ENTER of the start, complete the target that posted last, ENTER of its
mpi_rma_comm_late_post         or transfer call + wait      MPI_Win_post
mpi_rma_early_wait             ENTER + wait                 the origin that completed last, ENTER of its
                                                            MPI_Win_complete
mpi_rma_sync_lock_competition, ENTER of the waiting call    the previous holder, EXIT of its
mpi_rma_comm_lock_competition  + wait                       MPI_Win_unlock
=============================  ==========================  =============================================

Each kind is listed only when the replay built the tables it reads (``expert-analyze --patterns``
may leave some out); :func:`wait_states` says which kinds it had to leave out.  The seconds are the
instance tables' own, so the waits of one property on one (call path, location) add up to the
cube's value there (Late Sender: with its wrong-order part; idle threads: the serial part, without
limited parallelism; fork: the workers' part).  The parts of a one-sided wait that its child properties name
(early fence, late complete) are not slices of their own: they lie inside the wait's slice, where Perfetto would
end the wait's cause arrow in them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from patterns.instances import (late_receiver_instances, late_sender_instances, mpi_barrier_completion_instances,
                                mpi_barrier_wait_instances, mpi_early_reduce_instances, mpi_early_scan_instances,
                                mpi_late_broadcast_instances, mpi_nxn_completion_instances,
                                mpi_wait_nxn_instances, omp_barrier_wait_instances, omp_fork_join_instances,
                                omp_lock_contention_instances)
from patterns.rma_epochs import rma_waits
from tracefmt.layout import EXIT_TYPES, EventType, Role

__all__ = ["WaitStates", "wait_states", "idle_segments"]


@dataclass
class WaitStates:
    """Columns, one entry per wait-state instance (numpy arrays of equal length, ``prop`` and ``cause`` lists).

    ``start``/``end``: the interval (seconds) on location ``loc``; ``seconds``: the property's value of the
    instance (``end - start`` up to rounding); ``cause_loc``/``cause_time``: the event that ended it
    (-1 / NaN: none known); ``cause``: what that event is, in words.
    """

    prop: list
    loc: np.ndarray
    cnode: np.ndarray
    start: np.ndarray
    end: np.ndarray
    seconds: np.ndarray
    cause_loc: np.ndarray
    cause_time: np.ndarray
    cause: list
    left_out: list  # kinds not shown: (property, why)

    def __len__(self) -> int:
        return len(self.prop)


class _Collector:
    def __init__(self):
        self.parts: list[dict] = []
        self.left_out: list[tuple[str, str]] = []

    def add(self, prop, loc, cnode, start, seconds, cause_loc, cause_time, cause, end=None, keep=None):
        loc, cnode = np.asarray(loc, np.int64), np.asarray(cnode, np.int64)
        start, seconds = np.asarray(start, np.float64), np.asarray(seconds, np.float64)
        end = start + seconds if end is None else np.asarray(end, np.float64)
        cols = {"loc": loc, "cnode": cnode, "start": start, "end": end, "seconds": seconds,
                "cause_loc": np.asarray(cause_loc, np.int64), "cause_time": np.asarray(cause_time, np.float64)}
        if keep is not None:
            cols = {k: v[keep] for k, v in cols.items()}
        n = len(cols["loc"])
        names = [prop] * n if isinstance(prop, str) else list(np.asarray(prop, object)[keep] if keep is not None
                                                              else prop)
        cols["prop"] = names
        cols["cause"] = [cause] * n
        self.parts.append(cols)

    def result(self) -> WaitStates:
        def cat(k, dt):
            return np.concatenate([p[k] for p in self.parts]).astype(dt) if self.parts else np.zeros(0, dt)

        return WaitStates(prop=[x for p in self.parts for x in p["prop"]], loc=cat("loc", np.int64),
                          cnode=cat("cnode", np.int64), start=cat("start", np.float64), end=cat("end", np.float64),
                          seconds=cat("seconds", np.float64), cause_loc=cat("cause_loc", np.int64),
                          cause_time=cat("cause_time", np.float64), cause=[x for p in self.parts for x in p["cause"]],
                          left_out=self.left_out)


def _has(ctx, out: _Collector, tables, props) -> bool:
    missing = [t for t in tables if t not in ctx.tables]
    if missing:
        for p in props:
            out.left_out.append((p, f"the replay did not build {', '.join(missing)} (not asked for by --patterns)"))
    return not missing


def wait_states(ctx) -> WaitStates:
    """Every wait-state instance of the analysis context ``ctx`` (see the module docstring)."""
    out = _Collector()
    if _has(ctx, out, ("messages",), ("mpi_latesender", "mpi_latereceiver")):
        _point_to_point(ctx, out)
    if _has(ctx, out, ("collectives",), ("mpi_barrier_wait", "mpi_wait_nxn", "mpi_latebroadcast")):
        _collectives(ctx, out)
    if _has(ctx, out, ("omp_barriers",), ("omp_ebarrier_wait", "omp_ibarrier_wait")):
        _omp_barriers(ctx, out)
    if _has(ctx, out, ("locks",), ("omp_lock_contention_critical", "omp_lock_contention_api")):
        _locks(ctx, out)
    if _has(ctx, out, ("omp_teams", "omp_team_members"), ("omp_fork", "omp_idle_threads")):
        _fork(ctx, out)
        _idle(ctx, out)
    if "mpi_rma_ops" in ctx.tables:  # MPI one-sided (format 2.3); only when a one-sided property was asked for
        _rma(ctx, out)
    return out.result()


_RMA = (("wait_at_create", "mpi_rma_wait_at_create", "the last process to enter MPI_Win_create"),
        ("wait_at_free", "mpi_rma_wait_at_free", "the last process to enter MPI_Win_free"),
        ("wait_at_fence", "mpi_rma_wait_at_fence", "the last process to enter the fence"),
        ("sync_late_post", "mpi_rma_sync_late_post", "the target that posted last: ENTER of its MPI_Win_post"),
        ("comm_late_post", "mpi_rma_comm_late_post", "the target that posted last: ENTER of its MPI_Win_post"),
        ("early_wait", "mpi_rma_early_wait", "the origin that completed last: ENTER of its MPI_Win_complete"),
        ("sync_lock", "mpi_rma_sync_lock_competition", "the previous holder of the lock: EXIT of its MPI_Win_unlock"),
        ("comm_lock", "mpi_rma_comm_lock_competition", "the previous holder of the lock: EXIT of its MPI_Win_unlock"))


def _rma(ctx, out: _Collector) -> None:
    waits = rma_waits(ctx)
    for key, prop, cause in _RMA:
        w = waits[key]
        if len(w["value"]):
            out.add(prop, w["loc"], w["cnode"], w["start"], w["value"], w["cause_loc"], w["cause_time"], cause)


def _point_to_point(ctx, out: _Collector) -> None:
    M = ctx.table("messages")
    ls = late_sender_instances(ctx)
    m = ls["message"]
    out.add(np.where(ls["wrong_order"], "mpi_latesender_wo", "mpi_latesender"), ls["loc"], ls["cnode"], ls["enter"],
            ls["wait"], M["send_loc"][m], M["send_enter"][m], "the late send: ENTER of the sender's send call")
    lr = late_receiver_instances(ctx)
    m = lr["message"]
    out.add("mpi_latereceiver", lr["loc"], lr["cnode"], lr["enter"], lr["wait"], M["recv_loc"][m], M["recvp_enter"][m],
            "the late receive: ENTER of the receiver's posting call")


def _member_of(T, inst_of_rows, cand: np.ndarray, value: np.ndarray, pick) -> np.ndarray:
    """Per row of an instance table: the collectives-table row of its instance that ``pick``s
    (np.argmax/np.argmin semantics over ``value``) among the ``cand`` rows; -1 if none."""
    inst = np.asarray(T["instance"], np.int64)
    rows = np.flatnonzero(cand)
    best: dict[int, int] = {}
    sign = 1.0 if pick == "max" else -1.0
    for r in rows[np.argsort(sign * value[rows], kind="stable")]:  # later rows win: the largest (smallest) value
        best[int(inst[r])] = int(r)
    return np.array([best.get(int(i), -1) for i in inst_of_rows], np.int64)


def _collectives(ctx, out: _Collector) -> None:
    T = ctx.table("collectives")
    if not len(T):
        return
    enter, exit_ = np.asarray(T["enter"], np.float64), np.asarray(T["exit"], np.float64)
    sent, recvd = np.asarray(T["sent"]) > 0, np.asarray(T["recvd"]) > 0
    is_root = np.asarray(T["rank"]) == np.asarray(T["root"])
    everyone = np.ones(len(T), bool)
    kinds = [
        ("mpi_barrier_wait", mpi_barrier_wait_instances, everyone, enter, "max", "enter",
         "the last member to enter the barrier"),
        ("mpi_wait_nxn", mpi_wait_nxn_instances, sent, enter, "max", "enter",
         "the last sending member to enter the collective"),
        ("mpi_latebroadcast", mpi_late_broadcast_instances, is_root, enter, "max", "enter",
         "the root's ENTER"),
        ("mpi_earlyreduce", mpi_early_reduce_instances, ~is_root & sent, enter, "min", "enter",
         "the first sending non-root's ENTER"),
        ("mpi_barrier_completion", mpi_barrier_completion_instances, everyone, exit_, "min", "exit",
         "the first member to leave the barrier"),
        ("mpi_nxn_completion", mpi_nxn_completion_instances, sent & recvd, exit_, "min", "exit",
         "the first member to leave the collective"),
    ]
    for prop, table_of, cand, value, pick, at, what in kinds:
        inst = table_of(ctx)
        if not len(inst):
            continue
        row = np.asarray(inst["row"], np.int64)
        cause = _member_of(T, T["instance"][row], cand, value, pick)
        ok = cause >= 0
        c = np.maximum(cause, 0)
        cause_time = np.where(ok, (enter if at == "enter" else exit_)[c], np.nan)
        if at == "exit":  # completion: the last `wait` seconds of the call
            end = exit_[row]
            out.add(prop, inst["loc"], inst["cnode"], end - inst["wait"], inst["wait"],
                    np.where(ok, T["loc"][c], -1), np.maximum(cause_time, end - inst["wait"]), what, end=end)
        else:
            out.add(prop, inst["loc"], inst["cnode"], inst["enter"], inst["wait"], np.where(ok, T["loc"][c], -1),
                    cause_time, what)
    _scan(ctx, out, T, enter)


def _scan(ctx, out: _Collector, T, enter) -> None:
    inst = mpi_early_scan_instances(ctx)
    if not len(inst):
        return
    comms = ctx.trace.defs.comms if ctx.trace is not None else {}
    rows = np.asarray(inst["row"], np.int64)
    cause_loc = np.full(len(rows), -1, np.int64)
    cause_time = np.full(len(rows), np.nan)
    by_inst: dict[int, list[int]] = {}
    for r in np.flatnonzero(np.isin(T["instance"], T["instance"][rows])):
        by_inst.setdefault(int(T["instance"][r]), []).append(int(r))

    def local(r):
        ranks = comms[int(T["comm"][r])].ranks if int(T["comm"][r]) in comms else ()
        rk = int(T["rank"][r])
        return ranks.index(rk) if rk in ranks else rk

    for k, r in enumerate(rows):
        lower = [m for m in by_inst[int(T["instance"][r])] if local(m) <= local(r)
                 and (T["sent"][m] > 0 or T["recvd"][m] > 0)]
        last = max(lower, key=lambda m: enter[m])
        cause_loc[k], cause_time[k] = int(T["loc"][last]), enter[last]
    out.add("mpi_earlyscan", inst["loc"], inst["cnode"], inst["enter"], inst["wait"], cause_loc, cause_time,
            "the last of the lower ranks to enter the scan")


def _omp_barriers(ctx, out: _Collector) -> None:
    bw = omp_barrier_wait_instances(ctx)
    if not len(bw):
        return
    B = ctx.table("omp_barriers")
    cause = _member_of(B, bw["instance"], np.ones(len(B), bool), np.asarray(B["enter"], np.float64), "max")
    ok = cause >= 0
    c = np.maximum(cause, 0)
    out.add(np.where(bw["implicit"], "omp_ibarrier_wait", "omp_ebarrier_wait"), bw["loc"], bw["cnode"], bw["enter"],
            bw["wait"], np.where(ok, np.asarray(B["loc"], np.int64)[c], -1),
            np.where(ok, np.asarray(B["enter"], np.float64)[c], np.nan), "the last thread to enter the barrier")


def _locks(ctx, out: _Collector) -> None:
    lc = omp_lock_contention_instances(ctx)
    if not len(lc):
        return
    L = ctx.table("locks")
    proc, lock, order = (np.asarray(L[k], np.int64) for k in ("process", "lock", "order"))
    o = np.lexsort((order, lock, proc))
    prev = np.full(len(L), -1, np.int64)
    same = (proc[o][1:] == proc[o][:-1]) & (lock[o][1:] == lock[o][:-1])
    prev[o[1:][same]] = o[:-1][same]
    holder = prev[np.asarray(lc["row"], np.int64)]
    ok = holder >= 0
    h = np.maximum(holder, 0)
    role = ctx.cnode_role()[lc["cnode"]]
    api = role == int(Role.OMP_LOCK_API)
    prop = np.where(api, "omp_lock_contention_api", "omp_lock_contention_critical")
    out.add(prop, lc["loc"], lc["cnode"], lc["enter"], lc["wait"], np.where(ok, np.asarray(L["loc"], np.int64)[h], -1),
            np.where(ok, np.asarray(L["prev_release_time"], np.float64)[lc["row"]], np.nan),
            "the previous holder's release")


def _fork(ctx, out: _Collector) -> None:
    fj = omp_fork_join_instances(ctx)
    keep = ~np.asarray(fj["master"], bool) & (np.asarray(fj["fork"]) > 0)
    if not keep.any():
        return
    teams = ctx.table("omp_teams")
    t = np.asarray(fj["team"], np.int64)
    fork_time = np.asarray(teams["fork_time"], np.float64)[t]
    out.add("omp_fork", fj["loc"], fj["cnode"], fork_time, fj["fork"], np.asarray(teams["master_loc"], np.int64)[t],
            fork_time, "the master's FORK", keep=keep)


def _idle(ctx, out: _Collector) -> None:
    teams = ctx.table("omp_teams")
    if not len(teams):
        return
    proc = np.asarray(ctx.location_process, np.int64)
    thread = np.asarray(ctx.location_thread, np.int64)
    for p in np.unique(np.asarray(teams["process"], np.int64)).tolist():
        locs = np.flatnonzero(proc == p)
        if len(locs) < 2:
            continue
        master = int(locs[np.argmin(thread[locs])])
        workers = [int(x) for x in locs if x != master]
        seg_start, seg_end, seg_cnode = idle_segments(ctx, master)
        n = len(seg_start)
        for w in workers:
            out.add("omp_idle_threads", np.full(n, w), seg_cnode, seg_start, seg_end - seg_start,
                    np.full(n, master), seg_end, "the master thread working alone (until its next call or FORK)",
                    end=seg_end)


def idle_segments(ctx, master: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The master's serial time (outside its teams, FORK to JOIN) cut at its ENTERs and EXITs: (start, end,
    call path) of each piece with time, consecutive pieces of one call path merged."""
    ev = ctx.trace.events(master)
    parent = np.asarray(ctx.calltree.parent, np.int64)
    region = np.asarray(ctx.calltree.region, np.int64)
    child = {(int(pa), int(r)): c for c, (pa, r) in enumerate(zip(parent.tolist(), region.tolist()))}
    unknown = -2  # a call path the call tree does not have (cannot happen on the replay's own trace)
    stack = [0 if ctx.synthetic_root else -1]
    depth = 0
    starts, ends, nodes = [], [], []
    times, types, a = ev.time.tolist(), ev.type.tolist(), ev.a.tolist()
    prev = times[0] if times else 0.0
    exits = {int(t) for t in EXIT_TYPES}
    for t, ty, arg in zip(times, types, a):
        if depth == 0 and t > prev and stack[-1] >= 0:
            if nodes and nodes[-1] == stack[-1] and ends[-1] == prev:
                ends[-1] = t
            else:
                starts.append(prev), ends.append(t), nodes.append(stack[-1])
        prev = t
        if ty == EventType.ENTER:
            stack.append(child.get((stack[-1], int(arg)), unknown) if stack[-1] != unknown else unknown)
        elif ty in exits:
            if len(stack) > 1:
                stack.pop()
        elif ty == EventType.OMP_FORK:
            depth += 1
        elif ty == EventType.OMP_JOIN:
            depth = max(depth - 1, 0)
    return np.array(starts, np.float64), np.array(ends, np.float64), np.array(nodes, np.int64)
