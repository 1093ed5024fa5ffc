"""Synchronisation points, wait-state handlings and the arrays the backward replay walks.

The critical path (``patterns.critical_path``) and the delay analysis (``patterns.delay``) follow
Scalasca 2.6 (``src/scout``: SynchpointHandler, TmapCacheHandler, CriticalPath.pattern,
Delay.*.pattern; Böhme et al., ICPP 2010).  Everything they need is derived here once per context
(:func:`backward_inputs`, through :func:`patterns.instances.cached`) from the replay tables:

* the **time maps**: ``time_segments``, the exclusive time per call path between consecutive cut
  points of every location (``analyzer.replay.timeline``), as CSR arrays per location;
* the **synchronisation points** (one row per (location, cut point) that synchronises with another
  location), with Scalasca's wait, total and completion times, the call path of their call and the
  ranks they synchronise with:

  ========================  ============================  =========================================
  point                      wait                          synchronises with
  ========================  ============================  =========================================
  Late Sender receive        the Late Sender wait           the sender (whose SEND is a point too)
  Late Receiver completion   recv posting - send ENTER      the receiver (whose posting is a point)
  MPI collective member      min(T, own exit) - own enter   its communicator (see :func:`_collectives`)
  MPI_Init / MPI_Finalize    0 / the Wait at Finalize      every rank
  OpenMP fork (ENTER par)    0                              the team
  OpenMP barrier (EXIT)      latest enter - own enter       the team
  ========================  ============================  =========================================

* the **handlings**: every wait state as the backward replay meets it (point-to-point pair,
  collective instance, OpenMP barrier instance, OpenMP idleness at a fork), and the **touches**:
  per location, the points the replay visits in backward order and what it does there.

Slow reference of the kernels that walk these: ``tests/patterns/backward_reference.py``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tracefmt.layout import Role

from .array_ops import (csr, dense_ids, group_max, group_min, local_ranks, location_offsets, lookup, operation_in,
                        order_touches, pairs_in, point_order)
from .instances import cached, late_sender_instances, mpi_operations

#: the replay tables the backward replay reads (every pattern using it requires them all)
REQUIRES = ("messages", "collectives", "omp_teams", "omp_team_members", "omp_barriers", "time_segments",
            "sync_points")

# cut-point kinds of sync_points (patterns.tables.CUT_KINDS)
_SEND, _SENDC, _RECV, _RECVP, _COLL, _INIT, _FINI, _FORK, _OBAR, _JOIN = range(1, 11)

#: wait-state kinds: the delay metrics of each (short-term and long-term), in this order
KINDS = ("latesender", "latereceiver", "barrier", "n2n", "12n", "n21", "ompbarrier", "ompidle")
LS, LR, BARRIER, N2N, ONE2N, N2ONE, OMPBARRIER, OMPIDLE = range(8)

# synchronised ranks of a point (sr_kind): none (OpenMP), every rank, one rank (sr_arg), every member
# of collective instance sr_arg, the members of instance sr_arg that are points themselves
SR_NONE, SR_ALL, SR_ONE, SR_GROUP, SR_GROUP_SP = range(5)

# touches: what the backward replay does at a point
T_WAITER, T_CAUSER, T_MEMBER, T_IDLE = range(4)
# handlings
H_P2P, H_COLL, H_OMPBAR, H_IDLE = range(4)


class BackwardInputs(NamedTuple):
    """Plain arrays for the kernels of ``patterns.kernels.backward`` (see the module docstring)."""

    n_cnodes: int
    n_locations: int
    loc_rank: np.ndarray  # int64 [L] MPI rank of each location
    n_ranks: int
    # time maps: per location rows seg_off[l]:seg_off[l+1] sorted by interval
    seg_off: np.ndarray
    seg_cut: np.ndarray
    seg_cnode: np.ndarray  # int32 (the table's column)
    seg_time: np.ndarray
    n_cuts: np.ndarray  # int64 [L] cut points per location
    # synchronisation points, sorted by (loc, cut); per location sp_off[l]:sp_off[l+1]
    sp_off: np.ndarray
    sp_loc: np.ndarray
    sp_cut: np.ndarray
    sp_wait: np.ndarray
    sp_total: np.ndarray
    sp_compl: np.ndarray
    sp_cnode: np.ndarray
    sp_time: np.ndarray  # ENTER of its call (the begin of a collective, the enter of a barrier)
    sp_mpi: np.ndarray  # 1: an MPI point (Scalasca's mSynchRanks), 0: an OpenMP one
    sp_sr_kind: np.ndarray
    sp_sr_arg: np.ndarray
    # members of collective instances (for SR_GROUP / SR_GROUP_SP): ranks ascending
    grp_off: np.ndarray
    grp_rank: np.ndarray
    grp_sp: np.ndarray  # the member's point, -1 if it is none
    # JOIN cut points per location (for the OpenMP idleness interval)
    join_off: np.ndarray
    join_cut: np.ndarray
    # critical path: where it leaves each point (-1: it does not), and where it starts
    cp_next: np.ndarray
    cp_stop: np.ndarray  # bool: the path ends here (MPI_Init)
    cp_start_loc: int
    cp_start_sp: int  # -1: at the end of cp_start_loc
    sp_i: np.ndarray  # int32 (int64 where a value needs it) [n, 7]: the integer columns of the points (sp_loc ... sp_sr_arg are views of it),
    #                   and the first time-map segment after each point's cut
    sp_f: np.ndarray  # float64 [n, 4]: sp_wait, sp_total, sp_compl, sp_time (views of it)
    grp: np.ndarray  # int64 [n, 2]: grp_rank, grp_sp (views of it)
    h: np.ndarray  # int64 [n, 5]: h_kind, h_type, h_a, h_b, h_n (views of it)
    # handlings
    h_kind: np.ndarray  # H_*
    h_type: np.ndarray  # wait-state kind (LS ... OMPIDLE)
    h_a: np.ndarray  # P2P: waiting point; COLL/OMPBAR: the causing point (target); IDLE: the fork point or -1
    h_b: np.ndarray  # P2P: causing point; COLL: the instance (grp rows); IDLE: the location
    h_n: np.ndarray  # members that must arrive (COLL / OMPBAR), number of threads (IDLE)
    hm_off: np.ndarray  # COLL / OMPBAR: member points hm_sp[hm_off[h]:hm_off[h+1]]
    hm_sp: np.ndarray
    # touches per location in backward order: tc_off[l]:tc_off[l+1]
    tc_off: np.ndarray
    tc_kind: np.ndarray
    tc_h: np.ndarray


def backward_inputs(ctx) -> BackwardInputs:
    """The backward replay's inputs for ``ctx`` (computed once; requires :data:`REQUIRES`)."""
    return cached(ctx, "patterns.backward", lambda: _build(ctx))




