"""MPI one-sided communication (format 2.3): the matching of epochs and the formulas of the RMA wait states,
pair-wise synchronisation counts and one-sided counts, from the ``mpi_rma_ops`` table.  The properties that
report them are in :mod:`patterns.mpi_rma`; the definitions in docs/analysis.md ("MPI one-sided communication").

Matching follows MPI: the n-th CREATE / FENCE / FREE of a window on each process of its communicator are one
collective instance (only complete instances of at least two processes count); the k-th START of origin o
whose group holds target t pairs with the k-th POST of t whose group holds o; a transfer belongs to the epoch
its origin has open on the window (after the origin's last collective synchronisation or START, before the
next); a lock epoch is LOCK .. UNLOCK of one target on one location (LOCK_ALL .. UNLOCK_ALL: a shared epoch on
every process of the window).  Epochs are matched in Python, one loop step per synchronisation call (one-sided
traces hold few of them next to their events).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from tracefmt.layout import EventType, RmaSync, RmaSyncFlag

from .api import Severity
from .instances import cached

PUT, GET, ATOMIC, SYNC = (int(EventType.MPI_RMA_PUT), int(EventType.MPI_RMA_GET), int(EventType.MPI_RMA_ATOMIC),
                          int(EventType.MPI_RMA_SYNC))
ACTIVE_KINDS = (RmaSync.FENCE, RmaSync.POST, RmaSync.START, RmaSync.COMPLETE, RmaSync.WAIT, RmaSync.TEST)
PASSIVE_KINDS = (RmaSync.LOCK, RmaSync.UNLOCK, RmaSync.LOCK_ALL, RmaSync.UNLOCK_ALL, RmaSync.FLUSH, RmaSync.SYNC)
_COLLECTIVE_KINDS = (RmaSync.CREATE, RmaSync.FENCE, RmaSync.FREE)
_NO_TIME = -np.inf


class _Sink:
    """(cnode, location, value) contributions of one metric."""

    def __init__(self):
        self.c, self.l, self.v = [], [], []

    def add(self, cnode, loc, value) -> None:
        if value > 0 and cnode >= 0:
            self.c.append(int(cnode))
            self.l.append(int(loc))
            self.v.append(float(value))

    def severity(self) -> Severity:
        return Severity(np.array(self.c, np.int64), np.array(self.l, np.int64), np.array(self.v, np.float64))


_METRICS = ("wait_at_create", "wait_at_free", "wait_at_fence", "early_fence", "sync_late_post", "comm_late_post",
            "early_wait", "late_complete", "sync_lock", "comm_lock", "pairsync", "pairsync_unneeded")


def rma_instances(ctx) -> dict[str, Severity]:
    """Every RMA wait state and pair-wise synchronisation count, by metric key (see ``_METRICS``)."""
    return cached(ctx, "patterns.mpi_rma.instances", lambda: _compute(ctx))


def _compute(ctx) -> dict[str, Severity]:
    T = ctx.table("mpi_rma_ops")
    out = {k: _Sink() for k in _METRICS}
    if len(T) == 0:
        return {k: s.severity() for k, s in out.items()}
    defs = ctx.trace.defs
    cols = {k: np.asarray(T[k]) for k in ("loc", "rank", "cnode", "op", "kind", "flags", "window", "peer", "enter",
                                          "exit", "time")}
    # each process's rows in its order (several threads of one process: by time, then location and row)
    order = np.lexsort((np.arange(len(T)), cols["loc"], cols["time"], cols["rank"], cols["window"]))
    rows = [dict(zip(cols, vals)) for vals in zip(*(cols[k][order].tolist() for k in cols))]
    by_win_rank: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for r in rows:
        by_win_rank[(r["window"], r["rank"])].append(r)

    def comm_ranks(w):
        win = defs.windows.get(w)
        comm = defs.comms.get(win.comm) if win is not None else None
        return tuple(comm.ranks) if comm is not None else ()

    def group(gid):
        return tuple(defs.groups.get(gid, ()))

    transfers = (PUT, GET, ATOMIC)
    # ---- epochs of every (window, process): collective sequence numbers, access / exposure / lock epochs
    colls = defaultdict(list)  # (window, seq) -> rows
    epoch_ops = defaultdict(list)  # (window, origin, fence epoch) -> transfers
    access = defaultdict(list)  # (window, origin) -> [{"start", "complete", "group", "ops"}]
    exposure = defaultdict(list)  # (window, target) -> [{"post", "end", "group"}]
    locks = defaultdict(list)  # (window, target) -> [{"lock", "unlock", "exclusive", "ops", "loc"}]
    for (w, rank), seq_rows in by_win_rank.items():
        n_coll = 0
        acc = None
        held = {}  # (loc, target) -> open lock epoch
        for r in seq_rows:
            op, kind = r["op"], r["kind"]
            if op in transfers:
                epoch_ops[(w, rank, n_coll)].append(r)
                if acc is not None:
                    acc["ops"].append(r)
                for key in ((r["loc"], r["peer"]), (r["loc"], -2)):
                    if key in held:
                        held[key]["ops"].append(r)
                continue
            if op != SYNC:
                continue
            if kind in _COLLECTIVE_KINDS:
                colls[(w, n_coll)].append(r)
                r["seq"] = n_coll
                n_coll += 1
            elif kind == RmaSync.START:
                acc = {"start": r, "complete": None, "group": group(r["peer"]), "ops": [], "origin": rank}
                access[(w, rank)].append(acc)
            elif kind == RmaSync.COMPLETE and acc is not None:
                acc["complete"] = r
                acc = None
            elif kind == RmaSync.POST:
                exposure[(w, rank)].append({"post": r, "end": None, "group": group(r["peer"])})
            elif kind in (RmaSync.WAIT, RmaSync.TEST):
                for e in reversed(exposure[(w, rank)]):
                    if e["end"] is None:
                        e["end"] = r
                        break
            elif kind in (RmaSync.LOCK, RmaSync.LOCK_ALL):
                target = r["peer"] if kind == RmaSync.LOCK else -2
                held[(r["loc"], target)] = {"lock": r, "unlock": None, "ops": [], "loc": r["loc"], "target": target,
                                            "exclusive": bool(r["flags"] & RmaSyncFlag.EXCLUSIVE)}
            elif kind in (RmaSync.UNLOCK, RmaSync.UNLOCK_ALL):
                target = r["peer"] if kind == RmaSync.UNLOCK else -2
                ep = held.pop((r["loc"], target), None)
                if ep is not None:
                    ep["unlock"] = r
                    for t in ([target] if target != -2 else comm_ranks(w)):
                        locks[(w, t)].append(ep)

    _collectives(colls, epoch_ops, comm_ranks, out)
    _active_target(access, exposure, out)
    _lock_contention(locks, out)
    return {k: s.severity() for k, s in out.items()}


def _collectives(colls, epoch_ops, comm_ranks, out) -> None:
    """Wait at create / free / fence, early fence and the fences' pair-wise synchronisations."""
    sink = {RmaSync.CREATE: out["wait_at_create"], RmaSync.FREE: out["wait_at_free"],
            RmaSync.FENCE: out["wait_at_fence"]}
    last_op = {}  # (window, target, epoch) -> latest exit of a transfer to it
    partners = defaultdict(set)  # (window, rank, epoch) -> ranks it accessed or was accessed by
    for (w, origin, epoch), ops in epoch_ops.items():
        for r in ops:
            key = (w, r["peer"], epoch)
            last_op[key] = max(last_op.get(key, _NO_TIME), r["exit"])
            partners[key].add(origin)
            partners[(w, origin, epoch)].add(r["peer"])
    for (w, seq), members in colls.items():
        ranks = comm_ranks(w)
        kinds = {m["kind"] for m in members}
        fence = kinds == {int(RmaSync.FENCE)}
        if fence:  # counted at every fence, as Scalasca does: the processes it may have to wait for
            for m in members:
                out["pairsync"].add(m["cnode"], m["loc"], len(ranks))
                unneeded = len(ranks) - len(partners.get((w, m["rank"], seq), set()) & set(ranks))
                out["pairsync_unneeded"].add(m["cnode"], m["loc"], unneeded)
        complete = len(kinds) == 1 and len(ranks) >= 2 and sorted(m["rank"] for m in members) == sorted(ranks)
        if not complete:
            continue
        latest = max(m["enter"] for m in members)
        earliest_exit = min(m["exit"] for m in members)
        if earliest_exit <= latest:  # the calls do not overlap: no synchronisation to blame
            continue
        for m in members:
            if m["enter"] >= latest:
                continue
            sink[RmaSync(m["kind"])].add(m["cnode"], m["loc"], latest - m["enter"])
            lo = last_op.get((w, m["rank"], seq), _NO_TIME)
            if fence and m["enter"] < lo <= m["exit"]:
                out["early_fence"].add(m["cnode"], m["loc"], min(lo, latest) - m["enter"])


