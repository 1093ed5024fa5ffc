"""Delay costs (Scalasca 2.6's root-cause analysis) as a backward replay over ``patterns.backward`` arrays.

:func:`delay_costs` visits every location's touches (``tc_*``) from its end to its start.  A
point-to-point waiter hands over the costs stored on its wait state (a non-blocking send in
Scalasca's replay); the causer computes when it reaches its own point (after the waiter has: a
blocking receive); collectives and OpenMP barriers are computed once all their member points are
reached.  Each computation:

* takes the causer's *synchronisation interval*: from its previous point that synchronised with
  the waiter (the whole group for a collective, the previous OpenMP point for a barrier) to the
  current one, its time map without the waits in it and without the previous point's call
  (``prune``), and subtracts the waiter's map of its own interval: the **delay** per call path;
* charges **short-term costs**: delay x wait / (delay + waits of the causer in the interval)
  (at most 1 for point-to-point), to the causer's call paths;
* charges **long-term costs**: delay x (costs already stored on the waiter's wait state, per
  kind) / (delay + waits), and stores costs on the causer's own wait states in the interval
  (wait x scale), which are charged when those are handled in turn;
* OpenMP idleness: the master's time between the previous join and a fork (or the end) times
  (threads - 1), its wait states in there carrying the same scale as long-term costs.

Results come as one dense array ``[metric, call path, location]``: metric k < 8 is the short-term
cost of kind k (``patterns.backward.KINDS``), 8 + k the long-term one.  The handlings take only the
arrays they use and run without numba's runtime (``_nrt=False``: they allocate nothing, their scratch
comes from the caller): with it, every array argument costs two atomic reference-count updates per
call and per inlined helper, a third of the replay's time at 10^7 events.  Slow reference:
``tests/patterns/backward_reference.py``.

The replay by shares (``analyzer.distributed``) runs the same loop in rounds (:func:`delay_round`): ghost points
carry another share's waiters and members (their maps sent once, their costs as the replay passes them), and
touches of kind ``T_SEND`` hand an own point's costs to the share handling its wait state.

Size: the handlings and the loop that dispatches them are one kernel: the loop calls each handling with the
few arrays it reads (passing the whole input bundle copies its 45 array structs per call), so splitting them
would only move that coupling across a module boundary.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

from .backward import (H_COLL, H_OMPBAR, H_P2P, HA, HB, HK, HN, HT, N_KINDS, OMPBARRIER, OMPIDLE, P_CNODE, P_COMPL,
                       P_CUT, P_LOC, P_MPI, P_SEG, P_TIME, P_TOTAL, P_WAIT, SEG, SP, T_CAUSER, T_IDLE, T_MEMBER, T_SEND,
                       T_WAITER, after, clear, cut_of, diff, local_map, new_maps, offsets, previous_mpi, previous_omp,
                       runtimes, synchronises, waits)

WAIT = N_KINDS  # index of the wait-time input next to the N_KINDS cost inputs


@numba.njit(cache=True, nogil=True, inline="always")
def _emit(res, metric, loc, mv, mk, m, scale):
    """Add ``scale`` x map ``m`` to ``res[metric, :, loc]``."""
    C = mv.shape[1]
    for j in range(mk[m, 2 * C]):
        c = mk[m, j]
        res[metric, c, loc] += scale * mv[m, c]


@numba.njit(cache=True, nogil=True, inline="always")
def _ghost_map(gm, g, mv, mk, m):
    """Map ``m`` := the interval map another share sent with ghost point ``g`` (``gm``: offsets, call paths,
    seconds; see ``analyzer.distributed.share_backward``)."""
    gm_off, gm_c, gm_v = gm
    clear(mv, mk, m)
    C = mv.shape[1]
    n = 0
    for q in range(gm_off[g], gm_off[g + 1]):
        c = gm_c[q]
        if mk[m, C + c] == 0:
            mk[m, C + c] = 1
            mk[m, n] = c
            n += 1
        mv[m, c] = gm_v[q]
    mk[m, 2 * C] = n


@numba.njit(cache=True, nogil=True, inline="always")
def _add_costs(off, sp_f, cost, crow, loc, prev, cur, kind, scale):
    """Scalasca's DelayCostMap::addCosts with one scale: the wait states between prev and cur get wait x scale."""
    if not scale > 0:
        return
    lo = prev + 1 if prev >= 0 else off[SP, loc]
    hi = cur if cur >= 0 else off[SP, loc + 1]
    for j in range(lo, hi):
        if sp_f[j, P_WAIT] > 0:
            cost[crow[j], kind] += scale * sp_f[j, P_WAIT]


