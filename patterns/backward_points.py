"""The synchronisation points of the backward replay (``patterns.backward``), part by part.

Each part is a dict of point columns (``points_part``): the Late Sender and Late Receiver pairs of the
``messages`` table, the members of MPI collective instances, MPI_Init and MPI_Finalize, OpenMP forks and
barriers.  :func:`pack_points` writes the parts, in (location, cut) order and each cut once, into the packed
arrays the kernels read.  The functions take the rows they are to turn into points, so the analysis by
shares (``analyzer.distributed.share_backward``) builds a share's points with them: the same columns, the
same arithmetic.
"""

from __future__ import annotations

import numpy as np

from tracefmt.layout import Role

from .array_ops import dense_ids, group_max, group_min, local_ranks, operation_in, pairs_in
from .instances import late_sender_instances, mpi_operations

# cut-point kinds of sync_points (patterns.tables.CUT_KINDS)
CUT_SEND, CUT_SEND_COMPLETE, CUT_RECV, CUT_RECV_REQUEST, CUT_COLLECTIVE, CUT_INIT, CUT_FINALIZE, CUT_FORK, CUT_OMP_BARRIER, \
    CUT_JOIN = range(1, 11)

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


def _pos(x):
    return np.where(np.isfinite(x) & (x > 0), x, 0.0)


#: the points' columns: packed into ``sp_i`` (int), ``sp_f`` (float) and the role columns (int64, read only while
#: building), with the value of a column a part does not give
_INT_COLS = ("loc", "cut", "cnode", "mpi", "sr_kind", "sr_arg")
_FLOAT_COLS = ("wait", "total", "compl", "time")
_ROLE_COLS = ("role", "ref", "ref2")
_DEFAULT = {"wait": 0.0, "total": 0.0, "compl": 0.0, "time": np.nan, "mpi": 0, "sr_kind": 0, "sr_arg": -1, "role": -1,
            "ref": -1, "ref2": -1}


def points_part(**cols) -> dict:
    """One part of the points: its columns (an array per point, or one value for all), ``n`` rows."""
    out = {k: (v if np.ndim(v) == 0 else np.asarray(v)) for k, v in cols.items()}
    out["n"] = len(out["loc"])
    return out


def p2p_parts(ctx, M, cuts):
    """Late Sender and Late Receiver points (Scalasca 2.6: MpiPattern, SynchpointHandler bws/fws); ``cuts``:
    :func:`patterns.kernels.backward_build.point_cuts`."""
    send_cut, sendc_cut, recv_cut, recvp_cut, _ = cuts
    ls_all = np.asarray(late_sender_instances(ctx)["message"], np.int64)
    ls = ls_all[(recv_cut[ls_all] > 0) & (send_cut[ls_all] > 0)]
    return p2p_points(M, cuts, ls, late_receiver_rows(ctx, M, sendc_cut, recvp_cut, ls_all))


def late_receiver_rows(ctx, M, sendc_cut, recvp_cut, ls_all) -> np.ndarray:
    """The message rows whose send completion waited for a late receiver (their points exist): blocking
    standard/synchronous sends and single waits; of a Waitall/Waitsome the largest (unless the call also
    waited for a late sender: ``ls_all``, every Late Sender instance's message row); strictly overlapping
    calls.  Decided from the rows sent by one location (a share decides for its own senders)."""
    ops = mpi_operations(ctx)
    idle = np.where(M["sendc_exit"] <= M["recvp_enter"], 0.0, M["recvp_enter"] - M["sendc_enter"])
    single = operation_in(ops, M["sendc_region"], ("send", "ssend", "wait", "waitany"))
    multi = operation_in(ops, M["sendc_region"], ("waitall", "waitsome"))
    ok = (sendc_cut > 0) & (recvp_cut > 0)
    lr = np.flatnonzero(single & ok & (idle > 0))
    mrows = np.flatnonzero(multi & ok & (idle > 0))  # a call whose largest idle is none is dropped below anyway
    if len(mrows):
        lsm = ls_all
        ls_call = pairs_in(M["send_loc"][mrows], M["sendc_enter"][mrows], M["recv_loc"][lsm], M["recv_enter"][lsm])
        mrows = mrows[~ls_call]
        # per completing call the largest idle (ties: the last send, as the backward replay meets it first)
        o = mrows[np.lexsort((-M["send_pos"][mrows], -idle[mrows], M["sendc_enter"][mrows], M["send_loc"][mrows]))]
        first = np.ones(len(o), bool)
        first[1:] = (M["send_loc"][o][1:] != M["send_loc"][o][:-1]) | (M["sendc_enter"][o][1:] != M["sendc_enter"][o][:-1])
        top = o[first]
        lr = np.concatenate([lr, top[idle[top] > 0]])
    return lr