def _active_target(access, exposure, out) -> None:
    """Late post (sync and comm), early wait, late complete and the pair-wise counts of general active target
    synchronisation (post / start / complete / wait)."""
    posts = defaultdict(list)  # (window, target, origin) -> exposure epochs of target naming origin, in order
    for (w, t), eps in exposure.items():
        for e in eps:
            e["accesses"] = []
            for o in e["group"]:
                posts[(w, t, o)].append(e)
    used = defaultdict(int)
    for (w, o), eps in access.items():
        for a in eps:
            matched = []
            for t in a["group"]:
                k = used[(w, t, o)]
                used[(w, t, o)] += 1
                if k < len(posts[(w, t, o)]):
                    e = posts[(w, t, o)][k]
                    matched.append(e)
                    e["accesses"].append(a)
            c = a["complete"]
            if c is None:
                continue
            out["pairsync"].add(c["cnode"], c["loc"], len(a["group"]))
            targets = {r["peer"] for r in a["ops"]}
            out["pairsync_unneeded"].add(c["cnode"], c["loc"], len(set(a["group"]) - targets))
            if not matched:
                continue
            last_post = max(e["post"]["enter"] for e in matched)
            s = a["start"]
            if c["enter"] < last_post < c["exit"]:
                out["sync_late_post"].add(c["cnode"], c["loc"], last_post - c["enter"])
            elif s["enter"] < last_post < s["exit"]:
                out["sync_late_post"].add(s["cnode"], s["loc"], last_post - s["enter"])
            else:
                for r in a["ops"]:
                    if r["enter"] < last_post < r["exit"]:
                        out["comm_late_post"].add(r["cnode"], r["loc"], last_post - r["enter"])
    for eps in exposure.values():
        for e in eps:
            end = e["end"]
            if end is None or end["kind"] != RmaSync.WAIT:
                continue
            done = [a for a in e["accesses"] if a["complete"] is not None]
            t = e["post"]["rank"]
            origins = {a["origin"] for a in done if any(r["peer"] == t for r in a["ops"])}
            out["pairsync"].add(end["cnode"], end["loc"], len(e["group"]))
            out["pairsync_unneeded"].add(end["cnode"], end["loc"], len(set(e["group"]) - origins))
            if not done:
                continue
            last_complete = min(max(a["complete"]["enter"] for a in done), end["exit"])
            if last_complete <= end["enter"]:
                continue
            out["early_wait"].add(end["cnode"], end["loc"], last_complete - end["enter"])
            last_op = max((r["exit"] for a in done for r in a["ops"] if r["peer"] == t), default=_NO_TIME)
            out["late_complete"].add(end["cnode"], end["loc"], last_complete - max(last_op, end["enter"]))