@numba.njit(cache=True, nogil=True, _nrt=False)
def _p2p(h, H, off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, loc_rank, grp_lo, grp_hi, grp, snap, cost, crow, mv, mk, res,
         n_own, gm):
    w, c, typ = H[h, HA], H[h, HB], H[h, HT]
    rwait = sp_f[w, P_WAIT]
    if not rwait > 0:
        return
    lc, lw = sp_i[c, P_LOC], sp_i[w, P_LOC]
    loc_m, rem_m, d, scr = 0, 1, 2, 3
    prev = previous_mpi(off, sp_i, grp_lo, grp_hi, grp, c, loc_rank[lw])
    _, wsum = local_map(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, mv, mk, c, prev, loc_m, scr)
    if w >= n_own:  # the waiter is another share's: the map it sent
        _ghost_map(gm, w - n_own, mv, mk, rem_m)
    else:
        local_map(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, mv, mk, w,
                  previous_mpi(off, sp_i, grp_lo, grp_hi, grp, w, loc_rank[lc]), rem_m, scr)
    dsum = diff(mv, mk, loc_m, rem_m, d)
    den = dsum + wsum
    scale_w = min(rwait / den, 1.0) if den > 0 else 0.0
    if dsum > 0:
        _emit(res, typ, lc, mv, mk, d, scale_w)
    if not den > 0:
        return
    for kind in range(N_KINDS):
        sc_c = snap[h, kind] / den
        if sc_c > 0:
            _emit(res, N_KINDS + kind, lc, mv, mk, d, sc_c)
        _add_costs(off, sp_f, cost, crow, lc, prev, c, kind, sc_c + (scale_w if kind == typ else 0.0))


