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

Results come as triples (metric, call path, location, seconds): metric k < 8 is the short-term
cost of kind k (``patterns.backward.KINDS``), 8 + k the long-term one.  Slow reference:
``tests/patterns/backward_reference.py``.
"""

from __future__ import annotations

import numba
import numpy as np

from .backward import (H_COLL, H_OMPBAR, H_P2P, N_KINDS, OMPBARRIER, OMPIDLE, T_CAUSER, T_IDLE, T_MEMBER, T_WAITER,
                       cut_of, diff, local_map, new_map, previous_mpi, previous_omp, runtimes, synchronises,
                       timemaps, waits)

WAIT = N_KINDS  # index of the wait-time input next to the N_KINDS cost inputs


@numba.njit(cache=True, nogil=True)
def _emit(out, n, metric, loc, m, scale):
    """Append ``scale`` x the map ``m`` as (metric, call path, loc, seconds) triples."""
    vals, keys, cnt, _ = m
    om, oc, ol, ov = out
    if n + cnt[0] > om.shape[0]:
        cap = 2 * (n + cnt[0]) + 64
        om2, oc2, ol2, ov2 = (np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64),
                              np.empty(cap, np.float64))
        om2[:n], oc2[:n], ol2[:n], ov2[:n] = om[:n], oc[:n], ol[:n], ov[:n]
        out = (om2, oc2, ol2, ov2)
        om, oc, ol, ov = out
    for j in range(cnt[0]):
        om[n] = metric
        oc[n] = keys[j]
        ol[n] = loc
        ov[n] = scale * vals[keys[j]]
        n += 1
    return out, n


@numba.njit(cache=True, nogil=True)
def _emit_pos(out, n, metric, loc, keys, vals, count):
    """Append ``vals[x]`` at call path ``keys[x]`` (x < count) as (metric, call path, loc, seconds) triples."""
    om, oc, ol, ov = out
    if n + count > om.shape[0]:
        cap = 2 * (n + count) + 64
        om2, oc2, ol2, ov2 = (np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64),
                              np.empty(cap, np.float64))
        om2[:n], oc2[:n], ol2[:n], ov2[:n] = om[:n], oc[:n], ol[:n], ov[:n]
        out = (om2, oc2, ol2, ov2)
        om, oc, ol, ov = out
    for x in range(count):
        om[n] = metric
        oc[n] = keys[x]
        ol[n] = loc
        ov[n] = vals[x]
        n += 1
    return out, n


@numba.njit(cache=True, nogil=True)
def _add_costs(inp, cost, loc, prev, cur, kind, scale):
    """Scalasca's DelayCostMap::addCosts with one scale: the wait states between prev and cur get wait x scale."""
    if not scale > 0:
        return
    lo = prev + 1 if prev >= 0 else inp.sp_off[loc]
    hi = cur if cur >= 0 else inp.sp_off[loc + 1]
    for j in range(lo, hi):
        if inp.sp_wait[j] > 0:
            cost[j, kind] += scale * inp.sp_wait[j]


@numba.njit(cache=True, nogil=True)
def _p2p(inp, tm, h, snap, cost, out, n, maps):
    w, c, typ = inp.h_a[h], inp.h_b[h], inp.h_type[h]
    rwait = inp.sp_wait[w]
    if not rwait > 0:
        return out, n
    lc, lw = inp.sp_loc[c], inp.sp_loc[w]
    loc_m, rem_m, d, scr = maps[0], maps[1], maps[2], maps[3]
    prev = previous_mpi(inp, c, inp.loc_rank[lw])
    _, wsum = local_map(tm, c, prev, loc_m, scr)
    local_map(tm, w, previous_mpi(inp, w, inp.loc_rank[lc]), rem_m, scr)
    dsum = diff(loc_m, rem_m, d)
    den = dsum + wsum
    scale_w = min(rwait / den, 1.0) if den > 0 else 0.0
    if dsum > 0:
        out, n = _emit(out, n, typ, lc, d, scale_w)
    if not den > 0:
        return out, n
    for kind in range(N_KINDS):
        sc_c = snap[h, kind] / den
        if sc_c > 0:
            out, n = _emit(out, n, N_KINDS + kind, lc, d, sc_c)
        _add_costs(inp, cost, lc, prev, c, kind, sc_c + (scale_w if kind == typ else 0.0))
    return out, n


