"""Slow reference of the general active target and passive target epochs of ``patterns.rma_epochs`` (which
uses the jitted walk and queue of ``patterns/kernels/rma.py`` and NumPy joins): a row-by-row matcher with one
dict per row, as the definitions in docs/analysis.md ("MPI one-sided communication") read."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from patterns.api import Severity
from patterns.rma_epochs import _EPOCH_KINDS, _NO_TIME, ATOMIC, GET, PUT, SYNC
from tracefmt.layout import RmaSync, RmaSyncFlag


class Sink:
    """(cnode, location, value) contributions of one metric, one at a time."""

    def __init__(self):
        self.c, self.l, self.v = [], [], []

    def add(self, cnode, loc, value) -> None:
        if value > 0 and cnode >= 0:
            self.c.append(int(cnode))
            self.l.append(int(loc))
            self.v.append(float(value))

    def severity(self) -> Severity:
        return Severity(np.array(self.c, np.int64), np.array(self.l, np.int64), np.array(self.v, np.float64))


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
            handover = reference["unlock"]["enter"]  # the lock may pass to the next epoch from here on
            for ep in scheduled:
                if ep["loc"] == reference["loc"]:
                    continue
                ops = [(op, "comm_lock") for op in ep["ops"] if op["peer"] == target]
                for r, key in ((ep["lock"], "sync_lock"), *ops, (ep["unlock"], "sync_lock")):
                    if r["enter"] <= release < r["exit"]:  # released while it waited
                        out[key].add(r["cnode"], r["loc"], release - r["enter"])
                        break
                    if r["enter"] <= handover < r["exit"] <= release:  # granted inside the holder's unlock
                        out[key].add(r["cnode"], r["loc"], r["exit"] - r["enter"])
                        break
