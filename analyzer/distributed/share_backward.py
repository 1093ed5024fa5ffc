"""The backward replay's inputs per share: ``patterns.backward``'s points, handlings and touches of a share's own
locations, with *ghost points* for the other shares' points its handlings read.

Scalasca's parallel backward replay runs one analysis process per traced process; a wait state's causer
receives what it needs of the waiter (its time map since they last synchronised, the costs stored on it)
from the waiter's process.  Here a share of whole processes does the same for its locations:

* a **point-to-point pair** (Late Sender, Late Receiver) whose two points lie in different shares is
  handled on the causer's share; the waiter's share computes the waiter's interval map once (it depends on
  the waiter's time line only) and sends it with the wait, and later, during the replay, the costs stored
  on the waiter when the replay passes it (:data:`patterns.kernels.delay.T_SEND`);
* a **collective instance** is handled on the share of the member causing the waits (its *target*): every
  other share sends its member points' maps and, during the replay, their costs;
* OpenMP barriers and idle threads never leave a process, nor a share.

Building them takes five exchanges (:func:`backward_stages`), because each share decides part of what the
other needs:

1. the cut points of both ends of every message crossing shares (each share knows its own locations'),
   with the receiver's Late Sender decision (the wrong-order ring and the Waitall rule need the receiving
   location's messages); every collectives row to the share owning its instance (``instance % K``), which
   computes the instance's points as the serial analysis does; MPI_Init/Finalize and last-event totals;
2. the sender's Late Receiver decision (the Waitall rule needs the sending location's messages); the
   collective points back to their members' shares, with the member list of each instance;
3. each share builds its own points (``patterns.backward``'s parts, deduplicated per (location, cut) as
   serially) and tells the other end of each pair and the other members of each instance whether its point
   survived the deduplication;
4. the waiters' and members' interval maps to the causers' and targets' shares (a handling exists only
   where every point it names survived);
5. each share appends the ghost points it received and builds its handlings and touches.

Point ids are local (own points first, in (location, cut) order, then the ghosts); a message is named across
shares by (global receiving location, ``recv_seq``), an instance by its global id.  The critical path leaves
a share through a *remote link* (``cp_next = -2 - link``; the link names the share, the global location and
the cut of the point where it goes on).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analyzer.replay.engine import location_meta
from patterns import backward as B
from patterns import backward_points as BP
from patterns.array_ops import csr, location_offsets, lookup, point_order
from patterns.instances import late_sender_instances

from .network import EVERY, run_stages

__all__ = ["ShareBackward", "backward_stages", "share_backward_inputs", "REMOTE"]

#: ``grp_sp`` of a member whose point lies in another share (only existence is asked of it there)
REMOTE = np.int64(1) << 62
_SEQ_BITS = 40  # a message's key: (global receiving location << _SEQ_BITS) | recv_seq

# outbox kinds
_CUTS, _COLL_ROWS, _TOTALS = "bw_cuts", "bw_coll_rows", "bw_totals"
_LR, _COLL_POINTS = "bw_late_receivers", "bw_coll_points"
_ALIVE, _CP_TOTALS = "bw_alive", "bw_cp_totals"
_GHOSTS = "bw_ghosts"

#: collectives columns a member's row carries to its instance's owner
_COLL_COLS = ("instance", "comm", "rank", "region", "cnode", "enter", "exit", "root", "sent", "recvd", "n_members")


@dataclass
class ShareBackward:
    """A share's backward inputs (``inp``: ``patterns.backward.BackwardInputs``, ``n_own`` own points then the
    ghosts) and what its replays exchange."""

    inp: object
    n_own: int
    global_location: np.ndarray  # global id of each local location
    # ghosts: each one's pruned interval map (CSR: gm_off, gm_cnode, gm_value) and the handling it belongs to
    gm_off: np.ndarray
    gm_cnode: np.ndarray
    gm_value: np.ndarray
    ghost_h: np.ndarray
    ghost_src: np.ndarray  # the share that sent it and its position in that share's list
    ghost_pos: np.ndarray
    # emits (touches of kind T_SEND): the own point whose costs go out, to which share, at which position
    em_point: np.ndarray
    em_dest: np.ndarray
    em_slot: np.ndarray
    # remote links of the critical path
    rl_share: np.ndarray
    rl_loc: np.ndarray  # global location
    rl_cut: np.ndarray
    cp_starts_here: bool = False
    n_points_run: int = 0  # points of every share (the serial critical-path walk's bound)
    problems: list = field(default_factory=list)


def share_backward_inputs(net, ctxs: dict, shares: list, store=None) -> dict:
    """``{share: ShareBackward}`` for the shares of ``net`` local to this process (``ctxs[s]``: share s's
    context with the tables of ``patterns.backward.REQUIRES``, built per share with compact locations).
    ``store``: a ``mapped.MappedStore`` (``--memory``): each share's data is mapped after each of its steps
    and its pages released, so one share's step is resident at a time."""
    work = {s: _Work(ctxs[s], s, shares) for s in net.local}
    for stage in backward_stages(work):
        if store is not None:  # each stage grows a share by its own amount: the first share starts bare
            store.new_stage()
        run_stages(net, [stage if store is None else _mapped(stage, work, store)])
    return {s: w.result for s, w in work.items()}