@numba.njit(cache=True, nogil=True)
def _coll(inp, tm, h, cost, out, n, maps, rem, spmap):
    """An MPI collective instance (Scalasca's CalculateCollectiveDelay and CalculateScales)."""
    r, g, typ = inp.h_a[h], inp.h_b[h], inp.h_type[h]
    lr = inp.sp_loc[r]
    rank_r = inp.loc_rank[lr]
    glo, ghi = inp.grp_off[g], inp.grp_off[g + 1]
    # the previous points synchronising with the group: mPrevSp and the more recent ones per rank
    n_rem = 0
    for q in range(glo, ghi):
        rk = inp.grp_rank[q]
        if rk != rank_r and rem[rk] == 0:
            rem[rk] = 1
            n_rem += 1
        spmap[q - glo] = -1
    prev = -1
    j = r - 1
    while j >= inp.sp_off[lr] and n_rem > 0:
        if inp.sp_mpi[j]:
            superset = True
            for q in range(glo, ghi):
                rk = inp.grp_rank[q]
                if rem[rk] == 1 and not synchronises(inp, j, rk):
                    superset = False
                    break
            if superset:
                n_rem = 0
            else:
                for q in range(glo, ghi):
                    rk = inp.grp_rank[q]
                    if rem[rk] == 1 and synchronises(inp, j, rk):
                        rem[rk] = 0
                        n_rem -= 1
                        spmap[q - glo] = j
            prev = j
        j -= 1
    for q in range(glo, ghi):
        rem[inp.grp_rank[q]] = 0
    gm, lm, sm, scr = maps[0], maps[1], maps[2], maps[3]
    _, propw = local_map(tm, r, prev, gm, scr)
    gv, gk, gcnt, _ = gm
    m = gcnt[0]
    delay = np.zeros((N_KINDS + 1, m))
    base = np.zeros(N_KINDS + 1)
    recent = np.zeros((ghi - glo, N_KINDS + 1))  # scales of the members with a more recent synchronisation
    d = np.empty(m)
    for q in range(glo, ghi):
        p = inp.grp_sp[q]
        if p < 0:
            continue
        times = gv
        pw = propw
        if spmap[q - glo] >= 0:
            _, pw = local_map(tm, r, spmap[q - glo], sm, scr)
            times = sm[0]
        dsum = 0.0
        if p == r:
            for x in range(m):
                d[x] = max(times[gk[x]], 0.0)
                dsum += d[x]
        else:
            local_map(tm, p, previous_mpi(inp, p, rank_r), lm, scr)
            lv = lm[0]
            for x in range(m):
                d[x] = max(times[gk[x]] - lv[gk[x]], 0.0)
                dsum += d[x]
        for key in range(N_KINDS + 1):
            inp_v = max(inp.sp_wait[p], 0.0) if key == WAIT else cost[p, key]
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
            out, n = _emit_pos(out, n, typ if key == WAIT else N_KINDS + key, lr, gk, delay[key], m)
    # sum scales: mPrevSp -> base; each more recent point -> base + the scales of the points before it
    lo = prev + 1 if prev >= 0 else inp.sp_off[lr]
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
            if scale > 0 and inp.sp_wait[j] > 0:
                cost[j, kind] += scale * inp.sp_wait[j]
    return out, n