def p2p_points(M, cuts, ls, lr):
    """The points of the Late Sender pairs (message rows ``ls``) and Late Receiver pairs (rows ``lr``): four
    parts (LS waiters, LS causers, LR waiters, LR causers) whose ``ref`` numbers the pair (LS pairs first),
    the number of pairs and each pair's kind."""
    send_cut, sendc_cut, recv_cut, recvp_cut, _ = cuts
    parts = []
    m = np.asarray(ls, np.int64)
    wait = np.minimum(M["send_enter"][m], M["recv_exit"][m]) - M["recv_enter"][m]
    parts.append(points_part(loc=M["recv_loc"][m], cut=recv_cut[m], wait=wait, cnode=M["recv_cnode"][m],
                         total=M["recv_exit"][m] - M["recv_enter"][m], time=M["recv_enter"][m],
                         compl=_pos(M["recv_exit"][m] - M["send_exit"][m]), mpi=1,
                         sr_kind=SR_ONE, sr_arg=M["send_rank"][m], role=0,
                         ref=np.arange(len(m))))
    parts.append(points_part(loc=M["send_loc"][m], cut=send_cut[m], cnode=M["send_cnode"][m],
                         total=M["send_exit"][m] - M["send_enter"][m], time=M["send_enter"][m],
                         compl=_pos(M["send_exit"][m] - M["recv_exit"][m]), mpi=1,
                         sr_kind=SR_ONE, sr_arg=M["recv_rank"][m], role=1,
                         ref=np.arange(len(m))))
    n_ls = len(m)
    lr = np.asarray(lr, np.int64)
    idle = M["recvp_enter"][lr] - M["sendc_enter"][lr]
    compl = np.where(M["sendc_exit"][lr] > M["recvp_exit"][lr], 0.0, M["sendc_exit"][lr] - M["recvp_exit"][lr])
    parts.append(points_part(loc=M["send_loc"][lr], cut=sendc_cut[lr], wait=idle, cnode=M["sendc_cnode"][lr],
                         total=M["sendc_exit"][lr] - M["sendc_enter"][lr], compl=compl, time=M["sendc_enter"][lr],
                         mpi=1, sr_kind=SR_ONE, sr_arg=M["recv_rank"][lr],
                         role=2, ref=n_ls + np.arange(len(lr))))
    parts.append(points_part(loc=M["recv_loc"][lr], cut=recvp_cut[lr], cnode=M["recvp_cnode"][lr],
                         total=M["recvp_exit"][lr] - M["recvp_enter"][lr], time=M["recvp_enter"][lr],
                         compl=_pos(M["recvp_exit"][lr] - M["sendc_exit"][lr]), mpi=1,
                         sr_kind=SR_ONE, sr_arg=M["send_rank"][lr], role=3,
                         ref=n_ls + np.arange(len(lr))))
    return parts, n_ls + len(lr), np.concatenate([np.full(n_ls, LS), np.full(len(lr), LR)])




def collective_points(ctx, C, cut):
    """MPI collective points (Scalasca 2.6: MpiCommunicationHandler, SynchpointHandler) of the collectives rows
    ``C`` (every member of an instance, or the instance is left out), ``cut``: each row's cut point.  Returns
    the points (one part), each kept row's dense instance, rank and whether it is a point, and per instance
    its wait-state kind, the kept rows and their communicators."""
    if len(C) == 0:
        return [], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), {}
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
    pts = points_part(loc=C["loc"][rows][sp], cut=cut[rows][sp], wait=wait[sp], total=(end - my)[sp], compl=compl[sp],
                  cnode=C["cnode"][rows][sp], time=my[sp], mpi=1, sr_kind=srk[sp],
                  sr_arg=sra[sp], role=4, ref=inst[sp], ref2=is_target[sp].astype(np.int64))
    member_rank = rank
    return [pts], inst, member_rank, sp, {"type": itype, "rows": rows, "comm": np.asarray(C["comm"])[rows]}