def _pos(x):
    return np.where(np.isfinite(x) & (x > 0), x, 0.0)


#: the points' columns: packed into ``sp_i`` (int), ``sp_f`` (float) and the role columns (int64, read only while
#: building), with the value of a column a part does not give
_INT_COLS = ("loc", "cut", "cnode", "mpi", "sr_kind", "sr_arg")
_FLOAT_COLS = ("wait", "total", "compl", "time")
_ROLE_COLS = ("role", "ref", "ref2")
_DEFAULT = {"wait": 0.0, "total": 0.0, "compl": 0.0, "time": np.nan, "mpi": 0, "sr_kind": 0, "sr_arg": -1, "role": -1,
            "ref": -1, "ref2": -1}


def _points(**cols) -> dict:
    """One part of the points: its columns (an array per point, or one value for all), ``n`` rows."""
    out = {k: (v if np.ndim(v) == 0 else np.asarray(v)) for k, v in cols.items()}
    out["n"] = len(out["loc"])
    return out


def _p2p(ctx, M, cuts, loc_rank):
    """Late Sender and Late Receiver points (Scalasca 2.6: MpiPattern, SynchpointHandler bws/fws); ``cuts``:
    :func:`patterns.kernels.backward_build.point_cuts`."""
    send_cut, sendc_cut, recv_cut, recvp_cut, _ = cuts
    parts = []
    ls = late_sender_instances(ctx)
    m = np.asarray(ls["message"], np.int64)
    m = m[(recv_cut[m] > 0) & (send_cut[m] > 0)]
    wait = np.minimum(M["send_enter"][m], M["recv_exit"][m]) - M["recv_enter"][m]
    parts.append(_points(loc=M["recv_loc"][m], cut=recv_cut[m], wait=wait, cnode=M["recv_cnode"][m],
                         total=M["recv_exit"][m] - M["recv_enter"][m], time=M["recv_enter"][m],
                         compl=_pos(M["recv_exit"][m] - M["send_exit"][m]), mpi=1,
                         sr_kind=SR_ONE, sr_arg=M["send_rank"][m], role=0,
                         ref=np.arange(len(m))))
    parts.append(_points(loc=M["send_loc"][m], cut=send_cut[m], cnode=M["send_cnode"][m],
                         total=M["send_exit"][m] - M["send_enter"][m], time=M["send_enter"][m],
                         compl=_pos(M["send_exit"][m] - M["recv_exit"][m]), mpi=1,
                         sr_kind=SR_ONE, sr_arg=M["recv_rank"][m], role=1,
                         ref=np.arange(len(m))))
    n_ls = len(m)
    # Late Receiver: blocking standard/synchronous sends and single waits; of a Waitall/Waitsome the
    # largest (unless the call also waited for a late sender); strictly overlapping calls
    ops = mpi_operations(ctx)
    idle = np.where(M["sendc_exit"] <= M["recvp_enter"], 0.0, M["recvp_enter"] - M["sendc_enter"])
    single = operation_in(ops, M["sendc_region"], ("send", "ssend", "wait", "waitany"))
    multi = operation_in(ops, M["sendc_region"], ("waitall", "waitsome"))
    ok = (sendc_cut > 0) & (recvp_cut > 0)
    lr = np.flatnonzero(single & ok & (idle > 0))
    mrows = np.flatnonzero(multi & ok & (idle > 0))  # a call whose largest idle is none is dropped below anyway
    if len(mrows):
        lsm = np.asarray(ls["message"], np.int64)
        ls_call = pairs_in(M["send_loc"][mrows], M["sendc_enter"][mrows], M["recv_loc"][lsm], M["recv_enter"][lsm])
        mrows = mrows[~ls_call]
        # per completing call the largest idle (ties: the last send, as the backward replay meets it first)
        o = mrows[np.lexsort((-M["send_pos"][mrows], -idle[mrows], M["sendc_enter"][mrows], M["send_loc"][mrows]))]
        first = np.ones(len(o), bool)
        first[1:] = (M["send_loc"][o][1:] != M["send_loc"][o][:-1]) | (M["sendc_enter"][o][1:] != M["sendc_enter"][o][:-1])
        top = o[first]
        lr = np.concatenate([lr, top[idle[top] > 0]])
    compl = np.where(M["sendc_exit"][lr] > M["recvp_exit"][lr], 0.0, M["sendc_exit"][lr] - M["recvp_exit"][lr])
    parts.append(_points(loc=M["send_loc"][lr], cut=sendc_cut[lr], wait=idle[lr], cnode=M["sendc_cnode"][lr],
                         total=M["sendc_exit"][lr] - M["sendc_enter"][lr], compl=compl, time=M["sendc_enter"][lr],
                         mpi=1, sr_kind=SR_ONE, sr_arg=M["recv_rank"][lr],
                         role=2, ref=n_ls + np.arange(len(lr))))
    parts.append(_points(loc=M["recv_loc"][lr], cut=recvp_cut[lr], cnode=M["recvp_cnode"][lr],
                         total=M["recvp_exit"][lr] - M["recvp_enter"][lr], time=M["recvp_enter"][lr],
                         compl=_pos(M["recvp_exit"][lr] - M["sendc_exit"][lr]), mpi=1,
                         sr_kind=SR_ONE, sr_arg=M["send_rank"][lr], role=3,
                         ref=n_ls + np.arange(len(lr))))
    return parts, n_ls + len(lr), np.concatenate([np.full(n_ls, LS), np.full(len(lr), LR)])