@numba.njit(cache=True, nogil=True, _nrt=False)
def _coll(h, H, off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, loc_rank, grp_lo, grp_hi, grp, cost, crow, mv, mk, res, rem,
          spmap, n_own, gm, delay, base, recent, d):
    """An MPI collective instance (Scalasca's CalculateCollectiveDelay and CalculateScales); ``delay`` [key, call
    path], ``base`` [key], ``recent`` [member, key] and ``d`` [call path]: scratch."""
    r, g, typ = H[h, HA], H[h, HB], H[h, HT]
    lr = sp_i[r, P_LOC]
    rank_r = loc_rank[lr]
    glo, ghi = grp_lo[g], grp_hi[g]
    # the previous points synchronising with the group: mPrevSp and the more recent ones per rank
    n_rem = 0
    for q in range(glo, ghi):
        rk = grp[q, 0]
        if rk != rank_r and rem[rk] == 0:
            rem[rk] = 1
            n_rem += 1
        spmap[q - glo] = -1
    prev = -1
    j = r - 1
    while j >= off[SP, lr] and n_rem > 0:
        if sp_i[j, P_MPI]:
            superset = True
            for q in range(glo, ghi):
                rk = grp[q, 0]
                if rem[rk] == 1 and not synchronises(sp_i, grp_lo, grp_hi, grp, j, rk):
                    superset = False
                    break
            if superset:
                n_rem = 0
            else:
                for q in range(glo, ghi):
                    rk = grp[q, 0]
                    if rem[rk] == 1 and synchronises(sp_i, grp_lo, grp_hi, grp, j, rk):
                        rem[rk] = 0
                        n_rem -= 1
                        spmap[q - glo] = j
            prev = j
        j -= 1
    for q in range(glo, ghi):
        rem[grp[q, 0]] = 0
    tm, lm, sm, scr = 0, 1, 2, 3
    _, propw = local_map(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, mv, mk, r, prev, tm, scr)
    C = mv.shape[1]
    m = mk[tm, 2 * C]
    for key in range(N_KINDS + 1):
        base[key] = 0.0
        for x in range(m):
            delay[key, x] = 0.0
        for q in range(ghi - glo):  # scales of the members with a more recent synchronisation
            recent[q, key] = 0.0
    for q in range(glo, ghi):
        p = grp[q, 1]
        if p < 0:
            continue
        times = tm
        pw = propw
        if spmap[q - glo] >= 0:
            _, pw = local_map(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, mv, mk, r, spmap[q - glo], sm, scr)
            times = sm
        dsum = 0.0
        if p == r:
            for x in range(m):
                d[x] = max(mv[times, mk[tm, x]], 0.0)
                dsum += d[x]
        else:
            if p >= n_own:  # another share's member: the map it sent
                _ghost_map(gm, p - n_own, mv, mk, lm)
            else:
                local_map(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, mv, mk, p,
                          previous_mpi(off, sp_i, grp_lo, grp_hi, grp, p, rank_r), lm, scr)
            for x in range(m):
                k = mk[tm, x]
                d[x] = max(mv[times, k] - mv[lm, k], 0.0)
                dsum += d[x]
        for key in range(N_KINDS + 1):
            inp_v = max(sp_f[p, P_WAIT], 0.0) if key == WAIT else cost[crow[p], key]
            s = inp_v / (dsum + pw) if (dsum + pw) > 0 else 0.0
            if s != 0.0:
                for x in range(m):
                    delay[key, x] += s * d[x]
            if spmap[q - glo] >= 0:
                recent[q - glo, key] = s
            else:
                base[key] += s
    for key in range(N_KINDS + 1):
        tot = 0.0
        for x in range(m):
            tot += delay[key, x]
        if tot > 0:
            metric = typ if key == WAIT else N_KINDS + key
            for x in range(m):
                res[metric, mk[tm, x], lr] += delay[key, x]
    # sum scales: mPrevSp -> base; each more recent point -> base + the scales of the points before it
    lo = prev + 1 if prev >= 0 else off[SP, lr]
    for key in range(N_KINDS + 1):
        kind = typ if key == WAIT else key
        scale = base[key]
        run = base[key]
        for j in range(lo, r):
            here = False
            more = 0.0
            for q in range(glo, ghi):
                if spmap[q - glo] == j:
                    here = True
                    more += recent[q - glo, key]
            if here:
                scale = run
                run += more
            if scale > 0 and sp_f[j, P_WAIT] > 0:
                cost[crow[j], kind] += scale * sp_f[j, P_WAIT]


@numba.njit(cache=True, nogil=True, _nrt=False)
def _ompbar(h, H, hm_off, hm_sp, off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, cost, crow, mv, mk, res, delay, sums):
    """An OpenMP barrier instance (Scalasca's CalculateOmpBarrierDelay); ``delay``, ``sums``: scratch."""
    latest = H[h, HA]
    ll = sp_i[latest, P_LOC]
    lprev = previous_omp(off, sp_i, ll, latest)
    lm, mm, dm, scr = 0, 1, 2, 3
    _, propw = local_map(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, mv, mk, latest, lprev, lm, scr)
    C = mv.shape[1]
    m = mk[lm, 2 * C]
    for key in range(N_KINDS + 1):
        sums[key] = 0.0
        for x in range(m):
            delay[key, x] = 0.0
    for q in range(hm_off[h], hm_off[h + 1]):
        p = hm_sp[q]
        if p == latest:  # its interval map is lm itself (the same previous point, segments and waits)
            dsum = 0.0
        else:
            local_map(off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, mv, mk, p,
                      previous_omp(off, sp_i, sp_i[p, P_LOC], p), mm, scr)
            dsum = diff(mv, mk, lm, mm, dm)
        den = dsum + propw
        if not den > 0:
            continue
        for key in range(N_KINDS + 1):
            if key == OMPBARRIER:
                continue
            inp_v = sp_f[latest, P_TIME] - sp_f[p, P_TIME] if key == WAIT else cost[crow[p], key]
            if inp_v == 0.0:  # no scale (the costs stored on a point are mostly none): no division
                continue
            s = inp_v / den
            sums[key] += s
            if s != 0.0 and p != latest:  # the latest member delays nobody
                for x in range(m):
                    delay[key, x] += s * mv[dm, mk[lm, x]]
    for key in range(N_KINDS + 1):
        if key == OMPBARRIER:
            continue
        tot = 0.0
        for x in range(m):
            tot += delay[key, x]
        if tot > 0:
            metric = OMPBARRIER if key == WAIT else N_KINDS + key
            for x in range(m):
                res[metric, mk[lm, x], ll] += delay[key, x]
    lo = lprev + 1 if lprev >= 0 else off[SP, ll]  # _add_costs for every key
    for key in range(N_KINDS + 1):
        scale = sums[key]
        if key != OMPBARRIER and scale > 0:
            kind = OMPBARRIER if key == WAIT else key
            for j in range(lo, latest):
                if sp_f[j, P_WAIT] > 0:
                    cost[crow[j], kind] += scale * sp_f[j, P_WAIT]


