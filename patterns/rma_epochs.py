"""MPI one-sided communication (format 2.3): the matching of epochs and the formulas of the RMA wait states,
pair-wise synchronisation counts and one-sided counts, from the ``mpi_rma_ops`` table.  The properties that
report them are in :mod:`patterns.mpi_rma`; the definitions in docs/analysis.md ("MPI one-sided communication").

Matching follows MPI: the n-th CREATE / FENCE / FREE of a window on each process of its communicator are one
collective instance (only complete instances of at least two processes count); the k-th START of origin o
whose group holds target t pairs with the k-th POST of t whose group holds o; a transfer belongs to the epoch
its origin has open on the window (after the origin's last collective synchronisation or START, before the
next); a lock epoch is LOCK .. UNLOCK of one target on one location (LOCK_ALL .. UNLOCK_ALL: a shared epoch on
every process of the window).  Everything is vectorised over the rows: the collective synchronisations by NumPy
grouping, the epochs by the jitted walk and lock queue of ``patterns/kernels/rma.py`` and NumPy joins; the slow
reference is ``tests/patterns/rma_reference.py``.
"""

from __future__ import annotations


import numpy as np

from tracefmt.layout import EventType, RmaSync, RmaSyncFlag

from .api import Severity
from .instances import cached
from .kernels import rma as K

PUT, GET, ATOMIC, SYNC = (int(EventType.MPI_RMA_PUT), int(EventType.MPI_RMA_GET), int(EventType.MPI_RMA_ATOMIC),
                          int(EventType.MPI_RMA_SYNC))
ACTIVE_KINDS = (RmaSync.FENCE, RmaSync.POST, RmaSync.START, RmaSync.COMPLETE, RmaSync.WAIT, RmaSync.TEST)
PASSIVE_KINDS = (RmaSync.LOCK, RmaSync.UNLOCK, RmaSync.LOCK_ALL, RmaSync.UNLOCK_ALL, RmaSync.FLUSH, RmaSync.SYNC)
_COLLECTIVE_KINDS = (RmaSync.CREATE, RmaSync.FENCE, RmaSync.FREE)
_NO_TIME = -np.inf


class _Sink:
    """The instances of one metric: (cnode, location, value) and, for the time line, where each wait starts and
    the location and time of the event that ended it (-1 / NaN for counts)."""

    FIELDS = ("cnode", "loc", "value", "start", "cause_loc", "cause_time")

    def __init__(self):
        self.parts = []

    def add_many(self, cnode, loc, value, start=None, cause_loc=None, cause_time=None) -> None:
        value = np.asarray(value, np.float64)
        n = len(value)
        keep = (value > 0) & (np.asarray(cnode) >= 0)
        cols = (cnode, loc, value, np.full(n, np.nan) if start is None else start,
                np.full(n, -1) if cause_loc is None else cause_loc,
                np.full(n, np.nan) if cause_time is None else cause_time)
        dts = (np.int64, np.int64, np.float64, np.float64, np.int64, np.float64)
        self.parts.append(tuple(np.asarray(x)[keep].astype(dt) for x, dt in zip(cols, dts)))

    def columns(self) -> dict[str, np.ndarray]:
        dts = (np.int64, np.int64, np.float64, np.float64, np.int64, np.float64)
        return {f: np.concatenate([p[k] for p in self.parts]) if self.parts else np.zeros(0, dt)
                for k, (f, dt) in enumerate(zip(self.FIELDS, dts))}

    def severity(self) -> Severity:
        c = self.columns()
        return Severity(c["cnode"], c["loc"], c["value"])


_METRICS = ("wait_at_create", "wait_at_free", "wait_at_fence", "early_fence", "sync_late_post", "comm_late_post",
            "early_wait", "late_complete", "sync_lock", "comm_lock", "pairsync", "pairsync_unneeded")
#: the synchronisations of general active target and passive target epochs (matched by the epoch loops)
_EPOCH_KINDS = (RmaSync.POST, RmaSync.START, RmaSync.COMPLETE, RmaSync.WAIT, RmaSync.TEST, RmaSync.LOCK,
                RmaSync.UNLOCK, RmaSync.LOCK_ALL, RmaSync.UNLOCK_ALL)


def rma_instances(ctx) -> dict[str, Severity]:
    """Every RMA wait state and pair-wise synchronisation count, by metric key (see ``_METRICS``)."""
    return {k: s.severity() for k, s in _sinks(ctx).items()}


def rma_waits(ctx) -> dict[str, dict[str, np.ndarray]]:
    """The wait-state instances by metric key: ``cnode``, ``loc``, ``value`` (seconds), ``start`` (of the
    waiting interval), ``cause_loc`` and ``cause_time`` (the event whose lateness ended it)."""
    return {k: s.columns() for k, s in _sinks(ctx).items() if not k.startswith("pairsync")}