def init_finalize_points(ctx, P, totals=None):
    """MPI_Init (wait 0) and MPI_Finalize (wait until the last rank entered) points on every rank.  ``totals``:
    per kind (``CUT_INIT``, ``CUT_FINALIZE``) what :func:`init_finalize_totals` gives over the whole run (a share
    holds some ranks only); None: over ``P``."""
    parts = []
    totals = init_finalize_totals(ctx, P) if totals is None else totals
    for kind, fin in ((CUT_INIT, False), (CUT_FINALIZE, True)):
        s = np.flatnonzero(P["kind"] == kind)
        if len(s) == 0:
            continue
        my, end = P["enter"][s], P["time"][s]
        rank = ctx.location_process[P["loc"][s]].astype(np.int64)
        latest, latest_rank, end_min = totals[kind]
        ti = np.minimum(latest, end)
        wait = np.maximum(0.0, ti - my) if fin else np.zeros(len(s))
        compl = np.maximum(0.0, end - np.maximum(end_min, ti))
        first = np.zeros(len(s), np.int64)  # MAXLOC: the latest, lowest rank (its first point: one rank, one share)
        at = np.flatnonzero((my == latest) & (rank == latest_rank))
        first[at[:1]] = 1
        parts.append(points_part(loc=P["loc"][s], cut=P["cut"][s], wait=wait, total=end - my, compl=compl,
                             cnode=P["cnode"][s], time=my, mpi=1, sr_kind=SR_ALL,
                             role=5 if fin else 6, ref2=first))
    return parts


def init_finalize_totals(ctx, P) -> dict:
    """Per kind of ``P`` (MPI_Init, MPI_Finalize points): (latest enter, the lowest rank entering then,
    earliest exit); kinds without points are left out.  :func:`combine_init_finalize` joins those of shares."""
    out = {}
    for kind in (CUT_INIT, CUT_FINALIZE):
        s = np.flatnonzero(P["kind"] == kind)
        if len(s):
            my, end = P["enter"][s], P["time"][s]
            rank = ctx.location_process[P["loc"][s]].astype(np.int64)
            latest = my.max()
            out[kind] = (latest, int(rank[my == latest].min()), end.min())
    return out


def combine_init_finalize(parts: list[dict]) -> dict:
    """:func:`init_finalize_totals` over the union of the points the ``parts`` were taken of."""
    out = {}
    for kind in (CUT_INIT, CUT_FINALIZE):
        got = [p[kind] for p in parts if p and kind in p]
        if got:
            latest = max(g[0] for g in got)
            out[kind] = (latest, min(g[1] for g in got if g[0] == latest), min(g[2] for g in got))
    return out


def openmp_points(ctx, P):
    """Fork points (ENTER of the parallel region) and barrier points (EXIT) of every team member."""
    from .kernels.backward_build import barrier_points

    parts = []
    members, teams, B = ctx.table("omp_team_members"), ctx.table("omp_teams"), ctx.table("omp_barriers")
    s = np.flatnonzero((P["kind"] == CUT_FORK) & (P["row"] >= 0))
    if len(s) and len(teams):
        mr = P["row"][s]
        team = np.asarray(members["team"], np.int64)[mr]
        enter = members["enter"][mr]
        first = group_min(team, enter, len(teams))
        parts.append(points_part(loc=P["loc"][s], cut=P["cut"][s], cnode=P["cnode"][s], time=enter,
                             total=_pos(enter - teams["fork_time"][team]), compl=_pos(enter - first[team]),
                             role=7, ref=team,
                             ref2=(members["loc"][mr] == teams["master_loc"][team]).astype(np.int64)))
    ok, s, dense, enter, wait, total, first = barrier_points(
        np.asarray(P["kind"]), np.asarray(P["row"]), np.asarray(P["loc"]),
        np.asarray(B["instance"], np.int64), np.asarray(B["enter"], np.float64), np.asarray(B["exit"], np.float64),
        np.asarray(ctx.location_thread), CUT_OMP_BARRIER)
    if ok and len(s):
        parts.append(points_part(loc=P["loc"][s], cut=P["cut"][s], cnode=P["cnode"][s], time=enter, wait=wait,
                             total=total, role=8, ref=dense, ref2=first))
        return parts
    s = np.flatnonzero((P["kind"] == CUT_OMP_BARRIER) & (P["row"] >= 0))
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
        parts.append(points_part(loc=P["loc"][s], cut=P["cut"][s], cnode=P["cnode"][s], time=enter,
                             wait=np.where(wait > 0, wait, 0.0), total=B["exit"][br] - enter, role=8,
                             ref=dense, ref2=(thread == who[dense]).astype(np.int64)))
    return parts