def _collectives(ctx, C, cuts):
    """MPI collective points (Scalasca 2.6: MpiCommunicationHandler, SynchpointHandler)."""
    if len(C) == 0:
        return [], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), {}
    cut = cuts[4]
    role = ctx.region_role[np.maximum(np.asarray(C["region"], np.int64), 0)]
    ops = mpi_operations(ctx)
    typ = np.full(len(C), -1)
    typ[role == int(Role.MPI_COLL_BARRIER)] = BARRIER
    typ[(role == int(Role.MPI_COLL_ALL2ALL)) & ~operation_in(ops, C["region"], ("alltoallv", "alltoallw"))] = N2N
    typ[role == int(Role.MPI_COLL_ONE2ALL)] = ONE2N
    typ[role == int(Role.MPI_COLL_ALL2ONE)] = N2ONE
    ok = (typ >= 0) & (C["n_members"] >= 2) & (cut > 0) & (C["region"] >= 0)
    if "complete" in C:
        ok &= C["complete"]
    inst = dense_ids(C["instance"])
    bad = np.zeros(inst.max() + 1 if len(inst) else 0, bool)
    np.logical_or.at(bad, inst, ~ok)
    rows = np.flatnonzero(~bad[inst])
    if len(rows) == 0:
        return [], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), {}
    inst = dense_ids(inst[rows])
    ni = int(inst.max()) + 1
    comms = ctx.trace.defs.comms if ctx.trace is not None else {}
    rank = np.asarray(C["rank"], np.int64)[rows]
    local = local_ranks(comms, np.asarray(C["comm"], np.int64)[rows], rank)
    my, end = C["enter"][rows], C["exit"][rows]
    sent, recvd = C["sent"][rows], C["recvd"][rows]
    t = typ[rows]
    itype = np.full(ni, -1)
    itype[inst] = t
    is_root = rank == np.asarray(C["root"], np.int64)[rows]
    root_time = np.full(ni, np.nan)
    root_time[inst[is_root]] = my[is_root]
    root_sent = np.zeros(ni)
    root_sent[inst[is_root]] = sent[is_root]
    root_recvd = np.zeros(ni)
    root_recvd[inst[is_root]] = recvd[is_root]
    root_local = np.full(ni, -1)
    root_local[inst[is_root]] = local[is_root]
    lat0, lat0_who = group_max(inst, my, local, ni)
    ee0 = group_min(inst, end, ni)
    sp = np.zeros(len(rows), bool)
    T = np.full(ni, np.nan)  # the time members wait for
    target = np.full(ni, -1)  # local rank of the member that causes the waits
    ee = np.full(ni, np.inf)
    # barriers: every member; the latest arrival causes the waits
    b = itype == BARRIER
    T[b], target[b], ee[b] = lat0[b], lat0_who[b], ee0[b]
    sp |= b[inst]
    # n-to-n: all members overlap -> all; else receivers entered before the latest sender, and that sender
    lat_s, lat_s_who = group_max(inst, np.where(sent > 0, my, -np.inf), local, ni)
    n = itype == N2N
    over = n & (ee0 > lat0)
    T[over], target[over], ee[over] = lat0[over], lat0_who[over], ee0[over]
    part = n & ~over
    T[part], target[part] = lat_s[part], lat_s_who[part]
    active = (sent > 0) | (recvd > 0)
    n_sp = ((recvd > 0) & (my < lat_s[inst])) | ((sent > 0) & (local == lat_s_who[inst]))
    sp |= over[inst] & active
    sp |= part[inst] & n_sp & active
    ee_part = group_min(inst, np.where(part[inst] & n_sp, end, np.inf), ni)
    ee[part] = ee_part[part]
    # one-to-n: receivers entered before the root, and the root when somebody waited for it
    o = (itype == ONE2N) & (root_sent > 0)
    waits = o[inst] & (recvd > 0) & (my < root_time[inst])
    ee_o = group_min(inst, np.where(waits, end, np.inf), ni)
    T[o], target[o], ee[o] = root_time[o], root_local[o], ee_o[o]
    sp |= waits | (o[inst] & is_root & np.isfinite(ee_o[inst]))
    # n-to-one: the root and the latest sender, when the root entered first
    r = (itype == N2ONE) & (root_recvd > 0)
    pair = r & (root_time < lat_s)
    T[r], target[r] = lat_s[r], lat_s_who[r]
    sp |= pair[inst] & (is_root | (local == lat_s_who[inst]))
    ee_r = group_min(inst, np.where(pair[inst] & (is_root | (local == lat_s_who[inst])), end, np.inf), ni)
    ee[r] = ee_r[r]
    Ti = np.minimum(T[inst], end)
    wait = np.where(sp, np.maximum(0.0, Ti - my), 0.0)
    compl = np.where(sp, np.maximum(0.0, end - np.maximum(ee[inst], Ti)), 0.0)
    # synchronised ranks
    srk = np.full(len(rows), SR_GROUP)
    srk[n[inst]] = SR_GROUP_SP
    one = (o[inst] & ~is_root) | (r[inst])
    srk[one] = SR_ONE
    srk[o[inst] & is_root] = SR_GROUP_SP
    root_rank = np.full(ni, -1)
    root_rank[inst[is_root]] = rank[is_root]
    who_rank = np.full(ni, -1)
    is_target = local == target[inst]
    who_rank[inst[is_target]] = rank[is_target]
    sra = inst.copy()
    sra[o[inst] & ~is_root] = root_rank[inst][o[inst] & ~is_root]
    rr = r[inst] & is_root
    sra[rr] = who_rank[inst][rr]
    rl = r[inst] & ~is_root
    sra[rl] = root_rank[inst][rl]
    pts = _points(loc=C["loc"][rows][sp], cut=cut[rows][sp], wait=wait[sp], total=(end - my)[sp], compl=compl[sp],
                  cnode=C["cnode"][rows][sp], time=my[sp], mpi=1, sr_kind=srk[sp],
                  sr_arg=sra[sp], role=4, ref=inst[sp], ref2=is_target[sp].astype(np.int64))
    member_rank = rank
    return [pts], inst, member_rank, sp, {"type": itype, "rows": rows, "comm": np.asarray(C["comm"])[rows]}