def _sinks(ctx) -> dict[str, _Sink]:
    return cached(ctx, "patterns.mpi_rma.instances", lambda: _compute(ctx))


def _argmax_per(group, value, n) -> np.ndarray:
    """Per group id 0..n-1, the index of its row with the largest value (the first such row), -1 if none."""
    best = np.full(n, -1, np.int64)
    order = np.lexsort((np.arange(len(group)), -value, group))
    g = group[order]
    first = np.ones(len(g), bool)
    first[1:] = g[1:] != g[:-1]
    best[g[first]] = order[first]
    return best


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
        return out
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
    return out


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
    last_in = cl[_argmax_per(inst, enter[ci], k)][inst]  # the member that entered last: the cause
    for kk, key in ((RmaSync.CREATE, "wait_at_create"), (RmaSync.FREE, "wait_at_free"),
                    (RmaSync.FENCE, "wait_at_fence")):
        m = ckind == kk
        out[key].add_many(cn[m], cl[m], wait[m], enter[ci][m], last_in[m], lat[m])
    # the latest exit of a transfer to each fence's process in the epoch it closes, and the partners there
    tw, tpeer, torigin, tepoch = w[ti], c["peer"][ti], rank[ti], before[ti]
    nt = len(ti)
    g = group_ids(np.concatenate([tw, cw]), np.concatenate([tpeer, crank]), np.concatenate([tepoch, cseq]))
    ng = int(g.max()) + 1
    last_op = np.full(ng, -np.inf)
    np.maximum.at(last_op, g[:nt], exit_[ti])
    lo = last_op[g[nt:]]
    early = (wait > 0) & (ckind == RmaSync.FENCE) & (enter[ci] < lo) & (lo <= exit_[ci])
    last_t = _argmax_per(g[:nt], exit_[ti], ng)[g[nt:]]  # the last transfer to the fence's process
    out["early_fence"].add_many(cn[early], cl[early], np.minimum(lo[early], lat[early]) - enter[ci][early],
                                enter[ci][early], c["loc"][ti][last_t[early]], lo[early])
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
    """General active target and passive target epochs, from the jitted walk over the rows (``c``: the table's
    columns, each (window, process)'s rows together and in order) and NumPy joins."""
    epochal = (c["op"] == SYNC) & np.isin(c["kind"], [int(k) for k in _EPOCH_KINDS])
    if not epochal.any():
        return
    n = len(c["op"])
    w, rank = c["window"], c["rank"]
    first = np.ones(n, bool)
    first[1:] = (w[1:] != w[:-1]) | (rank[1:] != rank[:-1])
    (acc_start, acc_complete, exp_post, exp_end, lk_lock, lk_unlock, in_acc,
     in_lock) = K.epoch_walk(c["op"].astype(np.int64), c["kind"].astype(np.int64), c["loc"].astype(np.int64),
                             c["peer"].astype(np.int64), first)
    _active_target(c, defs, acc_start, acc_complete, exp_post, exp_end, in_acc, out)
    _lock_contention(c, comm_ranks, lk_lock, lk_unlock, in_lock, out)