@numba.njit(cache=True, nogil=True, _nrt=False)
def _idle(h, H, off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, join_off, join_cut, n_cuts, cost, crow, mv, mk, res):
    """Worker threads idle while the master works alone: between the previous join and a fork (or the end)."""
    f, loc, threads = H[h, HA], H[h, HB], H[h, HN]
    prev = previous_omp(off, sp_i, loc, f)
    b = sp_i[f, P_CUT] if f >= 0 else n_cuts[loc] + 1
    a = 0
    if prev >= 0:  # the join after the previous OpenMP point (none: from the start)
        jl, jh = join_off[loc], join_off[loc + 1]
        x = after(join_cut, jl, jh, sp_i[prev, P_CUT])
        if x < jh and join_cut[x] <= b:
            a = join_cut[x]
    tmap, wm, dm = 0, 1, 2
    if prev < 0 or f < 0:  # from the start or to the end
        runtimes(off, seg_cut, seg_cnode, seg_time, loc, a, b, mv, mk, tmap)
        wsum = waits(off, sp_i, sp_f, loc, cut_of(sp_i, prev), b, mv, mk, wm)
    else:
        # runtimes(loc, a, b) and waits(loc, cut of prev, b) written out with their searches narrowed: the
        # segments up to a point's cut end at its P_SEG, and the points after prev follow it (cuts ascending):
        # the same rows without binary searches over the whole location (cache misses in arrays of millions
        # of rows: most of this handling's time)
        lo = sp_i[prev, P_SEG] if a >= sp_i[prev, P_CUT] else off[SEG, loc]
        hi = sp_i[f, P_SEG]
        lo = after(seg_cut, lo, hi, a)
        C = mv.shape[1]
        clear(mv, mk, tmap)
        n = 0
        for r in range(lo, hi):
            c = seg_cnode[r]
            if mk[tmap, C + c] == 0:
                mk[tmap, C + c] = 1
                mk[tmap, n] = c
                n += 1
            mv[tmap, c] += seg_time[r]
        mk[tmap, 2 * C] = n
        clear(mv, mk, wm)
        n = 0
        wsum = 0.0
        j = prev + 1
        while j < off[SP, loc + 1] and sp_i[j, P_CUT] < b:
            w = sp_f[j, P_WAIT]
            if w > 0:
                c = sp_i[j, P_CNODE]
                if mk[wm, C + c] == 0:
                    mk[wm, C + c] = 1
                    mk[wm, n] = c
                    n += 1
                mv[wm, c] += w
                wsum += w
            j += 1
        mk[wm, 2 * C] = n
    dsum = diff(mv, mk, tmap, wm, dm)
    scale = float(threads - 1) if (dsum + wsum) > 0 else 0.0
    if dsum > 0:
        _emit(res, OMPIDLE, loc, mv, mk, dm, scale)
    if wsum > 0:
        _add_costs(off, sp_f, cost, crow, loc, prev, f, OMPIDLE, scale)