def _init_finalize(ctx, P):
    """MPI_Init (wait 0) and MPI_Finalize (wait until the last rank entered) points on every rank."""
    parts = []
    for kind, fin in ((_INIT, False), (_FINI, True)):
        s = np.flatnonzero(P["kind"] == kind)
        if len(s) == 0:
            continue
        my, end = P["enter"][s], P["time"][s]
        rank = ctx.location_process[P["loc"][s]].astype(np.int64)
        latest = my.max()
        ti = np.minimum(latest, end)
        wait = np.maximum(0.0, ti - my) if fin else np.zeros(len(s))
        compl = np.maximum(0.0, end - np.maximum(end.min(), ti))
        order = np.lexsort((rank, -my))  # MAXLOC: the latest, lowest rank on ties
        first = np.zeros(len(s), np.int64)
        first[order[0]] = 1
        parts.append(_points(loc=P["loc"][s], cut=P["cut"][s], wait=wait, total=end - my, compl=compl,
                             cnode=P["cnode"][s], time=my, mpi=1, sr_kind=SR_ALL,
                             role=5 if fin else 6, ref2=first))
    return parts


def _openmp(ctx, P):
    """Fork points (ENTER of the parallel region) and barrier points (EXIT) of every team member."""
    from .kernels.backward_build import barrier_points

    parts = []
    members, teams, B = ctx.table("omp_team_members"), ctx.table("omp_teams"), ctx.table("omp_barriers")
    s = np.flatnonzero((P["kind"] == _FORK) & (P["row"] >= 0))
    if len(s) and len(teams):
        mr = P["row"][s]
        team = np.asarray(members["team"], np.int64)[mr]
        enter = members["enter"][mr]
        first = group_min(team, enter, len(teams))
        parts.append(_points(loc=P["loc"][s], cut=P["cut"][s], cnode=P["cnode"][s], time=enter,
                             total=_pos(enter - teams["fork_time"][team]), compl=_pos(enter - first[team]),
                             role=7, ref=team,
                             ref2=(members["loc"][mr] == teams["master_loc"][team]).astype(np.int64)))
    ok, s, dense, enter, wait, total, first = barrier_points(
        np.asarray(P["kind"]), np.asarray(P["row"]), np.asarray(P["loc"]),
        np.asarray(B["instance"], np.int64), np.asarray(B["enter"], np.float64), np.asarray(B["exit"], np.float64),
        np.asarray(ctx.location_thread), _OBAR)
    if ok and len(s):
        parts.append(_points(loc=P["loc"][s], cut=P["cut"][s], cnode=P["cnode"][s], time=enter, wait=wait,
                             total=total, role=8, ref=dense, ref2=first))
        return parts
    s = np.flatnonzero((P["kind"] == _OBAR) & (P["row"] >= 0))
    if len(s):  # instance ids the kernel cannot mark
        br = P["row"][s]
        inst = np.asarray(B["instance"], np.int64)[br]
        dense = dense_ids(inst)
        enter = B["enter"][br]
        latest = np.full(int(dense.max()) + 1, -np.inf)
        np.maximum.at(latest, dense, enter)
        wait = latest[dense] - enter
        # the latest arrival causes the waits (the lowest thread among equal arrivals)
        thread = ctx.location_thread[P["loc"][s]].astype(np.int64)
        who = np.full(len(latest), np.iinfo(np.int64).max)
        np.minimum.at(who, dense, np.where(enter == latest[dense], thread, np.iinfo(np.int64).max))
        parts.append(_points(loc=P["loc"][s], cut=P["cut"][s], cnode=P["cnode"][s], time=enter,
                             wait=np.where(wait > 0, wait, 0.0), total=B["exit"][br] - enter, role=8,
                             ref=dense, ref2=(thread == who[dense]).astype(np.int64)))
    return parts