def _mapped(stage, work: dict, store):
    def run(s, state, inbox):
        state, outbox = stage(s, state, inbox)
        store.map(work[s], key=s)
        # what it sends too: the one process holds every share's payloads until the next stage has read them
        # (about 3 bytes per event of the trace in all, as many as the shares' own arrays at 10^8 events)
        outbox = store.map(outbox, key=s)
        store.trim(s)
        return state, outbox
    return run


def backward_stages(work: dict) -> list:
    """The five exchanges of the module docstring, as stages over the shares' :class:`_Work` in ``work``."""
    return [lambda s, state, inbox: work[s].stage1(),
            lambda s, state, inbox: work[s].stage2(inbox),
            lambda s, state, inbox: work[s].stage3(inbox),
            lambda s, state, inbox: work[s].stage4(inbox),
            lambda s, state, inbox: work[s].stage5(inbox)]


def combined_key(gloc, seq) -> np.ndarray:
    """One int64 per pair (a message: global receiving location and ``recv_seq``; an instance and a rank)."""
    return (np.asarray(gloc, np.int64) << _SEQ_BITS) | np.asarray(seq, np.int64)


def positions_of(keys: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Position of each ``want`` in ``keys`` (unique), -1 where absent."""
    if len(keys) == 0 or len(want) == 0:
        return np.full(len(want), -1, np.int64)
    o = np.argsort(keys, kind="stable")
    pos = np.minimum(np.searchsorted(keys[o], want), len(keys) - 1)
    return np.where(keys[o][pos] == want, o[pos], -1)


def _ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The indices ``starts[i] .. starts[i] + lens[i] - 1`` of every i, one range after the other."""
    n = int(lens.sum())
    if n == 0:
        return np.zeros(0, np.int64)
    first = np.repeat(np.cumsum(lens) - lens, lens)
    return np.repeat(np.asarray(starts, np.int64), lens) + np.arange(n, dtype=np.int64) - first


def _by_dest(dest: np.ndarray, cols: dict, K: int) -> list:
    """One payload per destination share: the rows of ``cols`` going there (None where none)."""
    out = [None] * K
    for d in np.unique(dest):
        sel = np.flatnonzero(dest == d)
        out[int(d)] = {k: v[sel] for k, v in cols.items()}
    return out


class _Work:
    """One share's state through the five stages (kept in memory: the contexts are)."""

    def __init__(self, ctx, s: int, shares: list):
        self.ctx, self.s, self.K = ctx, s, len(shares)
        trace = ctx.trace
        _, n_loc, proc, _ = location_meta(trace)
        self.loc_owner = np.full(n_loc, -1, np.int64)
        for k, locs in enumerate(shares):
            self.loc_owner[np.asarray(locs, np.int64)] = k
        # the share of every process (rank), for instances' members
        self.rank_owner = np.full(int(proc.max()) + 1 if n_loc else 0, -1, np.int64)
        have = self.loc_owner >= 0
        self.rank_owner[proc[have]] = self.loc_owner[have]
        self.n_ranks = len(self.rank_owner)
        L = ctx.n_locations
        self.glob = np.asarray(ctx.global_location, np.int64) if ctx.global_location is not None \
            else np.arange(L, dtype=np.int64)
        self.own_loc = self.loc_owner[self.glob] == s  # per local location
        self._comm_ranks: dict[int, np.ndarray] = {}
        self.result = None

    # ------------------------------------------------------------------ 1
    def stage1(self):
        ctx, K = self.ctx, self.K
        from patterns.kernels.backward_build import point_cuts

        P, M, C = ctx.table("sync_points"), ctx.table("messages"), ctx.table("collectives")
        self.P, self.M, self.C = P, M, C
        cuts = point_cuts(np.asarray(P["kind"]), np.asarray(P["row"]), np.asarray(P["cut"]), len(M), len(C))
        self.cuts = list(cuts)
        out = {}
        if len(M):
            g = self.glob
            self.send_own = self.own_loc[np.asarray(M["send_loc"], np.int64)]
            self.recv_own = self.own_loc[np.asarray(M["recv_loc"], np.int64)]
            self.key = combined_key(g[np.asarray(M["recv_loc"], np.int64)], M["recv_seq"])
            self.ls_all = np.asarray(late_sender_instances(ctx)["message"], np.int64)
            ls_flag = np.zeros(len(M), bool)
            ls_flag[self.ls_all] = True
            self.ls_flag = ls_flag
            to_sender = np.flatnonzero(self.recv_own & ~self.send_own)
            to_receiver = np.flatnonzero(self.send_own & ~self.recv_own)
            send_cut, sendc_cut, recv_cut, recvp_cut, _ = cuts
            pay = {}
            for rows, dest_loc, cols in ((to_sender, M["send_loc"], {"recv_cut": recv_cut, "recvp_cut": recvp_cut,
                                                                        "ls": ls_flag}),
                                         (to_receiver, M["recv_loc"], {"send_cut": send_cut, "sendc_cut": sendc_cut})):
                dest = self.loc_owner[g[np.asarray(dest_loc, np.int64)[rows]]]
                for d, p in enumerate(_by_dest(dest, {"key": self.key[rows], **{k: v[rows] for k, v in cols.items()}},
                                               K)):
                    if p is not None:
                        pay.setdefault(d, []).append(p)
            out[_CUTS] = [pay.get(d) for d in range(K)]
        if len(C):
            own = np.flatnonzero(self.own_loc[np.asarray(C["loc"], np.int64)])
            cols = {k: np.asarray(C[k])[own] for k in _COLL_COLS}
            cols["loc"] = self.glob[np.asarray(C["loc"], np.int64)[own]]
            cols["cut"] = cuts[4][own]
            if "complete" in C:
                cols["complete"] = np.asarray(C["complete"])[own]
            out[_COLL_ROWS] = _by_dest(cols["instance"] % K, cols, K)
        out[_TOTALS] = {EVERY: (BP.init_finalize_totals(ctx, P), self._last_event())}
        return None, out

    def _last_event(self):
        """(time, global location) of the own thread-0 location whose last event is the latest (serially:
        ``patterns.backward``'s start of a path without MPI_Finalize)."""
        ctx = self.ctx
        best = None
        for l in np.flatnonzero(self.own_loc):
            if ctx.location_thread[l] != 0:
                continue
            t = B.last_event_time(ctx, int(l), int(self.glob[l]))  # own locations are the trace's
            if best is None or t > best[0]:
                best = (t, int(self.glob[l]))
        return best

    # ------------------------------------------------------------------ 2
    def stage2(self, inbox):
        ctx, K, M = self.ctx, self.K, self.M
        out = {}
        totals = [t for t in inbox.get(_TOTALS, []) if t is not None]
        self.if_totals = BP.combine_init_finalize([t[0] for t in totals])
        lasts = [t[1] for t in totals if t[1] is not None]
        # serially the first location (lowest id) of the latest end
        self.last_master = min(lasts, key=lambda x: (-x[0], x[1]))[1] if lasts else 0
        if len(M):
            send_cut, sendc_cut, recv_cut, recvp_cut, _ = self.cuts
            ls = self.ls_flag.copy()
            for got in inbox.get(_CUTS, []):
                for p in got or ():
                    at = positions_of(self.key, p["key"])
                    if "recv_cut" in p:
                        recv_cut[at], recvp_cut[at], ls[at] = p["recv_cut"], p["recvp_cut"], p["ls"]
                    else:
                        send_cut[at], sendc_cut[at] = p["send_cut"], p["sendc_cut"]
            self.ls = np.flatnonzero(ls & (recv_cut > 0) & (send_cut > 0))
            lr = BP.late_receiver_rows(ctx, M, sendc_cut, recvp_cut, self.ls_all)
            self.lr_own = lr[self.send_own[lr]]
            rows = self.lr_own[~self.recv_own[self.lr_own]]
            dest = self.loc_owner[self.glob[np.asarray(M["recv_loc"], np.int64)[rows]]]
            out[_LR] = _by_dest(dest, {"key": self.key[rows]}, K)
        # the instances this share owns: their points, computed from every member's row
        got = [p for p in inbox.get(_COLL_ROWS, []) if p is not None]
        if got:
            full = {k: np.concatenate([p[k] for p in got]) for k in got[0]}
            out[_COLL_POINTS] = self._collective_points(full)
        return None, out

    def _collective_points(self, full: dict) -> list:
        """Share-owned instances: per share holding members, its members' point columns, each instance's
        target (the member causing the waits) and whether every member is a point, and the member list
        (rank, point or not) where that share needs it: it handles the instance, or the instance's points are
        not its whole communicator (which every share knows from the definitions: a member share holds that
        block of ranks once per communicator, not one list per instance)."""
        from patterns.tables import Table

        K = self.K
        C = Table({k: v for k, v in full.items() if k not in ("cut",)})
        parts, inst, member_rank, sp, info = BP.collective_points(self.ctx, C, full["cut"])
        if not len(inst):
            return [None] * K
        rows = info["rows"]
        gid = np.asarray(full["instance"], np.int64)[rows]  # global instance of each kept row
        loc = np.asarray(full["loc"], np.int64)[rows]
        cut = np.asarray(full["cut"], np.int64)[rows]
        rank = member_rank.astype(np.int64)
        sp = np.asarray(sp, bool)
        dest_of_row = self.loc_owner[loc]
        # the points' columns per kept row (rows that are no point: wait etc. unused)
        pt = parts[0]
        cols = {"instance": gid, "rank": rank, "loc": loc, "cut": cut,
                "cnode": np.asarray(full["cnode"], np.int64)[rows], "sp": sp}
        n = len(rows)
        for k in ("wait", "total", "compl", "time", "sr_kind", "sr_arg", "ref2"):
            col = np.zeros(n, np.float64 if k in ("wait", "total", "compl", "time") else np.int64)
            col[sp] = pt[k]
            cols[k] = col
        # sr_arg names an instance (SR_GROUP, SR_GROUP_SP): its global id, not the owner's dense one
        group = np.isin(cols["sr_kind"], (BP.SR_GROUP, BP.SR_GROUP_SP)) & sp
        ni = int(inst.max()) + 1
        dense_to_gid = np.empty(ni, np.int64)
        dense_to_gid[inst] = gid
        cols["sr_arg"][group] = dense_to_gid[cols["sr_arg"][group]]
        # per instance: its target, whether every member is a point of it, whether the communicator's ranks are
        # its members (then a member share's block of the communicator stands for its list)
        target = np.flatnonzero(sp & (cols["ref2"] == 1))
        t_row = np.full(ni, -1, np.int64)
        t_row[inst[target]] = target
        comm = np.full(ni, -1, np.int64)
        comm[inst] = np.asarray(info["comm"], np.int64)
        all_points = np.ones(ni, bool)
        np.logical_and.at(all_points, inst, sp)
        o = np.lexsort((rank, inst))
        m_off = np.concatenate([[0], np.cumsum(np.bincount(inst, minlength=ni))])
        block = np.zeros(ni, bool)
        for g in np.flatnonzero(all_points):
            block[g] = np.array_equal(rank[o[m_off[g]:m_off[g + 1]]], self.comm_ranks(int(comm[g])))
        has_t = t_row >= 0
        t_share = np.where(has_t, self.loc_owner[loc[np.maximum(t_row, 0)]], -1)
        per_inst = {"instance": dense_to_gid, "type": info["type"], "comm": comm,
                    "t_rank": np.where(has_t, rank[np.maximum(t_row, 0)], -1),
                    "t_loc": np.where(has_t, loc[np.maximum(t_row, 0)], -1),
                    "t_cut": np.where(has_t, cut[np.maximum(t_row, 0)], -1), "t_share": t_share}
        out = [None] * K
        for d in np.unique(dest_of_row):
            mine = dest_of_row == d
            gs = np.unique(inst[mine])
            listed = gs[(t_share[gs] == d) | ~block[gs]]  # instances whose member list this share gets
            sel = o[np.isin(inst[o], listed)]
            out[int(d)] = {"own": {k: v[np.flatnonzero(mine)] for k, v in cols.items()},
                           "inst": {k: v[gs] for k, v in per_inst.items()},
                           "members": {"instance": gid[sel], "rank": rank[sel], "sp": sp[sel]}}
        return out

    def comm_ranks(self, comm: int) -> np.ndarray:
        """The global ranks of communicator ``comm`` ascending, from the definitions (empty where they list
        none)."""
        got = self._comm_ranks.get(comm)
        if got is None:
            d = self.ctx.trace.defs.comms.get(comm)
            got = np.unique(np.asarray(d.ranks, np.int64)) if d is not None and len(d.ranks) else \
                np.zeros(0, np.int64)
            self._comm_ranks[comm] = got
        return got

    # ------------------------------------------------------------------ 3
    def stage3(self, inbox):
        ctx, K, M, P = self.ctx, self.K, self.M, self.P
        L = ctx.n_locations
        parts = []
        if len(M):
            lr_remote = [positions_of(self.key, p["key"]) for p in inbox.get(_LR, []) if p is not None]
            lr = np.concatenate([self.lr_own] + lr_remote) if lr_remote else self.lr_own
            p2p, self.n_pairs, self.pair_type = BP.p2p_points(M, self.cuts, self.ls, lr)
            self.pair_row = np.concatenate([self.ls, lr]).astype(np.int64)
            parts += [self._own_rows(p) for p in p2p]
        else:
            self.n_pairs, self.pair_type, self.pair_row = 0, np.zeros(0, np.int64), np.zeros(0, np.int64)
        parts += self._collective_part(inbox)
        parts += BP.init_finalize_points(ctx, P, self.if_totals)
        parts += BP.openmp_points(ctx, P)
        S = ctx.table("time_segments")
        sizes = [p["n"] for p in parts]
        o = point_order(P, *(np.concatenate([np.asarray(p[k]) for p in parts]) for k in ("loc", "cut")), sizes, L) \
            if parts else np.zeros(0, np.int64)
        self.sp_i, self.sp_f, (self.role, self.ref, self.ref2) = BP.pack_points(parts, sizes, o, len(S))
        del parts
        n_sp = len(o)
        self.n_own = n_sp
        idx = np.arange(n_sp, dtype=np.int64)
        sp_loc = self.sp_i[:, 0].astype(np.int64)
        out = {}
        if self.ci is not None:  # the own members' points as they survived
            ci = self.ci
            cpt = idx[self.role == 4]
            ci["own_point"][:] = lookup(self.ref[cpt] * L + sp_loc[cpt], cpt, ci["local_inst"] * L + ci["local_loc"])
            # a collective's cut point is its own event's: no other point takes it, so each survives (what the
            # other member shares assume without asking)
            if (ci["own_point"][ci["sp"]] < 0).any():
                raise RuntimeError("share_backward: a collective member's point met another point at its cut")
        # each pair's own ends as they survived; the other end's fate to its share
        self.w_of = np.full(self.n_pairs, -1, np.int64)
        self.c_of = np.full(self.n_pairs, -1, np.int64)
        isw = (self.role == 0) | (self.role == 2)
        isc = (self.role == 1) | (self.role == 3)
        self.w_of[self.ref[isw]] = idx[isw]
        self.c_of[self.ref[isc]] = idx[isc]
        if self.n_pairs:
            row = self.pair_row
            lr = self.pair_type == BP.LR
            self.w_loc = np.where(lr, M["send_loc"][row], M["recv_loc"][row]).astype(np.int64)
            self.c_loc = np.where(lr, M["recv_loc"][row], M["send_loc"][row]).astype(np.int64)
            self.c_cut = np.where(lr, self.cuts[3][row], self.cuts[0][row])  # the causer's recvp / send cut
            self.w_own, self.c_own = self.own_loc[self.w_loc], self.own_loc[self.c_loc]
            self.partner = self.loc_owner[self.glob[np.where(self.w_own, self.c_loc, self.w_loc)]]
            self.pair_key = self.key[row] * 2 + lr
            cross = np.flatnonzero(self.w_own != self.c_own)
            mine = np.where(self.w_own[cross], self.w_of[cross], self.c_of[cross])
            out[_ALIVE] = _by_dest(self.partner[cross], {"key": self.pair_key[cross], "alive": mine >= 0}, K)
        # the critical path's start: MPI_Finalize's MAXLOC point if every MPI rank has its point
        fin = idx[(self.role == 5) & (self.ref2 == 1)]
        mpi = self.sp_i[:, 3].astype(bool) if n_sp else np.zeros(0, bool)
        n_mpi_ranks = len(np.unique(np.asarray(ctx.location_process)[sp_loc[mpi]]))
        out[_CP_TOTALS] = {EVERY: (int((self.role == 5).sum()), n_mpi_ranks,
                                   (int(self.glob[sp_loc[fin[0]]]), int(self.sp_i[fin[0], 1])) if len(fin) else None,
                                   n_sp)}
        return None, out

    def _own_rows(self, part: dict) -> dict:
        """A point part restricted to the points of own locations."""
        keep = self.own_loc[np.asarray(part["loc"], np.int64)]
        if keep.all():
            return part
        out = {k: (v if np.ndim(v) == 0 else np.asarray(v)[keep]) for k, v in part.items() if k != "n"}
        out["n"] = int(keep.sum())
        return out

    def _collective_part(self, inbox) -> list:
        """The points of the own collective members (from their instances' owners); per local instance (one with
        an own member) its target and member list (``self.inst``, ``self.members``: see
        ``_collective_points``)."""
        got = [p for p in inbox.get(_COLL_POINTS, []) if p is not None]
        self.ci = None
        self.inst_gid = np.zeros(0, np.int64)
        if not got:
            return []
        cat = (lambda part: {k: np.concatenate([p[part][k] for p in got]) for k in got[0][part]})
        ci, inst, mem = cat("own"), cat("inst"), cat("members")
        o = np.lexsort((ci["rank"], ci["instance"]))
        ci = {k: v[o] for k, v in ci.items()}
        g2l = np.full(len(self.loc_owner), -1, np.int64)
        g2l[self.glob] = np.arange(len(self.glob))
        ci["local_loc"] = g2l[ci["loc"]]
        o = np.argsort(inst["instance"], kind="stable")
        self.inst = {k: v[o] for k, v in inst.items()}
        self.inst_gid = self.inst["instance"]
        ci["local_inst"] = np.searchsorted(self.inst_gid, ci["instance"]).astype(np.int64)
        ci["own_point"] = np.full(len(ci["rank"]), -1, np.int64)
        o = np.lexsort((mem["rank"], mem["instance"]))
        self.members = {k: v[o] for k, v in mem.items()}
        self.members["local_inst"] = np.searchsorted(self.inst_gid, self.members["instance"]).astype(np.int64)
        self.ci = ci
        sel = np.flatnonzero(ci["sp"])
        sra = ci["sr_arg"][sel].copy()
        group = np.isin(ci["sr_kind"][sel], (BP.SR_GROUP, BP.SR_GROUP_SP))
        sra[group] = np.searchsorted(self.inst_gid, sra[group])
        return [BP.points_part(loc=ci["local_loc"][sel], cut=ci["cut"][sel], wait=ci["wait"][sel],
                               total=ci["total"][sel], compl=ci["compl"][sel], cnode=ci["cnode"][sel],
                               time=ci["time"][sel], mpi=1, sr_kind=ci["sr_kind"][sel], sr_arg=sra, role=4,
                               ref=ci["local_inst"][sel], ref2=ci["ref2"][sel])]

    # ------------------------------------------------------------------ 4
    def stage4(self, inbox):
        from patterns.kernels.backward import interval_maps, point_segments

        ctx, K = self.ctx, self.K
        L = ctx.n_locations
        # pairs: alive where both ends survived
        if self.n_pairs:
            far = np.ones(self.n_pairs, bool)
            for p in inbox.get(_ALIVE, []):
                if p is not None:
                    far[positions_of(self.pair_key, p["key"])] = p["alive"]
            self.alive = (np.where(self.w_own, self.w_of >= 0, far) & np.where(self.c_own, self.c_of >= 0, far))
        else:
            self.alive = np.zeros(0, bool)
        # collective members: per local instance its rows of grp, ranks ascending: its member list where this
        # share got one (own point ids, REMOTE for the other shares' points, -1 for none), else its communicator's
        # block (every rank a point: REMOTE); the block of a communicator is held once
        n_inst = len(self.inst_gid)
        if self.ci is not None:
            ci, mem, inst = self.ci, self.members, self.inst
            own_id = positions_of(combined_key(ci["instance"], ci["rank"]), combined_key(mem["instance"], mem["rank"]))
            m_sp = np.where(mem["sp"], REMOTE, -1)
            mine = own_id >= 0
            m_sp[mine] = ci["own_point"][own_id[mine]]
            listed = np.zeros(n_inst, bool)
            listed[mem["local_inst"]] = True
            blocks, rows = {}, []
            at = 0
            for c in np.unique(inst["comm"][~listed]):
                r = self.comm_ranks(int(c))
                blocks[int(c)] = (at, at + len(r))
                rows.append(np.stack([r, np.full(len(r), REMOTE)], axis=1))
                at += len(r)
            self.grp_lo, self.grp_hi = np.zeros(n_inst, np.int64), np.zeros(n_inst, np.int64)
            for g in np.flatnonzero(~listed):
                self.grp_lo[g], self.grp_hi[g] = blocks[int(inst["comm"][g])]
            m_off = csr(mem["local_inst"], n_inst)
            self.grp_lo[listed] = at + m_off[:-1][listed]
            self.grp_hi[listed] = at + m_off[1:][listed]
            self.members_at = at  # grp row of the first listed member (share_inputs sets the ghosts there)
            rows.append(np.stack([mem["rank"], m_sp], axis=1))
            self.grp = np.concatenate(rows).astype(np.int64)
            self.n_m = np.bincount(mem["local_inst"][m_sp >= 0], minlength=n_inst)
            self.t_own = inst["t_share"] == self.s
            # a handling exists where the target is a point (it survives: see stage 3) and some member is one
            self.exists = (inst["t_rank"] >= 0) & np.where(self.t_own, self.n_m > 0, True)
        else:
            self.n_m = np.zeros(0, np.int64)
            self.exists = self.t_own = np.zeros(0, bool)
            self.grp_lo = self.grp_hi = np.zeros(0, np.int64)
            self.grp = np.zeros((0, 2), np.int64)
            self.members_at = 0
        # the own points' first segment (the maps are read from the time maps between two points)
        S = ctx.table("time_segments")
        self.seg_off = location_offsets(np.asarray(S["loc"]), L)
        self.sp_off = location_offsets(self.sp_i[:, 0], L)
        point_segments(self.seg_off, np.asarray(S["cut"]), self.sp_off, self.sp_i[:, 1], self.sp_i[:, 6])
        # ghosts to send: own waiters of pairs caused elsewhere, own members of instances targeted elsewhere
        send_pt, send_rank, send_dest, send_key, send_kind, send_mrank = [], [], [], [], [], []
        if self.n_pairs:
            g = np.flatnonzero(self.alive & self.w_own & ~self.c_own)
            send_pt.append(self.w_of[g])
            send_rank.append(self.sp_i[self.w_of[g], 5].astype(np.int64))  # the waiter synchronised with the causer
            send_dest.append(self.partner[g])
            send_key.append(self.pair_key[g])
            send_kind.append(np.zeros(len(g), np.int64))
            send_mrank.append(np.full(len(g), -1, np.int64))
        if self.ci is not None:
            ci = self.ci
            m = np.flatnonzero((ci["own_point"] >= 0) & self.exists[ci["local_inst"]] & ~self.t_own[ci["local_inst"]])
            t_rank = self.inst["t_rank"][ci["local_inst"][m]]
            send_pt.append(ci["own_point"][m])
            send_rank.append(t_rank)
            send_dest.append(self.inst["t_share"][ci["local_inst"][m]])
            send_key.append(ci["instance"][m])
            send_kind.append(np.ones(len(m), np.int64))
            send_mrank.append(ci["rank"][m])
        pt = np.concatenate(send_pt) if send_pt else np.zeros(0, np.int64)
        rank = np.concatenate(send_rank) if send_rank else np.zeros(0, np.int64)
        dest = np.concatenate(send_dest) if send_dest else np.zeros(0, np.int64)
        m_off, m_cnode, m_value = interval_maps(self.seg_off, self.sp_off, np.asarray(S["cut"]), np.asarray(S["cnode"]),
                                                np.asarray(S["time"], np.float64), self.sp_i, self.sp_f,
                                                self.grp_lo, self.grp_hi, self.grp, pt, rank, ctx.n_cnodes)
        self.em_point, self.em_dest = pt, dest
        self.em_slot = np.zeros(len(pt), np.int64)
        out = [None] * K
        kind = np.concatenate(send_kind) if send_kind else np.zeros(0, np.int64)
        key = np.concatenate(send_key) if send_key else np.zeros(0, np.int64)
        mrank = np.concatenate(send_mrank) if send_mrank else np.zeros(0, np.int64)
        for d in np.unique(dest):
            sel = np.flatnonzero(dest == d)
            self.em_slot[sel] = np.arange(len(sel))
            lens = m_off[sel + 1] - m_off[sel]
            take = _ranges(m_off[sel], lens)
            out[int(d)] = {"kind": kind[sel], "key": key[sel], "rank": mrank[sel], "wait": self.sp_f[pt[sel], 0],
                           "loc": self.glob[self.sp_i[pt[sel], 0]], "map_len": lens, "map_cnode": m_cnode[take],
                           "map_value": m_value[take]}
        totals = [t for t in inbox.get(_CP_TOTALS, []) if t is not None]
        self.cp_totals = (sum(t[0] for t in totals), sum(t[1] for t in totals),
                          next((t[2] for t in totals if t[2] is not None), None))
        self.n_points_run = sum(t[3] for t in totals)  # the run's points, as the serial analysis counts them
        return None, {_GHOSTS: out}

    # ------------------------------------------------------------------ 5
    def stage5(self, inbox):
        from .share_inputs import assemble

        self.result = assemble(self, inbox.get(_GHOSTS, []))
        return None, {}