@numba.njit(cache=True, nogil=True)
def _run(inp, h, off, snap, cost, crow, mv, mk, res, rem, spmap, delay, sums, recent, dscr, n_own, gm):
    """Handle wait state ``h`` (the rare forced handlings; the hot loop of :func:`_replay` dispatches itself)."""
    k = inp.h[h, HK]
    if k == H_P2P:
        _p2p(h, inp.h, off, inp.seg_cut, inp.seg_cnode, inp.seg_time, inp.sp_i, inp.sp_f, inp.loc_rank, inp.grp_lo,
             inp.grp_hi, inp.grp, snap, cost, crow, mv, mk, res, n_own, gm)
    elif k == H_COLL:
        _coll(h, inp.h, off, inp.seg_cut, inp.seg_cnode, inp.seg_time, inp.sp_i, inp.sp_f, inp.loc_rank, inp.grp_lo,
              inp.grp_hi, inp.grp, cost, crow, mv, mk, res, rem, spmap, n_own, gm, delay, sums, recent, dscr)
    elif k == H_OMPBAR:
        _ompbar(h, inp.h, inp.hm_off, inp.hm_sp, off, inp.seg_cut, inp.seg_cnode, inp.seg_time, inp.sp_i, inp.sp_f,
                cost, crow, mv, mk, res, delay, sums)
    else:
        _idle(h, inp.h, off, inp.seg_cut, inp.seg_cnode, inp.seg_time, inp.sp_i, inp.sp_f, inp.join_off, inp.join_cut,
              inp.n_cuts, cost, crow, mv, mk, res)


class DelayState:
    """What the delay replay keeps between its rounds (one per share; the serial replay has one round).

    ``cost`` ``[row, kind]``: the costs stored on the points, row ``crow[point]``: a row for each own point that
    waits (only those are given costs), then one for each ghost (``n_own`` on: another share's point, whose costs
    arrive), then a zero row that every other point shares (read, never written); ``snap`` ``[handling, kind]``: a
    point-to-point waiter's costs when the replay passed it (rows up to the last point-to-point handling only: a
    row for every handling was 23 MB at 10^7 events); per handling whether it can run (``ready``), ran
    (``done``), how many members arrived; per touch whether it was counted; per handling the location waiting for
    it; per location its next touch; the results ``res`` ``[metric, cnode, location]``.  The two cost arrays are
    zeroed by NumPy: its large arrays are fresh zero pages, faulted in as they are written (numba's ``np.zeros``
    writes every page first, 4 KiB at a time).  A row per point was 92 MB at 10^7 events, half of it for points
    that never wait."""

    def __init__(self, inp, n_own: int | None = None):
        n_h, L = inp.h.shape[0], inp.n_locations
        n_sp = inp.sp_i.shape[0]
        n_own = n_sp if n_own is None else n_own
        waits = np.flatnonzero(inp.sp_wait[:n_own] > 0)
        n_rows = len(waits) + (n_sp - n_own)
        self.crow = np.full(n_sp, n_rows, np.int32 if n_rows < 2**31 else np.int64)  # the zero row
        self.crow[waits] = np.arange(len(waits))
        self.crow[n_own:] = np.arange(len(waits), n_rows)
        self.cost = np.zeros((n_rows + 1, N_KINDS))
        # rows up to the last point-to-point handling (the first handlings, as patterns.backward orders them): only
        # those have a waiter whose costs are taken (T_WAITER, T_CAUSER and ghost waiters are point-to-point only)
        p2p = np.flatnonzero(inp.h_kind == H_P2P)
        self.snap = np.zeros((int(p2p[-1]) + 1 if len(p2p) else 0, N_KINDS))
        self.res = np.zeros((2 * N_KINDS, inp.n_cnodes, L))
        self.flags = np.zeros((3, n_h), np.bool_)  # ready, done, (unused)
        self.arrived = np.zeros(n_h, np.int64)
        self.counted = np.zeros(inp.tc_kind.shape[0], np.bool_)
        self.waiting = np.full(n_h, -1, np.int64)
        self.ptr = inp.tc_off[:L].copy()
        self.forced = 0

    def arrays(self):
        return self.cost, self.crow, self.snap, self.res, self.flags, self.arrived, self.counted, self.waiting, self.ptr

    def costs_of(self, points: np.ndarray) -> np.ndarray:
        """``[len(points), kind]``: the costs stored on ``points``."""
        return self.cost[self.crow[points]]