def _build(ctx) -> BackwardInputs:
    from .kernels.backward_build import barrier_groups, max_by_loc, point_cuts  # numba: only when analyzing

    L = ctx.n_locations
    P, S, M, C = ctx.table("sync_points"), ctx.table("time_segments"), ctx.table("messages"), ctx.table("collectives")
    loc_rank = np.asarray(ctx.location_process, np.int64)
    n_ranks = int(loc_rank.max()) + 1 if L else 0
    cuts = point_cuts(np.asarray(P["kind"]), np.asarray(P["row"]), np.asarray(P["cut"]), len(M),
                      len(C))
    p2p, n_pairs, pair_type = _p2p(ctx, M, cuts, loc_rank) if len(M) else ([], 0, np.zeros(0, np.int64))
    coll, c_inst, c_rank, c_sp, c_info = _collectives(ctx, C, cuts)
    parts = p2p + coll + _init_finalize(ctx, P) + _openmp(ctx, P)
    # the points in (location, cut) order, written straight from the parts into the packed arrays the kernels
    # read (one scatter per column instead of a concatenation, a gather and a copy: fresh memory is slow here)
    sizes = [p["n"] for p in parts]
    o = point_order(P, *(np.concatenate([np.asarray(p[k]) for p in parts]) for k in ("loc", "cut")), sizes, L) \
        if parts else np.zeros(0, np.int64)
    n_sp = len(o)
    sp_i, sp_f, rr = _pack(parts, sizes, o, len(S))
    del parts, p2p, coll
    role, ref, ref2 = rr
    sp_loc, sp_cut = sp_i[:, 0], sp_i[:, 1]
    idx = np.arange(n_sp, dtype=np.int64)
    cp_next = np.full(n_sp, -1, np.int64)
    # point-to-point pairs: both points must have survived
    w_of = np.full(n_pairs, -1, np.int64)
    c_of = np.full(n_pairs, -1, np.int64)
    isw = (role == 0) | (role == 2)
    isc = (role == 1) | (role == 3)
    w_of[ref[isw]] = idx[isw]
    c_of[ref[isc]] = idx[isc]
    good = np.flatnonzero((w_of >= 0) & (c_of >= 0))
    cp_next[w_of[good]] = c_of[good]
    hs = [(np.full(len(good), H_P2P), pair_type[good], w_of[good], c_of[good], np.full(len(good), 2))]
    members = []  # per group handling its member points, as (handling order key, points)
    # collective instances: the members' points (by instance and location), the target
    grp_off = np.zeros(1, np.int64)
    grp_rank = grp_sp = np.zeros(0, np.int64)
    cpt = idx[role == 4]
    if len(c_inst):
        ni = int(c_inst.max()) + 1
        locs = np.asarray(C["loc"], np.int64)[c_info["rows"]]
        member_sp = lookup(ref[cpt] * L + sp_loc[cpt], cpt, c_inst * L + locs)
        og = np.lexsort((c_rank, c_inst))
        grp_off = csr(c_inst, ni)
        grp_rank, grp_sp = c_rank[og], member_sp[og]
        target = np.full(ni, -1, np.int64)
        t_pts = cpt[ref2[cpt] == 1]
        target[ref[t_pts]] = t_pts
        inst_of = c_inst[og]
        is_m = grp_sp >= 0
        n_m = np.bincount(inst_of[is_m], minlength=ni)
        ok = (n_m > 0) & (target >= 0)
        gi = np.flatnonzero(ok)
        hs.append((np.full(len(gi), H_COLL), c_info["type"][gi], target[gi], gi, n_m[gi]))
        keep = is_m & ok[inst_of]
        members.append(grp_sp[keep])
        mp = grp_sp[keep]
        waiting = mp[(sp_f[mp, 0] > 0) & (mp != target[inst_of[keep]])]
        cp_next[waiting] = target[ref[waiting]]
    # OpenMP barriers: the latest arrival
    latest, n_m, mp = barrier_groups(role, ref, ref2, 8, cp_next)
    if len(n_m):
        gi = np.flatnonzero((n_m > 0) & (latest >= 0))
        hs.append((np.full(len(gi), H_OMPBAR), np.full(len(gi), OMPBARRIER), latest[gi], gi, n_m[gi]))
        members.append(mp)
    # forks: a worker's path continues on the master
    fpt = idx[role == 7]
    if len(fpt):
        master_fork = np.full(int(ref[fpt].max()) + 1, -1, np.int64)
        mf = fpt[ref2[fpt] == 1]
        master_fork[ref[mf]] = mf
        wk = fpt[(ref2[fpt] == 0) & (master_fork[ref[fpt]] >= 0)]
        cp_next[wk] = master_fork[ref[wk]]
    # OpenMP idleness on the master of every process with several threads: at the end and at each fork
    threads = np.bincount(loc_rank, minlength=n_ranks) if L else np.zeros(0, np.int64)
    thread_of = np.asarray(ctx.location_thread, np.int64)
    is_master = (thread_of == 0) & (threads[loc_rank] > 1) if L else np.zeros(0, bool)
    masters = np.flatnonzero(is_master)
    hs.append((np.full(len(masters), H_IDLE), np.full(len(masters), OMPIDLE), np.full(len(masters), -1), masters,
               threads[loc_rank[masters]]))
    fm = fpt[(ref2[fpt] == 1) & is_master[sp_loc[fpt]]] if len(fpt) else fpt
    hs.append((np.full(len(fm), H_IDLE), np.full(len(fm), OMPIDLE), fm, sp_loc[fm], threads[loc_rank[sp_loc[fm]]]))
    h_kind, h_type, h_a, h_b, h_n = (np.concatenate([np.asarray(x[k], np.int64) for x in hs]) for k in range(5))
    group = (h_kind == H_COLL) | (h_kind == H_OMPBAR)
    hm_off = np.zeros(len(h_kind) + 1, np.int64)
    hm_off[1:] = np.cumsum(np.where(group, h_n, 0))
    hm_sp = np.concatenate(members).astype(np.int64, copy=False) if members else np.zeros(0, np.int64)
    # touches: (location, cut, kind, handling), visited per location from the last cut backwards
    hid = np.arange(len(h_kind), dtype=np.int64)
    p2p = hid[h_kind == H_P2P]
    grp_h = np.repeat(hid, np.diff(hm_off))
    idle = hid[h_kind == H_IDLE]
    t_loc = np.concatenate([sp_loc[h_a[p2p]], sp_loc[h_b[p2p]], sp_loc[hm_sp], h_b[idle]]).astype(np.int64, copy=False)
    t_cut = np.concatenate([sp_cut[h_a[p2p]], sp_cut[h_b[p2p]], sp_cut[hm_sp],
                            np.where(h_a[idle] >= 0, sp_cut[np.maximum(h_a[idle], 0)].astype(np.int64) if n_sp else 0,
                                     np.iinfo(np.int64).max)]).astype(np.int64, copy=False)
    t_kind = np.repeat(np.array([T_WAITER, T_CAUSER, T_MEMBER, T_IDLE], np.int64), [len(p2p), len(p2p), len(hm_sp),
                                                                                     len(idle)])
    t_h = np.concatenate([p2p, p2p, grp_h, idle]).astype(np.int64, copy=False)
    ot = order_touches(t_loc, t_cut, L)
    # critical path start: where the latest rank leaves MPI_Finalize, else the end of the master that ends last
    fin = idx[(role == 5) & (ref2 == 1)]
    n_fin = int((role == 5).sum())
    mpi_ranks = len(np.unique(loc_rank[sp_loc[sp_i[:, 3].astype(bool)]])) if n_sp else 0
    if len(fin) and n_fin >= mpi_ranks:
        start_loc, start_sp = int(sp_loc[fin[0]]), int(fin[0])
    else:
        start_loc, start_sp = _last_master(ctx), -1
    seg_loc = np.asarray(S["loc"])
    n_cuts = np.zeros(L, np.int64)
    if len(P):
        if not max_by_loc(np.asarray(P["loc"]), np.asarray(P["cut"]), n_cuts):
            np.maximum.at(n_cuts, np.asarray(P["loc"], np.int64), np.asarray(P["cut"], np.int64))
    js = np.flatnonzero(P["kind"] == _JOIN)
    jo = js[np.lexsort((P["cut"][js], P["loc"][js]))]
    # the kernels read the columns packed (patterns.kernels.backward: fewer arrays per call); the named columns
    # are views of the packed arrays
    from .kernels.backward import point_segments

    seg_off, seg_cut = location_offsets(seg_loc, L), np.asarray(S["cut"])  # as stored (int32): no copy
    sp_off = location_offsets(sp_loc, L)  # one pass (the points are grouped by location)
    point_segments(seg_off, seg_cut, sp_off, sp_cut, sp_i[:, 6])
    grp = np.empty((len(grp_rank), 2), np.int64)
    grp[:, 0], grp[:, 1] = grp_rank, grp_sp
    h = np.zeros((len(h_kind), 5), np.int64)
    h[:, 0], h[:, 1], h[:, 2], h[:, 3], h[:, 4] = h_kind, h_type, h_a, h_b, h_n
    return BackwardInputs(
        n_cnodes=ctx.n_cnodes, n_locations=L, loc_rank=loc_rank, n_ranks=n_ranks,
        seg_off=seg_off, seg_cut=seg_cut, seg_cnode=np.asarray(S["cnode"]),  # int32 as stored: no 5.5 M-row copy
        seg_time=np.asarray(S["time"], np.float64), n_cuts=n_cuts,
        sp_off=sp_off, sp_loc=sp_i[:, 0], sp_cut=sp_i[:, 1], sp_wait=sp_f[:, 0], sp_total=sp_f[:, 1],
        sp_compl=sp_f[:, 2], sp_cnode=sp_i[:, 2], sp_time=sp_f[:, 3], sp_mpi=sp_i[:, 3], sp_sr_kind=sp_i[:, 4],
        sp_sr_arg=sp_i[:, 5],
        grp_off=grp_off, grp_rank=grp[:, 0], grp_sp=grp[:, 1],
        join_off=csr(P["loc"][jo], L), join_cut=np.asarray(P["cut"][jo], np.int64),
        cp_next=cp_next, cp_stop=role == 6, cp_start_loc=start_loc, cp_start_sp=start_sp,
        sp_i=sp_i, sp_f=sp_f, grp=grp, h=h,
        h_kind=h[:, 0], h_type=h[:, 1], h_a=h[:, 2], h_b=h[:, 3], h_n=h[:, 4], hm_off=hm_off, hm_sp=hm_sp,
        tc_off=csr(t_loc, L), tc_kind=t_kind[ot], tc_h=t_h[ot],  # the counts per location: any order
    )