@numba.njit(cache=True, nogil=True)
def _ompbar(inp, tm, h, cost, out, n, maps):
    """An OpenMP barrier instance (Scalasca's CalculateOmpBarrierDelay)."""
    latest = inp.h_a[h]
    ll = inp.sp_loc[latest]
    lprev = previous_omp(tm, ll, latest)
    lm, mm, dm, scr = maps[0], maps[1], maps[2], maps[3]
    _, propw = local_map(tm, latest, lprev, lm, scr)
    sums = np.zeros(N_KINDS + 1)
    lv, lk, lcnt, _ = lm
    delay = np.zeros((N_KINDS + 1, lcnt[0]))
    for q in range(inp.hm_off[h], inp.hm_off[h + 1]):
        p = inp.hm_sp[q]
        local_map(tm, p, previous_omp(tm, inp.sp_loc[p], p), mm, scr)
        dsum = diff(lm, mm, dm)
        dv, dk, dcnt, _ = dm
        for key in range(N_KINDS + 1):
            if key == OMPBARRIER:
                continue
            inp_v = inp.sp_time[latest] - inp.sp_time[p] if key == WAIT else cost[p, key]
            s = inp_v / (dsum + propw) if (dsum + propw) > 0 else 0.0
            sums[key] += s
            if s != 0.0:
                for x in range(lcnt[0]):
                    delay[key, x] += s * dv[lk[x]]
    for key in range(N_KINDS + 1):
        if key == OMPBARRIER:
            continue
        tot = 0.0
        for x in range(lcnt[0]):
            tot += delay[key, x]
        if tot > 0:
            out, n = _emit_pos(out, n, OMPBARRIER if key == WAIT else N_KINDS + key, ll, lk, delay[key], lcnt[0])
    for key in range(N_KINDS + 1):
        if key != OMPBARRIER:
            _add_costs(inp, cost, ll, lprev, latest, OMPBARRIER if key == WAIT else key, sums[key])
    return out, n


@numba.njit(cache=True, nogil=True)
def _idle(inp, tm, h, cost, out, n, maps):
    """Worker threads idle while the master works alone: between the previous join and a fork (or the end)."""
    f, loc, threads = inp.h_a[h], inp.h_b[h], inp.h_n[h]
    prev = previous_omp(tm, loc, f)
    b = inp.sp_cut[f] if f >= 0 else inp.n_cuts[loc] + 1
    a = 0
    if prev >= 0:  # the join after the previous OpenMP point (none: from the start)
        jl, jh = inp.join_off[loc], inp.join_off[loc + 1]
        x = jl + np.searchsorted(inp.join_cut[jl:jh], inp.sp_cut[prev], side="right")
        if x < jh and inp.join_cut[x] <= b:
            a = inp.join_cut[x]
    tmap, wm, dm = maps[0], maps[1], maps[2]
    runtimes(tm, loc, a, b, tmap)
    wsum = waits(tm, loc, cut_of(tm, prev), b, wm)
    dsum = diff(tmap, wm, dm)
    scale = float(threads - 1) if (dsum + wsum) > 0 else 0.0
    if dsum > 0:
        out, n = _emit(out, n, OMPIDLE, loc, dm, scale)
    if wsum > 0:
        _add_costs(inp, cost, loc, prev, f, OMPIDLE, scale)
    return out, n


@numba.njit(cache=True, nogil=True)
def _run(inp, tm, h, snap, cost, out, n, maps, rem, spmap):
    k = inp.h_kind[h]
    if k == H_P2P:
        return _p2p(inp, tm, h, snap, cost, out, n, maps)
    if k == H_COLL:
        return _coll(inp, tm, h, cost, out, n, maps, rem, spmap)
    if k == H_OMPBAR:
        return _ompbar(inp, tm, h, cost, out, n, maps)
    return _idle(inp, tm, h, cost, out, n, maps)