_NO_GHOSTS = (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0))


def delay_costs(inp):
    """All delay costs as a dense array ``[metric, cnode, loc]`` (metric: kind, or N_KINDS + kind for the
    long-term costs), and the number of handlings that had to be forced because the touches never became
    ready (an inconsistent trace)."""
    st = DelayState(inp)
    n_sp = inp.sp_i.shape[0]
    no = np.zeros(0, np.int64)
    while True:
        left, _, blocked, _ = _replay(inp, *st.arrays(), n_sp, _NO_GHOSTS, no, no, np.zeros((0, N_KINDS)), -1, no)
        if left == 0:
            break
        # the queue ran dry with touches left: every location is blocked (an inconsistent trace); force the first
        # blocked touch with the costs as they are now
        _replay(inp, *st.arrays(), n_sp, _NO_GHOSTS, no, no, np.zeros((0, N_KINDS)), blocked, no)
        st.forced += 1
    return st.res, st.forced


def delay_round(inp, st: DelayState, n_own: int, gm, ghost_h, in_ghost, in_cost, stuck: int):
    """One round of the replay by shares (``analyzer.distributed``): the costs other shares sent for ghost points
    ``in_ghost`` (rows of ``in_cost``) are taken, the locations run until each is done or waits for another
    share, and, if ``stuck`` is a location of this share (the shares wait for each other in a cycle), its blocked
    touch is forced first.  Returns (touches left, touches passed, the lowest location waiting or -1, the
    emits passed: indices into the share's emit table)."""
    emitted = np.empty(inp.tc_kind.shape[0] + 1, np.int64)
    left, moved, blocked, n_em = _replay(inp, *st.arrays(), n_own, gm, ghost_h, np.asarray(in_ghost, np.int64),
                                         np.asarray(in_cost, np.float64).reshape(-1, N_KINDS), stuck, emitted)
    if stuck >= 0:
        st.forced += 1
    return left, moved, blocked, emitted[:n_em]


