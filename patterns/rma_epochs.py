"""MPI one-sided communication (format 2.3): the matching of epochs and the formulas of the RMA wait states,
pair-wise synchronisation counts and one-sided counts, from the ``mpi_rma_ops`` table.  The properties that
report them are in :mod:`patterns.mpi_rma`; the definitions in docs/analysis.md ("MPI one-sided communication").

Matching follows MPI: the n-th CREATE / FENCE / FREE of a window on each process of its communicator are one
collective instance (only complete instances of at least two processes count); the k-th START of origin o
whose group holds target t pairs with the k-th POST of t whose group holds o; a transfer belongs to the epoch
its origin has open on the window (after the origin's last collective synchronisation or START, before the
next); a lock epoch is LOCK .. UNLOCK of one target on one location (LOCK_ALL .. UNLOCK_ALL: a shared epoch on
every process of the window).  Epochs are matched in Python, one loop step per synchronisation call (one-sided
traces hold few of them next to their events); the collective synchronisations (create, fence, free), which
fence-based codes make in every iteration, are computed vectorised.
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
    """(cnode, location, value) contributions of one metric: single ones from the epoch loops, arrays from the
    vectorised collectives."""

    def __init__(self):
        self.c, self.l, self.v = [], [], []
        self.parts = []

    def add(self, cnode, loc, value) -> None:
        if value > 0 and cnode >= 0:
            self.c.append(int(cnode))
            self.l.append(int(loc))
            self.v.append(float(value))

    def add_many(self, cnode, loc, value) -> None:
        keep = (value > 0) & (cnode >= 0)
        self.parts.append((cnode[keep].astype(np.int64), loc[keep].astype(np.int64), value[keep].astype(np.float64)))

    def severity(self) -> Severity:
        parts = [(np.array(self.c, np.int64), np.array(self.l, np.int64), np.array(self.v, np.float64)), *self.parts]
        return Severity(*(np.concatenate([p[k] for p in parts]) for k in range(3)))


_METRICS = ("wait_at_create", "wait_at_free", "wait_at_fence", "early_fence", "sync_late_post", "comm_late_post",
            "early_wait", "late_complete", "sync_lock", "comm_lock", "pairsync", "pairsync_unneeded")
#: the synchronisations of general active target and passive target epochs (matched by the epoch loops)
_EPOCH_KINDS = (RmaSync.POST, RmaSync.START, RmaSync.COMPLETE, RmaSync.WAIT, RmaSync.TEST, RmaSync.LOCK,
                RmaSync.UNLOCK, RmaSync.LOCK_ALL, RmaSync.UNLOCK_ALL)


def rma_instances(ctx) -> dict[str, Severity]:
    """Every RMA wait state and pair-wise synchronisation count, by metric key (see ``_METRICS``)."""
    return cached(ctx, "patterns.mpi_rma.instances", lambda: _compute(ctx))


def group_ids(*cols) -> np.ndarray:
    """Dense id per row of the distinct tuples of ``cols`` (in their sorted order)."""
    n = len(cols[0])
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort(cols[::-1])
    new = np.zeros(n, bool)
    new[0] = True
    for c in cols:
        cs = c[order]
        new[1:] |= cs[1:] != cs[:-1]
    ids = np.empty(n, np.int64)
    ids[order] = np.cumsum(new) - 1
    return ids


def _compute(ctx) -> dict[str, Severity]:
    T = ctx.table("mpi_rma_ops")
    out = {k: _Sink() for k in _METRICS}
    if len(T) == 0:
        return {k: s.severity() for k, s in out.items()}
    defs = ctx.trace.defs
    # each process's rows in its order (several threads of one process: by time, then location and row)
    order = np.lexsort((np.arange(len(T)), np.asarray(T["loc"]), np.asarray(T["time"]), np.asarray(T["rank"]),
                        np.asarray(T["window"])))
    cols = {k: np.asarray(T[k])[order] for k in ("loc", "rank", "cnode", "op", "kind", "flags", "window", "peer",
                                                 "enter", "exit", "time")}

    def comm_ranks(w):
        win = defs.windows.get(w)
        comm = defs.comms.get(win.comm) if win is not None else None
        return tuple(comm.ranks) if comm is not None else ()

    _collectives(cols, comm_ranks, out)
    _epochs(cols, comm_ranks, defs, out)
    return {k: s.severity() for k, s in out.items()}


def _collectives(c, comm_ranks, out) -> None:
    """Wait at create / free / fence, early fence and the fences' pair-wise synchronisations, vectorised over the
    rows (``c``: the table's columns, each (window, process)'s rows together and in order)."""
    n = len(c["op"])
    w, rank, kind, enter, exit_ = c["window"], c["rank"], c["kind"], c["enter"], c["exit"]
    is_t = np.isin(c["op"], (PUT, GET, ATOMIC))
    is_c = (c["op"] == SYNC) & np.isin(kind, [int(k) for k in _COLLECTIVE_KINDS])
    # collective synchronisations before each row on its (window, process): a transfer's fence epoch, a
    # collective's sequence number
    first = np.ones(n, bool)
    first[1:] = (w[1:] != w[:-1]) | (rank[1:] != rank[:-1])
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    cum = np.cumsum(is_c)
    before = cum - is_c - (cum[start] - is_c[start])
    ci, ti = np.flatnonzero(is_c), np.flatnonzero(is_t)
    if len(ci) == 0:
        return
    cw, crank, cseq, ckind = w[ci], rank[ci], before[ci], kind[ci]
    inst = group_ids(cw, cseq)
    k = int(inst.max()) + 1
    latest = np.full(k, -np.inf)
    np.maximum.at(latest, inst, enter[ci])
    earliest_exit = np.full(k, np.inf)
    np.minimum.at(earliest_exit, inst, exit_[ci])
    kmin, kmax = np.full(k, 1 << 30), np.full(k, -1)
    np.minimum.at(kmin, inst, ckind)
    np.maximum.at(kmax, inst, ckind)
    count = np.bincount(inst, minlength=k)
    size = np.zeros(len(ci), np.int64)
    member = np.zeros(len(ci), bool)
    for win in np.unique(cw).tolist():
        sel = cw == win
        ranks = comm_ranks(win)
        size[sel] = len(ranks)
        member[sel] = np.isin(crank[sel], ranks)
    outsider = np.zeros(k, bool)
    outsider[inst[~member]] = True
    complete = (count[inst] == size) & (size >= 2) & (kmin[inst] == kmax[inst]) & ~outsider[inst]
    lat = latest[inst]
    wait = np.where(complete & (earliest_exit[inst] > lat) & (enter[ci] < lat), lat - enter[ci], 0.0)
    cn, cl = c["cnode"][ci], c["loc"][ci]
    for kk, key in ((RmaSync.CREATE, "wait_at_create"), (RmaSync.FREE, "wait_at_free"),
                    (RmaSync.FENCE, "wait_at_fence")):
        m = ckind == kk
        out[key].add_many(cn[m], cl[m], wait[m])
    # the latest exit of a transfer to each fence's process in the epoch it closes, and the partners there
    tw, tpeer, torigin, tepoch = w[ti], c["peer"][ti], rank[ti], before[ti]
    nt = len(ti)
    g = group_ids(np.concatenate([tw, cw]), np.concatenate([tpeer, crank]), np.concatenate([tepoch, cseq]))
    last_op = np.full(int(g.max()) + 1, -np.inf)
    np.maximum.at(last_op, g[:nt], exit_[ti])
    lo = last_op[g[nt:]]
    early = (wait > 0) & (ckind == RmaSync.FENCE) & (enter[ci] < lo) & (lo <= exit_[ci])
    out["early_fence"].add_many(cn[early], cl[early], np.minimum(lo[early], lat[early]) - enter[ci][early])
    # partners: (window, epoch, x, y) for y that accessed x or was accessed by x
    pw = np.concatenate([tw, tw])
    pe = np.concatenate([tepoch, tepoch])
    px = np.concatenate([tpeer, torigin])
    py = np.concatenate([torigin, tpeer])
    pairs = group_ids(pw, pe, px, py)
    uniq = np.unique(pairs, return_index=True)[1]
    fence = ckind == RmaSync.FENCE
    gx = group_ids(np.concatenate([pw[uniq], cw]), np.concatenate([pe[uniq], cseq]), np.concatenate([px[uniq], crank]))
    n_partners = np.bincount(gx[:len(uniq)], minlength=int(gx.max()) + 1)[gx[len(uniq):]]
    out["pairsync"].add_many(cn[fence], cl[fence], size[fence].astype(np.float64))
    out["pairsync_unneeded"].add_many(cn[fence], cl[fence], np.maximum(size - n_partners, 0)[fence].astype(np.float64))


def _epochs(c, comm_ranks, defs, out) -> None:
    """General active target and passive target epochs: a loop over the rows of each (window, process) that has
    such synchronisations (fence-only windows have none)."""
    epochal = (c["op"] == SYNC) & np.isin(c["kind"], [int(k) for k in _EPOCH_KINDS])
    if not epochal.any():
        return
    w, rank = c["window"], c["rank"]
    wanted = set(zip(w[epochal].tolist(), rank[epochal].tolist()))
    pick = np.flatnonzero(np.fromiter(((a, b) in wanted for a, b in zip(w.tolist(), rank.tolist())), bool, len(w)))
    names = list(c)
    rows = [dict(zip(names, vals)) for vals in zip(*(c[k][pick].tolist() for k in names))]
    by_win_rank: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for r in rows:
        by_win_rank[(r["window"], r["rank"])].append(r)

    def group(gid):
        return tuple(defs.groups.get(gid, ()))

    transfers = (PUT, GET, ATOMIC)
    access = defaultdict(list)  # (window, origin) -> [{"start", "complete", "group", "ops"}]
    exposure = defaultdict(list)  # (window, target) -> [{"post", "end", "group"}]
    locks = defaultdict(list)  # (window, target) -> [{"lock", "unlock", "exclusive", "ops", "loc"}]
    for (w, rank), seq_rows in by_win_rank.items():
        acc = None
        held = {}  # (loc, target) -> open lock epoch
        for r in seq_rows:
            op, kind = r["op"], r["kind"]
            if op in transfers:
                if acc is not None:
                    acc["ops"].append(r)
                for key in ((r["loc"], r["peer"]), (r["loc"], -2)):
                    if key in held:
                        held[key]["ops"].append(r)
                continue
            if op != SYNC:
                continue
            if kind == RmaSync.START:
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
    _active_target(access, exposure, out)
    _lock_contention(locks, out)


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
        i = 0  # the queue's head
        while len(queue) - i >= 2:
            current = queue[i]
            i += 1
            scheduled = [current]
            reference = None
            if current["exclusive"]:
                reference = queue[i]
            else:
                while i < len(queue):
                    if queue[i]["exclusive"]:
                        reference = queue[i]
                        break
                    scheduled.append(queue[i])
                    i += 1
            if reference is None:
                break
            release = reference["unlock"]["exit"]
            for ep in scheduled:
                if ep["loc"] == reference["loc"]:
                    continue
                ops = [(op, "comm_lock") for op in ep["ops"] if op["peer"] == target]
                for r, key in ((ep["lock"], "sync_lock"), *ops, (ep["unlock"], "sync_lock")):
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