def _pack(parts: list[dict], sizes: list[int], o: np.ndarray, n_seg: int):
    """The parts' points in the order ``o`` (indices into the parts' rows one part after the other; rows not in
    ``o`` are dropped): ``sp_i`` (the integer columns and room for the segment column), ``sp_f`` (the float
    columns), the role columns (int64, one row each)."""
    n_sp = len(o)
    dest = np.full(sum(sizes), -1, np.int64)
    dest[o] = np.arange(n_sp, dtype=np.int64)
    # int32 where every value fits (fresh memory is faulted in at a cost, and the kernels read its rows over and over)
    lim = np.iinfo(np.int32)
    vals = [p.get(k, _DEFAULT.get(k)) for p in parts if p["n"] for k in ("loc", "cut", "cnode", "sr_kind", "sr_arg")]
    small = n_seg <= lim.max and all(lim.min <= np.min(v) and np.max(v) <= lim.max for v in vals)
    sp_i = np.empty((n_sp, 7), np.int32 if small else np.int64)
    sp_f = np.empty((n_sp, 4), np.float64)
    rr = np.empty((3, n_sp), np.int64)  # read column by column
    where = []  # per part: its rows' positions, and which rows are kept (None: all; a cut met twice keeps the first)
    for d in np.split(dest, np.cumsum(sizes)[:-1]) if sizes else []:
        keep = None if n_sp == len(dest) else d >= 0
        where.append((d if keep is None else d[keep], keep))
    for out, names in ((sp_i, _INT_COLS), (sp_f, _FLOAT_COLS), (rr.T, _ROLE_COLS)):
        for c, k in enumerate(names):
            # a column most points take the default of: one fill, then only the parts that give it
            fill = k in _DEFAULT and 2 * sum(n for p, n in zip(parts, sizes) if k not in p) > n_sp
            if fill:
                out[:, c] = _DEFAULT[k]
            for p, (d, keep) in zip(parts, where):
                if fill and k not in p:
                    continue
                v = p.get(k, _DEFAULT.get(k))
                out[:, c][d] = v if keep is None or np.ndim(v) == 0 else v[keep]
    return sp_i, sp_f, rr