@numba.njit(cache=True, nogil=True)
def _replay(inp, cost, crow, snap, res, flags, arrived, counted, waiting, ptr, n_own, gm, ghost_h, in_ghost, in_cost, force,
            emitted):
    """Take the incoming costs; if ``force`` >= 0, force location ``force``'s blocked touch and stop; else run
    every location as far as it goes.  Returns (touches left, touches passed, the lowest blocked location or -1,
    the number of emits written to ``emitted``)."""
    L = inp.n_locations
    C = inp.n_cnodes
    H, tc_off, tc_kind, tc_h, hm_off, hm_sp = inp.h, inp.tc_off, inp.tc_kind, inp.tc_h, inp.hm_off, inp.hm_sp
    seg_cut, seg_cnode, seg_time, sp_i, sp_f = inp.seg_cut, inp.seg_cnode, inp.seg_time, inp.sp_i, inp.sp_f
    loc_rank, grp_lo, grp_hi, grp = inp.loc_rank, inp.grp_lo, inp.grp_hi, inp.grp
    join_off, join_cut, n_cuts = inp.join_off, inp.join_cut, inp.n_cuts
    ready, done = flags[0], flags[1]
    mv, mk = new_maps(4, C)
    off = offsets(inp.seg_off, inp.sp_off)
    rem = np.zeros(inp.n_ranks + 1, np.int8)
    max_grp = 1
    for g in range(inp.grp_lo.shape[0]):
        max_grp = max(max_grp, inp.grp_hi[g] - inp.grp_lo[g])
    spmap = np.empty(max_grp, np.int64)
    delay = np.zeros((N_KINDS + 1, C))
    sums = np.zeros(N_KINDS + 1)
    recent = np.zeros((max_grp, N_KINDS + 1))
    dscr = np.zeros(C)
    for x in range(in_ghost.shape[0]):  # costs of ghost points: a waiter's snapshot, or a member arrived
        gp = in_ghost[x]
        h = ghost_h[gp - n_own]
        for k in range(N_KINDS):
            cost[crow[gp], k] = in_cost[x, k]
        if H[h, HK] == H_P2P:
            for k in range(N_KINDS):
                snap[h, k] = in_cost[x, k]
            ready[h] = True
        else:
            arrived[h] += 1
    if force >= 0:
        t = ptr[force]
        h = tc_h[t]
        if tc_kind[t] == T_CAUSER and not ready[h]:
            for k in range(N_KINDS):
                snap[h, k] = cost[crow[H[h, HA]], k]
            ready[h] = True
        elif tc_kind[t] == T_MEMBER and not done[h]:
            _run(inp, h, off, snap, cost, crow, mv, mk, res, rem, spmap, delay, sums, recent, dscr, n_own, gm)
            done[h] = True
    queue = np.empty(L + 16, np.int64)
    inq = np.zeros(L, np.bool_)
    moved = 0
    n_em = 0
    qn = 0
    for l in range(L):
        if ptr[l] < tc_off[l + 1]:
            queue[qn] = l
            qn += 1
            inq[l] = True
    while qn > 0:
        qn -= 1
        l = queue[qn]
        inq[l] = False
        while ptr[l] < tc_off[l + 1]:
            t = ptr[l]
            h = tc_h[t]
            kind = tc_kind[t]
            run = -1
            if kind == T_WAITER:
                for k in range(N_KINDS):
                    snap[h, k] = cost[crow[H[h, HA]], k]
                ready[h] = True
                if waiting[h] >= 0 and not inq[waiting[h]]:
                    queue[qn] = waiting[h]
                    qn += 1
                    inq[waiting[h]] = True
            elif kind == T_CAUSER:
                if not ready[h]:
                    waiting[h] = l
                    break
                run = h
            elif kind == T_IDLE:
                run = h
            elif kind == T_SEND:  # the costs on this point are final: they go to the share handling its wait state
                emitted[n_em] = h
                n_em += 1
            else:
                if not counted[t]:
                    counted[t] = True
                    arrived[h] += 1
                if not done[h]:
                    if arrived[h] < H[h, HN]:
                        break
                    run = h
                    done[h] = True
                    for q in range(hm_off[h], hm_off[h + 1]):
                        p = hm_sp[q]
                        if p >= n_own:
                            continue
                        ml = sp_i[p, P_LOC]
                        if ml != l and not inq[ml]:
                            queue[qn] = ml
                            qn += 1
                            inq[ml] = True
            if run >= 0:  # _run, written out: passing the input bundle copies its 45 array structs per call
                hk = H[run, HK]
                if hk == H_OMPBAR:
                    _ompbar(run, H, hm_off, hm_sp, off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, cost, crow, mv,
                            mk, res, delay, sums)
                elif hk == H_COLL:
                    _coll(run, H, off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, loc_rank, grp_lo, grp_hi, grp, cost,
                          crow, mv, mk, res, rem, spmap, n_own, gm, delay, sums, recent, dscr)
                elif hk == H_P2P:
                    _p2p(run, H, off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, loc_rank, grp_lo, grp_hi, grp, snap,
                         cost, crow, mv, mk, res, n_own, gm)
                else:
                    _idle(run, H, off, seg_cut, seg_cnode, seg_time, sp_i, sp_f, join_off, join_cut, n_cuts,
                          cost, crow, mv, mk, res)
            ptr[l] += 1
            moved += 1
    left = 0
    blocked = -1
    for l in range(L):
        n = tc_off[l + 1] - ptr[l]
        if n > 0:
            left += n
            if blocked < 0:
                blocked = l
    return left, moved, blocked, n_em


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