def _members(defs, gids):
    """Group expansion: (index into ``gids``, member rank) for every member of every group, in group order."""
    gids = np.asarray(gids, np.int64)
    uniq, inv = np.unique(gids, return_inverse=True)
    members = [np.asarray(defs.groups.get(int(g), ()), np.int64) for g in uniq.tolist()]
    sizes = np.array([len(m) for m in members], np.int64)[inv] if len(gids) else np.zeros(0, np.int64)
    idx = np.repeat(np.arange(len(gids)), sizes)
    starts = np.concatenate([[0], np.cumsum([len(m) for m in members])]).astype(np.int64)
    flat = np.concatenate(members + [np.zeros(0, np.int64)])
    offset = np.arange(len(idx)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return idx, flat[starts[inv[idx]] + offset] if len(idx) else np.zeros(0, np.int64), sizes


def _nth(*keys) -> np.ndarray:
    """Per row, how many earlier rows (in row order) have the same ``keys``."""
    g = group_ids(*keys)
    order = np.argsort(g, kind="stable")
    gs = g[order]
    start = np.ones(len(g), bool)
    start[1:] = gs[1:] != gs[:-1]
    firsts = np.maximum.accumulate(np.where(start, np.arange(len(g)), 0))
    out = np.empty(len(g), np.int64)
    out[order] = np.arange(len(g)) - firsts
    return out


def _join(left, right):
    """For each right row (a tuple of key arrays), the index of the left row with equal keys, -1 if none; left
    keys must be distinct."""
    nl = len(left[0])
    g = group_ids(*(np.concatenate([x, y]) for x, y in zip(left, right)))
    at = np.full(int(g.max()) + 1 if len(g) else 0, -1, np.int64)
    at[g[:nl]] = np.arange(nl)
    return at[g[nl:]]


def _active_target(c, defs, acc_start, acc_complete, exp_post, exp_end, in_acc, out) -> None:
    """Late post (sync and comm), early wait, late complete and the pair-wise counts of general active target
    synchronisation (post / start / complete / wait)."""
    if len(acc_start) == 0 and len(exp_post) == 0:
        return
    w, rank, peer, enter, exit_ = c["window"], c["rank"], c["peer"], c["enter"], c["exit"]
    cn, lc = c["cnode"], c["loc"]
    # (access epoch, target) and (exposure epoch, origin) for every group member, numbered per (window, origin,
    # target) in epoch order: the k-th start of o naming t pairs with the k-th post of t naming o
    ai, at, a_size = _members(defs, peer[acc_start])
    ei, eo, e_size = _members(defs, peer[exp_post])
    a_w, a_o = w[acc_start][ai], rank[acc_start][ai]
    e_w, e_t = w[exp_post][ei], rank[exp_post][ei]
    ak = _nth(a_w, a_o, at)
    ek = _nth(e_w, eo, e_t)
    hit = _join((e_w, eo, e_t, ek), (a_w, a_o, at, ak))
    pa, pe = ai[hit >= 0], ei[hit[hit >= 0]]  # matched (access epoch, exposure epoch) pairs
    done_a = acc_complete >= 0
    # transfers of each access epoch: (epoch, target) with the latest exit
    tr = np.flatnonzero(in_acc >= 0)
    t_a, t_peer = in_acc[tr], peer[tr]
    tg = group_ids(t_a, t_peer)
    n_tg = int(tg.max()) + 1 if len(tg) else 0
    tg_a = np.zeros(n_tg, np.int64)
    tg_peer = np.zeros(n_tg, np.int64)
    tg_a[tg], tg_peer[tg] = t_a, t_peer
    tg_exit = np.full(n_tg, -np.inf)
    np.maximum.at(tg_exit, tg, exit_[tr])
    # at the complete: the group's size; unneeded: members it did not access
    comp = acc_complete[done_a]
    accessed = np.zeros(len(acc_start), np.int64)
    member = _join((ai, at), (tg_a, tg_peer)) >= 0 if n_tg else np.zeros(0, bool)
    np.add.at(accessed, tg_a[member], 1)
    out["pairsync"].add_many(cn[comp], lc[comp], a_size[done_a].astype(np.float64))
    out["pairsync_unneeded"].add_many(cn[comp], lc[comp], (a_size - accessed)[done_a].astype(np.float64))
    # late post: the latest post of the matched exposure epochs, in the complete, else the start, else transfers
    last_post = np.full(len(acc_start), -np.inf)
    np.maximum.at(last_post, pa, enter[exp_post[pe]])
    best = _argmax_per(pa, enter[exp_post[pe]], len(acc_start))
    poster = np.where(best >= 0, lc[exp_post[pe[np.maximum(best, 0)]]], -1) if len(pa) else \
        np.full(len(acc_start), -1)  # the target that posted last: the cause
    ok = done_a & np.isfinite(last_post)
    s_row, c_row = acc_start, np.where(done_a, acc_complete, 0)
    in_c = ok & (enter[c_row] < last_post) & (last_post < exit_[c_row])
    in_s = ok & ~in_c & (enter[s_row] < last_post) & (last_post < exit_[s_row])
    for m, row in ((in_c, c_row[in_c]), (in_s, s_row[in_s])):
        out["sync_late_post"].add_many(cn[row], lc[row], last_post[m] - enter[row], enter[row], poster[m],
                                       last_post[m])
    rest = ok & ~in_c & ~in_s
    lp = last_post[t_a]
    in_t = rest[t_a] & (enter[tr] < lp) & (lp < exit_[tr])
    row = tr[in_t]
    out["comm_late_post"].add_many(cn[row], lc[row], lp[in_t] - enter[row], enter[row], poster[t_a[in_t]], lp[in_t])
    # at the wait: the group's size; unneeded: members that did not access; early wait and late complete from
    # the completed access epochs matched with it
    has_end = exp_end >= 0
    end = np.where(has_end, exp_end, 0)
    waits = has_end & (c["kind"][end] == RmaSync.WAIT)
    t_of_e = rank[exp_post]
    done = done_a[pa]
    da, de = pa[done], pe[done]
    op_to = _join((tg_a, tg_peer), (da, t_of_e[de])) if n_tg else np.full(len(da), -1, np.int64)
    with_op = op_to >= 0
    origins = np.zeros(len(exp_post), np.int64)
    if with_op.any():
        og = group_ids(de[with_op], rank[acc_start][da[with_op]])
        first_of = np.unique(og, return_index=True)[1]
        np.add.at(origins, de[with_op][first_of], 1)
    wr = end[waits]
    out["pairsync"].add_many(cn[wr], lc[wr], e_size[waits].astype(np.float64))
    out["pairsync_unneeded"].add_many(cn[wr], lc[wr], (e_size - origins)[waits].astype(np.float64))
    last_complete = np.full(len(exp_post), -np.inf)
    np.maximum.at(last_complete, de, enter[acc_complete[da]])
    cause_time = last_complete.copy()
    best = _argmax_per(de, enter[acc_complete[da]], len(exp_post))
    completer = np.where(best >= 0, lc[acc_complete[da[np.maximum(best, 0)]]], -1) if len(da) else \
        np.full(len(exp_post), -1)  # the origin that completed last: the cause
    last_complete = np.minimum(last_complete, exit_[end])
    early = waits & (last_complete > enter[end])
    er = end[early]
    out["early_wait"].add_many(cn[er], lc[er], last_complete[early] - enter[er], enter[er], completer[early],
                               cause_time[early])
    last_op = np.full(len(exp_post), -np.inf)
    np.maximum.at(last_op, de[with_op], tg_exit[op_to[with_op]])
    begin = np.maximum(last_op[early], enter[er])
    out["late_complete"].add_many(cn[er], lc[er], last_complete[early] - begin, begin, completer[early],
                                  cause_time[early])


def _lock_contention(c, comm_ranks, lk_lock, lk_unlock, in_lock, out) -> None:
    """Lock competition: a lock epoch that waited, in its lock call, a transfer or its unlock call, for the
    release (unlock) of an earlier conflicting epoch on the same target and window (Scalasca's queue:
    ``kernels.rma.lock_queue``)."""
    keep = np.flatnonzero(lk_unlock >= 0)
    if len(keep) == 0:
        return
    lock_row, unlock_row = lk_lock[keep], lk_unlock[keep]
    w = c["window"][lock_row]
    all_ = c["kind"][lock_row] == RmaSync.LOCK_ALL
    # a LOCK_ALL epoch is a shared epoch on every process of the window
    sizes = np.ones(len(keep), np.int64)
    ranks_of = {}
    for win in np.unique(w[all_]).tolist():
        ranks_of[win] = np.asarray(comm_ranks(win), np.int64)
        sizes[all_ & (w == win)] = len(ranks_of[win])
    e = np.repeat(np.arange(len(keep)), sizes)
    target = np.repeat(c["peer"][lock_row], sizes)
    for win, ranks in ranks_of.items():
        sel = np.flatnonzero(all_ & (w == win))
        pos = np.flatnonzero(np.isin(e, sel))
        target[pos] = np.tile(ranks, len(sel))
    ew = w[e]
    utime, uexit, eloc = c["time"][unlock_row][e], c["exit"][unlock_row][e], c["loc"][lock_row][e]
    order = np.lexsort((uexit, eloc, -utime, target, ew))
    e, ew, target, eloc = e[order], ew[order], target[order], eloc[order]
    first = np.ones(len(e), bool)
    first[1:] = (ew[1:] != ew[:-1]) | (target[1:] != target[:-1])
    exclusive = (c["flags"][lock_row][e] & RmaSyncFlag.EXCLUSIVE) != 0
    # each epoch's transfers, in row order
    tr = np.flatnonzero(in_lock >= 0)
    local = np.full(len(lk_lock), -1, np.int64)
    local[keep] = np.arange(len(keep))
    t_ep = local[in_lock[tr]]
    tr, t_ep = tr[t_ep >= 0], t_ep[t_ep >= 0]
    by = np.lexsort((tr, t_ep))
    ops_row = tr[by]
    ops_ptr = np.concatenate([[0], np.cumsum(np.bincount(t_ep, minlength=len(keep)))]).astype(np.int64)
    row, val, comm, holder = K.lock_queue(first, exclusive, eloc, c["exit"][unlock_row][e], lock_row[e],
                                          unlock_row[e], e, ops_ptr, ops_row, c["enter"], c["exit"],
                                          c["peer"].astype(np.int64), target.astype(np.int64))
    for key, m in (("sync_lock", comm == 0), ("comm_lock", comm == 1)):  # cause: the holder's unlock
        r, h = row[m], holder[m]
        out[key].add_many(c["cnode"][r], c["loc"][r], val[m], c["enter"][r], c["loc"][h], c["exit"][h])


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