def _lock_contention(locks, out) -> None:
    """Lock competition: a lock epoch that waited, in its lock call, a transfer or its unlock call, for the
    release (unlock) of an earlier conflicting epoch on the same target and window."""
    for (_, target), eps in locks.items():
        # Scalasca's order: latest unlock first; the next one is the earlier holder it may have waited for
        queue = sorted(eps, key=lambda e: (-e["unlock"]["time"], e["loc"], e["unlock"]["exit"]))
        while len(queue) >= 2:
            current = queue.pop(0)
            scheduled = [current]
            reference = None
            if current["exclusive"]:
                reference = queue[0]
            else:
                while queue:
                    if queue[0]["exclusive"]:
                        reference = queue[0]
                        break
                    scheduled.append(queue.pop(0))
            if reference is None:
                break
            release = reference["unlock"]["exit"]
            for ep in scheduled:
                if ep is reference or ep["loc"] == reference["loc"]:
                    continue
                for r, key in ((ep["lock"], "sync_lock"), *((op, "comm_lock") for op in ep["ops"] if op["peer"] == target),
                               (ep["unlock"], "sync_lock")):
                    if r["enter"] <= release < r["exit"]:
                        out[key].add(r["cnode"], r["loc"], release - r["enter"])
                        break


def rma_events(ctx, ops, kinds=(), weigh: str = "") -> Severity:
    """``mpi_rma_ops`` rows of the event types ``ops`` (and for MPI_RMA_SYNC the RmaSync ``kinds``) at their call,
    counted, or weighed by the bytes ``weigh`` names."""
    T = ctx.table("mpi_rma_ops")
    op = np.asarray(T["op"])
    keep = np.isin(op, [o for o in ops if o != SYNC])
    if SYNC in ops:
        keep |= (op == SYNC) & np.isin(np.asarray(T["kind"]), [int(k) for k in kinds])
    keep &= np.asarray(T["cnode"]) >= 0
    if weigh:
        value = sum(np.asarray(T[w], np.float64) for w in weigh.split("+"))[keep]
    else:
        value = np.ones(int(keep.sum()))
    return Severity(np.asarray(T["cnode"])[keep].astype(np.int64), np.asarray(T["loc"])[keep].astype(np.int64),
                    value)


def rma_sync_count(ctx) -> Severity:
    """One-sided synchronisations (a term of ``syncs``)."""
    return rma_events(ctx, (SYNC,), ACTIVE_KINDS + PASSIVE_KINDS)


def rma_comm_count(ctx) -> Severity:
    """One-sided transfers (a term of ``comms``)."""
    return rma_events(ctx, (PUT, GET, ATOMIC))


def rma_bytes(ctx) -> Severity:
    """Bytes of one-sided transfers, sent and received (a term of ``bytes``)."""
    return rma_events(ctx, (PUT, GET, ATOMIC), weigh="sent+recvd")
