"""The last step of a share's backward inputs (``share_backward``): its points, the ghost points the other
shares sent, its handlings, touches and critical-path links, as one ``patterns.backward.BackwardInputs``.

As ``patterns.backward`` builds them serially, with three differences: a handling exists here only where this
share owns its causer (a pair's causer, an instance's target); a point whose wait state another share handles
gets a touch of kind ``T_SEND`` (its costs go there when the replay passes it); a critical-path link to another
share's point is a *remote link* ``cp_next = -2 - k`` (``rl_share``, ``rl_loc``, ``rl_cut`` of
``ShareBackward``).
"""

from __future__ import annotations

import numpy as np

from patterns import backward as B
from patterns import backward_points as BP
from patterns.array_ops import csr, order_touches

from .share_backward import REMOTE, ShareBackward, combined_key, positions_of

__all__ = ["assemble"]


def _cat(parts: list, dtype) -> np.ndarray:
    return np.concatenate([np.asarray(p, dtype) for p in parts]) if parts else np.zeros(0, dtype)


def assemble(w, ghosts: list) -> ShareBackward:
    """``w``: the share's ``share_backward._Work`` after the fourth exchange; ``ghosts``: what each share sent
    it then (per source share, None for nothing)."""
    from patterns.kernels.backward import T_SEND
    from patterns.kernels.backward_build import barrier_groups

    ctx, s = w.ctx, w.s
    L = ctx.n_locations
    n_own = w.n_own
    g2l = np.full(len(w.loc_owner), -1, np.int64)
    g2l[w.glob] = np.arange(len(w.glob))
    # the ghosts, one share's list after the other's
    got = [(src, p) for src, p in enumerate(ghosts) if p is not None]
    g_kind = _cat([p["kind"] for _, p in got], np.int64)
    g_key = _cat([p["key"] for _, p in got], np.int64)
    g_rank = _cat([p["rank"] for _, p in got], np.int64)
    g_len = _cat([p["map_len"] for _, p in got], np.int64)
    n_g = len(g_kind)
    gm_off = np.zeros(n_g + 1, np.int64)
    np.cumsum(g_len, out=gm_off[1:])
    ghost_src = _cat([np.full(len(p["kind"]), src) for src, p in got], np.int64)
    ghost_pos = _cat([np.arange(len(p["kind"])) for _, p in got], np.int64)
    gid = n_own + np.arange(n_g, dtype=np.int64)
    # pairs whose waiter is a ghost; instance members that are ghosts
    w_pt = w.w_of.copy()
    if w.n_pairs:
        p2p_g = np.flatnonzero(g_kind == 0)
        w_pt[positions_of(w.pair_key, g_key[p2p_g])] = gid[p2p_g]
    grp = w.grp.copy()
    if w.ci is not None:  # a ghost member: its row of its instance's member list
        coll_g = np.flatnonzero(g_kind == 1)
        at = positions_of(combined_key(w.members["instance"], w.members["rank"]),
                          combined_key(g_key[coll_g], g_rank[coll_g]))
        if (at < 0).any():
            raise RuntimeError("share_backward: a ghost member of an instance without its member list here")
        grp[w.members_at + at, 1] = gid[coll_g]
    # points: own, then ghosts (a ghost's location is the waiter's, or -1: only its wait and map are read)
    sp_i = np.zeros((n_own + n_g, 7), w.sp_i.dtype)
    sp_i[:n_own] = w.sp_i
    sp_i[n_own:, 0] = np.where(g_kind == 0, g2l[_cat([p["loc"] for _, p in got], np.int64)], -1)
    sp_i[n_own:, 3] = 1
    sp_i[n_own:, 5] = -1
    sp_f = np.zeros((n_own + n_g, 4))
    sp_f[:n_own] = w.sp_f
    sp_f[n_own:, 0] = _cat([p["wait"] for _, p in got], np.float64)
    sp_loc, sp_cut = sp_i[:, 0].astype(np.int64), sp_i[:, 1].astype(np.int64)
    idx = np.arange(n_own, dtype=np.int64)
    role, ref, ref2 = w.role, w.ref, w.ref2
    cp_next = np.full(n_own, -1, np.int64)
    links = ([], [], [])  # remote links: share, global location, cut

    def link(share, gloc, cut):
        base = len(links[0]) and sum(len(x) for x in links[0])
        for lst, v in zip(links, (share, gloc, cut)):
            lst.append(np.asarray(v, np.int64))
        return -2 - (base + np.arange(len(share), dtype=np.int64))

    hs, members = [], []
    if w.n_pairs:
        good = np.flatnonzero(w.alive & w.c_own)
        hs.append((np.full(len(good), BP.H_P2P), w.pair_type[good], w_pt[good], w.c_of[good], np.full(len(good), 2)))
        k = np.flatnonzero(w.alive & w.w_own)
        here = w.c_own[k]
        cp_next[w.w_of[k[here]]] = w.c_of[k[here]]
        far = k[~here]
        cp_next[w.w_of[far]] = link(w.partner[far], w.glob[w.c_loc[far]], w.c_cut[far])
    if w.ci is not None and len(w.exists):
        ci, inst, mem = w.ci, w.inst, w.members
        handled = w.exists & w.t_own
        gi = np.flatnonzero(handled)
        t_pt = ci["own_point"][positions_of(combined_key(ci["instance"], ci["rank"]),
                                            combined_key(inst["instance"][gi], inst["t_rank"][gi]))]
        hs.append((np.full(len(gi), BP.H_COLL), inst["type"][gi], t_pt, gi, w.n_m[gi]))
        rows = w.members_at + np.flatnonzero(handled[mem["local_inst"]])  # by instance, then rank
        rows = rows[grp[rows, 1] >= 0]
        if (grp[rows, 1] == REMOTE).any():
            raise RuntimeError("share_backward: a member of an instance handled here sent no ghost point")
        members.append(grp[rows, 1])
        # the critical path of a waiting own member goes on at its instance's target
        m = np.flatnonzero((ci["own_point"] >= 0) & w.exists[ci["local_inst"]])
        g = ci["local_inst"][m]
        p = ci["own_point"][m]
        waits = (sp_f[p, 0] > 0) & (ci["rank"][m] != inst["t_rank"][g])
        here = waits & w.t_own[g]
        if here.any():
            cp_next[p[here]] = ci["own_point"][positions_of(combined_key(ci["instance"], ci["rank"]),
                                                            combined_key(inst["instance"][g[here]],
                                                                         inst["t_rank"][g[here]]))]
        far = waits & ~w.t_own[g]
        cp_next[p[far]] = link(inst["t_share"][g[far]], inst["t_loc"][g[far]], inst["t_cut"][g[far]])
    latest, n_bm, mp = barrier_groups(role, ref, ref2, 8, cp_next)
    if len(n_bm):
        gi = np.flatnonzero((n_bm > 0) & (latest >= 0))
        hs.append((np.full(len(gi), BP.H_OMPBAR), np.full(len(gi), BP.OMPBARRIER), latest[gi], gi, n_bm[gi]))
        members.append(mp)
    fpt = idx[role == 7]
    if len(fpt):
        master_fork = np.full(int(ref[fpt].max()) + 1, -1, np.int64)
        mf = fpt[ref2[fpt] == 1]
        master_fork[ref[mf]] = mf
        wk = fpt[(ref2[fpt] == 0) & (master_fork[ref[fpt]] >= 0)]
        cp_next[wk] = master_fork[ref[wk]]
    # OpenMP idleness on the own masters of processes with several threads
    loc_rank = np.asarray(ctx.location_process, np.int64)
    threads = np.bincount(loc_rank[w.own_loc], minlength=w.n_ranks)
    thread_of = np.asarray(ctx.location_thread, np.int64)
    is_master = w.own_loc & (thread_of == 0) & (threads[loc_rank] > 1)
    masters = np.flatnonzero(is_master)
    hs.append((np.full(len(masters), BP.H_IDLE), np.full(len(masters), BP.OMPIDLE), np.full(len(masters), -1),
               masters, threads[loc_rank[masters]]))
    fm = fpt[(ref2[fpt] == 1) & is_master[sp_loc[fpt]]] if len(fpt) else fpt
    hs.append((np.full(len(fm), BP.H_IDLE), np.full(len(fm), BP.OMPIDLE), fm, sp_loc[fm], threads[loc_rank[sp_loc[fm]]]))
    h = np.zeros((sum(len(x[0]) for x in hs), 5), np.int64)
    for c in range(5):
        h[:, c] = np.concatenate([np.asarray(x[c], np.int64) for x in hs])
    group = (h[:, 0] == BP.H_COLL) | (h[:, 0] == BP.H_OMPBAR)
    hm_off = np.zeros(len(h) + 1, np.int64)
    hm_off[1:] = np.cumsum(np.where(group, h[:, 4], 0))
    hm_sp = np.concatenate(members).astype(np.int64, copy=False) if members else np.zeros(0, np.int64)
    # the ghosts' handlings (the costs arriving for a ghost go to it)
    hid = np.arange(len(h), dtype=np.int64)
    ghost_h = np.full(n_g, -1, np.int64)
    p2p = hid[h[:, 0] == BP.H_P2P]
    w_here = h[p2p, 2] < n_own
    ghost_h[h[p2p[~w_here], 2] - n_own] = p2p[~w_here]
    grp_h = np.repeat(hid, np.diff(hm_off))
    gm = hm_sp >= n_own
    ghost_h[hm_sp[gm] - n_own] = grp_h[gm]
    # touches, per location from its last cut back (the end of a location: int64 max)
    idle = hid[h[:, 0] == BP.H_IDLE]
    em = w.em_point
    t_loc = np.concatenate([sp_loc[h[p2p[w_here], 2]], sp_loc[h[p2p, 3]], sp_loc[hm_sp[~gm]], h[idle, 3], sp_loc[em]])
    t_cut = np.concatenate([sp_cut[h[p2p[w_here], 2]], sp_cut[h[p2p, 3]], sp_cut[hm_sp[~gm]],
                            np.where(h[idle, 2] >= 0, sp_cut[np.maximum(h[idle, 2], 0)] if n_own else 0,
                                     np.iinfo(np.int64).max), sp_cut[em]])
    t_kind = np.repeat(np.array([BP.T_WAITER, BP.T_CAUSER, BP.T_MEMBER, BP.T_IDLE, T_SEND], np.int8),
                       [int(w_here.sum()), len(p2p), int((~gm).sum()), len(idle), len(em)])
    t_h = np.concatenate([p2p[w_here], p2p, grp_h[~gm], idle, np.arange(len(em))]).astype(B.handling_dtype(len(h)))
    ot = order_touches(t_loc.astype(np.int64), t_cut.astype(np.int64), L)
    # where the critical path starts (serially: MPI_Finalize's MAXLOC point if every MPI rank has its point)
    n_fin, n_mpi_ranks, fin = w.cp_totals
    start_loc, start_sp, starts = -1, -1, False
    if fin is not None and n_fin >= n_mpi_ranks:
        if w.loc_owner[fin[0]] == s:
            start_loc = int(g2l[fin[0]])
            start_sp = int(np.flatnonzero((sp_loc[:n_own] == start_loc) & (sp_cut[:n_own] == fin[1]))[0])
            starts = True
    elif w.loc_owner[w.last_master] == s:
        start_loc, starts = int(g2l[w.last_master]), True
    P, S = w.P, ctx.table("time_segments")
    n_cuts = np.zeros(L, np.int64)
    if len(P):
        np.maximum.at(n_cuts, np.asarray(P["loc"], np.int64), np.asarray(P["cut"], np.int64))
    js = np.flatnonzero(P["kind"] == BP.CUT_JOIN)
    jo = js[np.lexsort((P["cut"][js], P["loc"][js]))]
    inp = B.BackwardInputs(
        n_cnodes=ctx.n_cnodes, n_locations=L, loc_rank=loc_rank, n_ranks=w.n_ranks,
        seg_off=w.seg_off, seg_cut=np.asarray(S["cut"]), seg_cnode=np.asarray(S["cnode"]),
        seg_time=np.asarray(S["time"], np.float64), n_cuts=n_cuts,
        sp_off=w.sp_off, sp_loc=sp_i[:, 0], sp_cut=sp_i[:, 1], sp_wait=sp_f[:, 0], sp_total=sp_f[:, 1],
        sp_compl=sp_f[:, 2], sp_cnode=sp_i[:, 2], sp_time=sp_f[:, 3], sp_mpi=sp_i[:, 3], sp_sr_kind=sp_i[:, 4],
        sp_sr_arg=sp_i[:, 5], grp_lo=w.grp_lo, grp_hi=w.grp_hi, grp_rank=grp[:, 0], grp_sp=grp[:, 1],
        join_off=csr(P["loc"][jo], L), join_cut=np.asarray(P["cut"][jo], np.int64),
        cp_next=np.concatenate([cp_next, np.full(n_g, -1, np.int64)]),
        cp_stop=np.concatenate([role == 6, np.zeros(n_g, bool)]), cp_start_loc=start_loc, cp_start_sp=start_sp,
        sp_i=sp_i, sp_f=sp_f, grp=grp, h=h, h_kind=h[:, 0], h_type=h[:, 1], h_a=h[:, 2], h_b=h[:, 3], h_n=h[:, 4],
        hm_off=hm_off, hm_sp=hm_sp, tc_off=csr(t_loc, L), tc_kind=t_kind[ot], tc_h=t_h[ot])
    return ShareBackward(
        inp=inp, n_own=n_own, global_location=w.glob, gm_off=gm_off, gm_cnode=_cat([p["map_cnode"] for _, p in got], np.int64),
        gm_value=_cat([p["map_value"] for _, p in got], np.float64), ghost_h=ghost_h, ghost_src=ghost_src,
        ghost_pos=ghost_pos, em_point=em, em_dest=w.em_dest, em_slot=w.em_slot,
        rl_share=_cat(links[0], np.int64), rl_loc=_cat(links[1], np.int64), rl_cut=_cat(links[2], np.int64),
        cp_starts_here=starts, n_points_run=w.n_points_run)