def pack_points(parts: list[dict], sizes: list[int], o: np.ndarray, n_seg: int):
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




def pack_with_openmp(ctx, P, parts: list[dict], n_seg: int):
    """:func:`pack_points` of ``parts`` and :func:`openmp_points`, the OpenMP points (nine in ten points of a
    hybrid trace) written straight from the tables into the packed arrays (``patterns.kernels.backward_build``:
    :func:`claim_points`, :func:`write_points`) instead of as parts first: their columns, the order of all points
    and the scatter were 150 MB of fresh memory at 10^7 events.  None where some step would not take its fast
    path (ungrouped sync_points, a point naming no cut point, team or barrier links out of range): the caller
    then packs part by part, the same points.  The role columns come as three arrays (int8, int64, int8)."""
    from .kernels.backward_build import claim_points, grouped_offsets, write_points

    members, teams, B = ctx.table("omp_team_members"), ctx.table("omp_teams"), ctx.table("omp_barriers")
    kind, row, p_loc, p_cut = (np.asarray(P[k]) for k in ("kind", "row", "loc", "cut"))
    grouped, cut_off = grouped_offsets(p_loc, ctx.n_locations)
    if not grouped:
        return None
    sizes = [p["n"] for p in parts]
    s_loc, s_cut = (np.concatenate([np.asarray(p[k]) for p in parts] or [np.zeros(0, np.int64)]) for k in ("loc", "cut"))
    claim = np.full(len(p_loc), -1, np.int32 if sum(sizes) < 2**31 else np.int64)  # a point's part row, or -1 .. -3
    m_team, b_inst = np.asarray(members["team"], np.int64), np.asarray(B["instance"], np.int64)
    loc_thread = np.asarray(ctx.location_thread)
    ok, n_sp, top = claim_points(kind, row, p_loc, p_cut, cut_off, s_loc, s_cut, claim, CUT_FORK, len(teams) > 0,
                                 m_team, len(teams), CUT_OMP_BARRIER, b_inst, len(loc_thread))
    if not ok:
        return None
    lim = np.iinfo(np.int32)
    vals = [p.get(k, _DEFAULT.get(k)) for p in parts if p["n"] for k in ("loc", "cut", "cnode", "sr_kind", "sr_arg")]
    if p_cut.dtype.itemsize > 4:  # the OpenMP points' cuts (their locations and call paths are int32 columns)
        vals.append(p_cut[claim < -1])
    small = n_seg <= lim.max and all(np.size(v) == 0 or lim.min <= np.min(v) and np.max(v) <= lim.max for v in vals)
    sp_i = np.empty((n_sp, 7), np.int32 if small else np.int64)
    sp_f = np.empty((n_sp, 4), np.float64)
    rr = (np.empty(n_sp, np.int8), np.empty(n_sp, np.int64), np.empty(n_sp, np.int8))  # roles -1 .. 8, ref2 -1 .. 1
    s_dest = np.full(len(s_loc), -1, np.int64)
    write_points(claim, kind, row, p_loc, p_cut, np.asarray(P["cnode"]), CUT_FORK, m_team,
                 np.asarray(members["enter"], np.float64), np.asarray(members["loc"]),
                 np.asarray(teams["fork_time"], np.float64), np.asarray(teams["master_loc"]), CUT_OMP_BARRIER, b_inst,
                 top, np.asarray(B["enter"], np.float64), np.asarray(B["exit"], np.float64), loc_thread, sp_i, sp_f,
                 *rr, s_dest)
    for p, d in zip(parts, np.split(s_dest, np.cumsum(sizes)[:-1]) if sizes else []):
        keep = d >= 0  # a cut met twice keeps its first point
        every = bool(keep.all())
        at = d if every else d[keep]
        for cols, names in ((sp_i.T, _INT_COLS), (sp_f.T, _FLOAT_COLS), (rr, _ROLE_COLS)):
            for col, k in zip(cols, names):
                v = p.get(k, _DEFAULT.get(k))
                col[at] = v if every or np.ndim(v) == 0 else v[keep]
    return sp_i, sp_f, rr