def _last_master(ctx) -> int:
    """The thread-0 location whose last event is the latest (where a path without MPI_Finalize starts)."""
    best, where = -np.inf, 0
    have = set(ctx.trace.location_ids.tolist()) if ctx.trace is not None else set()
    for l in range(ctx.n_locations):
        if ctx.location_thread[l] != 0:
            continue
        t = float(np.max(ctx.incl_time[:, l], initial=0.0))
        span = time_span(ctx.trace, l) if l in have else None
        if span is not None:
            t = span[1]
        if t > best:
            best, where = t, l
    return where


def time_span(trace, loc: int) -> tuple[float, float] | None:
    """(first, last) event time of a location as read (before any --salvage repair), None without events.

    From the trace's index where it has one (``time_range``: no decoding) and nothing was lost in reading;
    otherwise from the decoded events.
    """
    if trace is None or not trace.n_events(loc):
        return None
    if hasattr(trace, "time_range") and not getattr(trace, "problems", None):
        span = trace.time_range(loc)
        if span is not None:
            return span
    t = trace.events(loc).time
    return float(t[0]), float(t[-1])


def time_profile(ctx) -> np.ndarray:
    """Σ of the time maps per (call path, location): the time the backward replay works with."""
    from .kernels.backward_build import profile_sums

    S = ctx.table("time_segments")
    out = np.zeros((ctx.n_cnodes, ctx.n_locations))
    if not profile_sums(np.asarray(S["cnode"]), np.asarray(S["loc"]), np.asarray(S["time"], np.float64), out):
        C, L = out.shape
        out += np.bincount(np.asarray(S["cnode"], np.int64) * L + np.asarray(S["loc"], np.int64),
                           weights=np.asarray(S["time"], np.float64), minlength=C * L).reshape(C, L)
    return out