@numba.njit(cache=True, nogil=True)
def delay_costs(inp):
    """All delay costs as ``(metric, cnode, loc, seconds)`` arrays, and the number of handlings that had to
    be forced because the touches never became ready (an inconsistent trace)."""
    L = inp.n_locations
    n_h = inp.h_kind.shape[0]
    cost = np.zeros((inp.sp_loc.shape[0], N_KINDS))
    snap = np.zeros((n_h, N_KINDS))
    ready = np.zeros(n_h, np.bool_)
    done = np.zeros(n_h, np.bool_)
    arrived = np.zeros(n_h, np.int64)
    counted = np.zeros(inp.tc_kind.shape[0], np.bool_)
    waiting = np.full(n_h, -1, np.int64)
    ptr = inp.tc_off[:L].copy()
    C = inp.n_cnodes
    maps = (new_map(C), new_map(C), new_map(C), new_map(C), new_map(C), new_map(C))
    tm = timemaps(inp)
    rem = np.zeros(inp.n_ranks + 1, np.int8)
    max_grp = 1
    for g in range(inp.grp_off.shape[0] - 1):
        max_grp = max(max_grp, inp.grp_off[g + 1] - inp.grp_off[g])
    spmap = np.empty(max_grp, np.int64)
    out = (np.empty(1024, np.int64), np.empty(1024, np.int64), np.empty(1024, np.int64), np.empty(1024, np.float64))
    n = 0
    queue = np.empty(L + n_h + 16, np.int64)
    inq = np.zeros(L, np.bool_)
    forced = 0
    remaining = inp.tc_off[L] - inp.tc_off[0]
    while remaining > 0:
        qn = 0
        for l in range(L):
            if ptr[l] < inp.tc_off[l + 1]:
                queue[qn] = l
                qn += 1
                inq[l] = True
        while qn > 0:
            qn -= 1
            l = queue[qn]
            inq[l] = False
            while ptr[l] < inp.tc_off[l + 1]:
                t = ptr[l]
                h = inp.tc_h[t]
                kind = inp.tc_kind[t]
                if kind == T_WAITER:
                    for k in range(N_KINDS):
                        snap[h, k] = cost[inp.h_a[h], k]
                    ready[h] = True
                    if waiting[h] >= 0 and not inq[waiting[h]]:
                        queue[qn] = waiting[h]
                        qn += 1
                        inq[waiting[h]] = True
                elif kind == T_CAUSER:
                    if not ready[h]:
                        waiting[h] = l
                        break
                    out, n = _run(inp, tm, h, snap, cost, out, n, maps, rem, spmap)
                elif kind == T_IDLE:
                    out, n = _run(inp, tm, h, snap, cost, out, n, maps, rem, spmap)
                else:
                    if not counted[t]:
                        counted[t] = True
                        arrived[h] += 1
                    if not done[h]:
                        if arrived[h] < inp.h_n[h]:
                            break
                        out, n = _run(inp, tm, h, snap, cost, out, n, maps, rem, spmap)
                        done[h] = True
                        for q in range(inp.hm_off[h], inp.hm_off[h + 1]):
                            ml = inp.sp_loc[inp.hm_sp[q]]
                            if ml != l and not inq[ml]:
                                queue[qn] = ml
                                qn += 1
                                inq[ml] = True
                ptr[l] += 1
                remaining -= 1
        if remaining > 0:
            # the queue ran dry with touches left: every location is blocked (an inconsistent trace);
            # force the first blocked touch with the costs as they are now
            for l in range(L):
                if ptr[l] < inp.tc_off[l + 1]:
                    t = ptr[l]
                    h = inp.tc_h[t]
                    if inp.tc_kind[t] == T_CAUSER and not ready[h]:
                        for k in range(N_KINDS):
                            snap[h, k] = cost[inp.h_a[h], k]
                        ready[h] = True
                    elif inp.tc_kind[t] == T_MEMBER and not done[h]:
                        out, n = _run(inp, tm, h, snap, cost, out, n, maps, rem, spmap)
                        done[h] = True
                    forced += 1
                    break
    return out[0][:n], out[1][:n], out[2][:n], out[3][:n], forced

