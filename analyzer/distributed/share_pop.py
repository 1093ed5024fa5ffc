"""The POP metrics (``patterns.pop``) per share of processes: each share computes the profile of its own
locations, bit for bit the serial one in its owned columns, with the run's T and T_ideal.

What is global in ``patterns.pop`` is a few extremes and the ideal-network replay
(``patterns.kernels.ideal``).  The extremes travel as one value per share: the first and last event of its
locations (T), the latest end of its ideal walk (T_ideal) and its largest useful time; a maximum or minimum
of the shares' extremes is the serial one exactly.  The replay runs per share over its own locations, in
rounds (``analyzer.distributed.rounds``): each round a share takes what arrived, walks its locations until
each is blocked on something remote or done (:func:`patterns.kernels.ideal.ideal_advance`, the serial
replay's loop, its state kept between rounds) and posts what others wait for, as one ``"pop_round"``
payload per share of the records of ``patterns.kernels.ideal_shares`` (bytes: rounds are many, and each
costs a few calls under MPI):

* the clocks of own sends whose receiver is another share's, to the receiver's share;
* per collective instance with members elsewhere, once all its own members arrived, a report on them to
  every other share with members of it (which shares those are: one exchange before the rounds), where
  those shares number at most :data:`DIRECT_SHARES`.  Each member share folds the reports into the latest
  arrival, the root's and the type of the member last in location order, as the serial replay takes them,
  and computes its members' leave times as the serial replay does: the share whose members arrive last goes
  on in the same round, the others in the next (one round per instance on a chain of waits);
* where more shares hold members (a world communicator over K shares: K x (K - 1) reports per instance the
  direct way, some 10^6 at K = 1024), the report goes to the instance's owner share instead, ``instance % K``
  (to itself where it is a member: handed over in the network without a copy), which folds them alike and,
  once every member share reported, sends each other member share the fold (``result``): at most 2 K
  messages per instance, two rounds on a chain of waits (the members' reports, the owner's results);
* with those reports, to the receiver's share where it holds members of the instance too, the clocks of the
  sends that own members reach after the instance before anything could make them wait, as what the walk
  will add to the member's leave time: that share computes each clock when the instance ends there, bit for
  bit the walk's, and its receiver goes on in that round instead of one later (an allreduce followed by a
  halo exchange: one round per iteration, not two; through an owner: two, not three);
* a member let pass at its collective (a cycle of waits) leaves it at its arrival, not at the instance's
  end: its predicted clocks are taken back (unused: the instance is complete nowhere while everything
  waits) and sent when walked.

OpenMP teams never span processes, so forks and barriers are walked within the share.  A cycle of waits
(an inconsistent trace) ends as serially: when nobody moved, the lowest location with cut points left lets
its blocked cut point pass (``stuck`` of ``run_rounds``).

Exchanges: two before the rounds (to every share: the share's owned location ids, its first and last
event and its part of a bound on the rounds, so every share knows T, t0, whose each location is and when
the rounds are overdue; to the owner share of each instance with members on several shares, ``instance % K``
as in ``share_collectives``, that this share holds members, and from the owner to each of them the other
member shares), the rounds, one after (to every share: the largest end of the ideal walk and the largest
useful time).  The state of a round holds the share's context (MemoryNetwork and MpiNetwork keep states in
memory).
"""

from __future__ import annotations

import numpy as np

from patterns.kernels.ideal import COLLECTIVE, QN, USED, WAITING, IdealState, ideal_advance, ideal_pass, ideal_state
from patterns.kernels.ideal_shares import RECEIVE_ERRORS, ideal_pack, ideal_receive, owner_state
from patterns.pop import ideal_inputs, location_spans, profile_arrays, useful_time

from .network import EVERY, Network, route, run_stages
from .rounds import NOT_STUCK, Status, run_rounds

__all__ = ["share_pop_profiles"]

SPANS, HOLDERS, PEERS, ROUND, FINALS = "pop_spans", "pop_holders", "pop_peers", "pop_round", "pop_finals"
#: the most member shares of a collective instance whose reports go to each member share directly (one round
#: per instance, m (m - 1) reports for m member shares); wider instances go through their owner share (two
#: rounds, 2 m messages)
DIRECT_SHARES = 8


def share_pop_profiles(net: Network, ctxs, store=None) -> dict[int, dict]:
    """The POP profile (``patterns.pop.pop_profile``) of every share local to ``net``: ``ctxs[s]`` is share s's
    context (built with the tables ``patterns.pop.REQUIRES``, ``ctx.results`` holding ``execution``, ``mpi`` and
    ``omp_time`` in its owned columns).  Each profile's arrays are ``[C, ctx.n_locations]``, the serial values in the
    owned columns and zeros elsewhere; ``"_elapsed"`` and ``"_ideal"`` are the serial floats.  ``store``: a
    ``mapped.MappedStore`` (``--memory``: every share in this process): each share's walk is mapped after each
    of its steps and its pages released."""
    K = net.n_shares
    direct = DIRECT_SHARES  # read once: every share of the run takes the same paths

    def spans(s, state, inbox):
        ctx = ctxs[s]
        glob = _global_ids(ctx)
        first, last = location_spans(ctx.trace, glob[ctx.owned])
        x, need = _inputs(ctx)
        inst = x.c_instance[np.diff(x.c_off) < need]  # instances with members on other shares
        out = route(K, {HOLDERS: _by_dest(inst % K, {"instance": inst})})
        out[SPANS] = {EVERY: {"owned": glob[ctx.owned], "first": _extreme(np.nanmin, first),
                              "last": _extreme(np.nanmax, last), "rounds": _most_rounds(ctx)}}
        state = (first, x, need)
        if store is not None:  # every share's inputs are held until the next stage
            state = store.map(state, key=s)
            store.trim(s)
        return state, out

    def peers(s, state, inbox):
        w = _Walk(s, K, direct, ctxs[s], *state, inbox[SPANS])
        to_members, owned = _peers(inbox.get(HOLDERS, []), direct)
        w.take_owned(owned)
        if store is not None:  # its arrays are made here, once: mapped now, released as the rounds need
            w = store.map(w, key=s)
            store.trim(s)
        return w, route(K, {PEERS: to_members})

    def step(s, w, inbox, stuck):
        w, out, status = _step(s, K, w, inbox, stuck)
        if store is not None:
            store.trim(s)
        return w, out, status

    walks = run_stages(net, [spans, peers])
    limit = walks[net.local[0]].limit if net.local else None
    walks, _ = run_rounds(net, step, limit)

    def finals(s, w, inbox):
        return w, {FINALS: {EVERY: w.finals()}}

    walks = run_stages(net, [finals])
    return {s: walks[s].profile([p for p in net.inbox(s)[FINALS] if p is not None]) for s in net.local}


def _inputs(ctx):
    """The share's ideal replay inputs over its own collectives rows, and per instance its members over all
    shares (the communicator's size: only complete instances are walked)."""
    C = ctx.table("collectives")
    mine = np.zeros(ctx.n_locations, bool)
    mine[np.asarray(ctx.owned, np.int64)] = True
    x = ideal_inputs(ctx, mine[np.asarray(C["loc"], np.int64)] if len(C) else None)
    need = np.asarray(C["n_members"], np.int64)[x.c_rows[x.c_off[:-1]]] if len(x.c_off) > 1 else np.zeros(0, np.int64)
    return x, need


def _peers(got: list, direct: int) -> tuple[dict[int, dict], dict]:
    """As the owner of instances: per share holding members of some, those instances, each with the set of
    every share holding members of it (one per distinct set: the instances of a communicator have the same,
    so what a share holds is one number per instance, not one per instance and member share); and the
    instances with more than ``direct`` member shares, whose reports come here, with their sets alike."""
    got = [(src, p["instance"]) for src, p in enumerate(got) if p is not None]
    if not got:
        return {}, _numbered(np.zeros(0, np.int64), np.zeros(0, np.int64), [])
    inst = np.concatenate([i for _, i in got])
    src = np.concatenate([np.full(len(i), q, np.int64) for q, i in got])
    o = np.lexsort((src, inst))
    inst, src = inst[o], src[o]
    starts = np.flatnonzero(np.r_[True, inst[1:] != inst[:-1]])
    size = np.diff(np.r_[starts, len(inst)])
    set_of = np.empty(len(starts), np.int64)
    members: list = []
    for m in np.unique(size).tolist():  # the holder sets of m shares, as rows of a matrix
        sel = np.flatnonzero(size == m)
        u, inv = np.unique(src[starts[sel][:, None] + np.arange(m)], axis=0, return_inverse=True)
        set_of[sel] = len(members) + inv.reshape(-1)
        members.extend(u)
    row_set = np.repeat(set_of, size)
    out = {}
    for d in np.unique(src).tolist():
        mine = src == d
        out[d] = _numbered(inst[mine], row_set[mine], members)
    wide = size > direct
    return out, _numbered(inst[starts[wide]], set_of[wide], members)


def _numbered(inst: np.ndarray, sets: np.ndarray, members: list) -> dict:
    """Instances ``inst`` with their sets of member shares ``members[sets[i]]``, the sets used numbered anew."""
    used, local = np.unique(sets, return_inverse=True)
    return {"instance": inst, "set": local.reshape(-1).astype(np.int64),
            "set_off": np.r_[0, np.cumsum([len(members[k]) for k in used])].astype(np.int64),
            "set_share": np.concatenate([members[k] for k in used]) if len(used) else np.zeros(0, np.int64)}


def _global_ids(ctx) -> np.ndarray:
    glob = getattr(ctx, "global_location", None)
    return np.arange(ctx.n_locations, dtype=np.int64) if glob is None else np.asarray(glob, np.int64)


def _most_rounds(ctx) -> int:
    """A share's part of a bound on the rounds: each round passes a cut point, or posts a send clock, an
    instance report or an owner's results, or (nobody moved) precedes a round that passes one."""
    return 2 * len(ctx.table("sync_points")) + len(ctx.table("messages")) + 2 * len(ctx.table("collectives"))


def _extreme(f, v: np.ndarray) -> float:
    return float(f(v)) if np.isfinite(v).any() else np.nan


class _Walk:
    """A share's ideal replay between rounds: its inputs, the kernel's state, where its messages and instance
    reports go.  ``first``: the own locations' first events (NaN: none); ``x``, ``need``: :func:`_inputs`."""

    def __init__(self, s: int, K: int, direct: int, ctx, first: np.ndarray, x, need: np.ndarray, spans: list):
        self.s, self.K, self.direct, self.ctx = s, K, direct, ctx
        got = [p for p in spans if p is not None]
        self.limit = sum(p["rounds"] for p in got) + 2
        firsts = np.array([p["first"] for p in got], np.float64)
        lasts = np.array([p["last"] for p in got], np.float64)
        # the serial np.nanmin / np.nanmax over every location: the same extremes
        self.t0 = np.nanmin(firsts) if np.isfinite(firsts).any() else 0.0
        self.elapsed = (np.nanmax(lasts) - self.t0) if np.isfinite(lasts).any() else 0.0
        self.n_total = sum(len(p["owned"]) for p in got)
        owned_ids = [np.asarray(p["owned"], np.int64) for p in got]
        top = max((int(o.max()) for o in owned_ids if len(o)), default=-1)
        self.loc_share = np.full(top + 1, -1, np.int64)
        for src, p in enumerate(spans):
            if p is not None:
                self.loc_share[np.asarray(p["owned"], np.int64)] = src
        L = ctx.n_locations
        self.glob = glob = _global_ids(ctx)
        self.owned = np.asarray(ctx.owned, np.int64)
        self.mine = mine = np.zeros(L, bool)
        mine[self.owned] = True
        self.x = x
        start = np.full(L, self.t0, np.float64)
        start[self.owned] = np.where(np.isfinite(first), first, self.t0)
        n_ci = len(x.c_off) - 1
        self.state = IdealState(*ideal_state(start, x.cut_off, x.n_messages, len(x.c_inst), len(x.c_rows), n_ci,
                                             len(x.b_inst), len(x.b_off) - 1, len(x.kind), len(x.t_off) - 1,
                                             True))
        self.queue_all()
        # collectives: the members over all shares, whether some are elsewhere, and what the reports of the
        # others are folded with (the own last member's location and type, the own last root's location)
        self.own_count = np.diff(x.c_off)
        self.c_need = need
        self.c_remote = self.own_count < need
        self.c_root_own = np.ones(n_ci, np.bool_)
        self.own_type = x.c_type.copy()  # the last own member's: reported after another's may replace it
        self.own_last_loc = glob[x.c_loc[x.c_off[1:] - 1]] if n_ci else np.zeros(0, np.int64)
        self.r_last_loc = self.own_last_loc.copy()
        self.own_root_loc = np.full(n_ci, -1, np.int64)
        roots = np.flatnonzero(x.c_root[x.c_rows]) if len(x.c_rows) else np.zeros(0, np.int64)
        np.maximum.at(self.own_root_loc, np.searchsorted(x.c_off, roots, side="right") - 1, glob[x.c_loc[roots]])
        self.r_root_loc = self.own_root_loc.copy()
        # per instance its set of other member shares, p_share[p_off[k]:p_off[k + 1]] for k = p_set[g]
        self.p_set: np.ndarray | None = None
        self.p_off = self.p_share = np.zeros(0, np.int64)
        # messages: sent here to another share's receiver, received here from another share's sender
        M = ctx.table("messages")
        self.m_send, self.m_recv = np.asarray(M["send_loc"], np.int64), np.asarray(M["recv_loc"], np.int64)
        self.m_seq = np.asarray(M["recv_seq"], np.int64)
        send_here, recv_here = self.here(self.m_send), self.here(self.m_recv)
        self.m_remote = send_here & ~recv_here
        self.m_rloc = glob[self.m_recv]  # the receiver (global), and its share where it is another's
        self.m_dest = np.full(len(M), -1, np.int64)
        self.m_dest[self.m_remote] = self.loc_share[self.m_rloc[self.m_remote]]
        imports = np.flatnonzero(recv_here & ~send_here)
        self.seq_span = int(self.m_seq.max()) + 1 if len(M) else 1
        keys = self.m_recv[imports] * self.seq_span + self.m_seq[imports]
        o = np.argsort(keys, kind="stable")
        self.imp_keys, self.imp_rows = keys[o], imports[o]
        # send clocks predicted for other member shares: per own send its instance (-1: none), and those taken
        # back since the last post (the state keeps the received ones until their instance ends here)
        self.pred_inst = np.full(len(M), -1, np.int64)
        self.revoked = np.zeros(0, np.int64)
        self._useful: np.ndarray | None = None

    def here(self, loc: np.ndarray) -> np.ndarray:
        """Whether each location (-1: none) is an own one."""
        return (loc >= 0) & self.mine[np.maximum(loc, 0)] if len(self.mine) else np.zeros(len(loc), bool)

    def queue_all(self) -> None:
        # the serial replay starts with every location queued, in order (popped last first)
        st = self.state
        for l in self.owned.tolist():
            st.queue[st.ctr[QN]] = l
            st.ctr[QN] += 1
            st.inq[l] = True

    # --- the inbox -------------------------------------------------------------------------------------------------

    def instances(self, inst: np.ndarray, what: str) -> np.ndarray:
        """The dense ids of instances ``inst`` (ids over all shares), each with own members."""
        x = self.x
        g = np.minimum(np.searchsorted(x.c_instance, inst), max(len(x.c_instance) - 1, 0))
        if len(inst) and (not len(x.c_instance) or (x.c_instance[g] != inst).any()):
            raise RuntimeError(f"share {self.s}: {what} arrived for a collective instance with no own member")
        return g

    def take_peers(self, got: list) -> None:
        """The other member shares of each own instance, from the owners' sets (numbered per owner)."""
        self.p_set = p_set = np.full(len(self.c_need), -1, np.int64)
        off, share, n_sets = [np.zeros(1, np.int64)], [], 0
        for p in got:
            if p is None:
                continue
            p_set[self.instances(p["instance"], "a member list")] = n_sets + p["set"]
            others = p["set_share"] != self.s
            n = np.add.reduceat(others, p["set_off"][:-1]) if len(others) else np.zeros(0, np.int64)
            off.append(off[-1][-1] + np.cumsum(n))
            share.append(p["set_share"][others])
            n_sets += len(p["set_off"]) - 1
        self.p_off = np.concatenate(off).astype(np.int64)
        self.p_share = np.concatenate(share) if share else np.zeros(0, np.int64)
        if ((p_set >= 0) != self.c_remote).any():
            raise RuntimeError(f"share {self.s}: the member shares of a collective instance are not known")

    def take_owned(self, owned: dict) -> None:
        """The instances this share owns whose reports come here (``_peers``), with their member shares, and
        what it folds of them; ``o_done[:o_done_n[0]]``: those whose results go out this round."""
        self.o_instance, self.o_set = owned["instance"], owned["set"]
        self.o_off, self.o_share = owned["set_off"], owned["set_share"]
        self.o_int, self.o_flt = owner_state(len(self.o_instance))
        self.o_done, self.o_done_n = np.zeros(len(self.o_instance), np.int64), np.zeros(1, np.int64)

    def receive(self, got: list) -> None:
        """The records the other shares sent (``patterns.kernels.ideal_shares``), in share order, into the
        walk's state."""
        got = [p for p in got if p is not None]
        if not got:
            return
        x, st = self.x, self.state
        ints = np.frombuffer(b"".join(got) if len(got) > 1 else got[0], np.int64)
        need = (st.pool_ctr[USED] if st.pool_ctr[WAITING] else 0) + len(ints)
        if need > len(st.pool):  # room for every computation of a predicted clock that may come
            pool = np.zeros(max(need, 2 * len(st.pool)))
            pool[:len(st.pool)] = st.pool
            self.state = st = st._replace(pool=pool)
        seg = np.zeros(len(got) + 1, np.int64)
        for j, p in enumerate(got):
            seg[j + 1] = seg[j] + len(p) // 8
        err = ideal_receive(ints, ints.view(np.float64), seg, self.glob, self.seq_span, self.imp_keys, self.imp_rows,
                            x.c_instance, x.c_off, x.c_loc, x.c_rows, x.c_type, x.c_root, self.c_need, self.c_root_own,
                            self.r_root_loc, self.r_last_loc, self.o_instance, self.o_set, self.o_off, self.o_int,
                            self.o_flt, self.o_done, self.o_done_n, st.sent, st.msg_wait, st.c_arr, st.c_got, st.c_at,
                            st.c_leave, st.c_rmax, st.c_rroot, st.queue, st.inq, st.ctr, st.c_pred, st.pred,
                            st.pred_at, st.pool, st.pool_ctr)
        if err:
            raise RuntimeError(f"share {self.s}: {RECEIVE_ERRORS[err]}")

    # --- the walk --------------------------------------------------------------------------------------------------

    def advance(self, stuck: int) -> None:
        """Pass the stuck location if it is this share's (its predicted clocks taken back), then walk."""
        x, st = self.x, self.state
        if stuck != NOT_STUCK:
            at = int(np.searchsorted(self.glob, stuck))
            if at < len(self.glob) and self.glob[at] == stuck and self.mine[at]:
                self.take_back(at)
                ideal_pass(at, x.kind, x.row, x.b_inst, st.ptr, st.b_done, st.queue, st.inq, st.ctr)
        ideal_advance(x.cut_off, x.kind, x.row, x.comp, x.c_inst, x.c_type, x.c_root, x.c_off, x.c_loc, x.c_rows,
                      self.c_need, self.c_remote, self.c_root_own, x.b_inst, x.b_off, x.b_loc, x.m_team, x.m_master,
                      x.t_off, x.t_loc, self.m_remote, *st)

    def take_back(self, l: int) -> None:
        """Location ``l`` passes the cut point it is blocked at: if that is a collective, its sends after it
        leave from its arrival, not from the instance's end (an inconsistent trace): the clocks predicted for
        them are taken back (they were not used: the instance is not complete anywhere) and sent when walked."""
        x, i = self.x, self.state.ptr[l]
        if x.kind[i] != COLLECTIVE or x.row[i] < 0 or x.c_inst[x.row[i]] < 0:
            return
        back = np.flatnonzero((self.pred_inst == x.c_inst[x.row[i]]) & (self.m_send == l))
        self.m_remote[back] = True
        self.pred_inst[back] = -1
        self.revoked = np.concatenate([self.revoked, back])

    def left(self) -> int:
        return int(self.state.ctr[1])

    def post(self) -> list:
        """This round's records for each share (None: nothing): send clocks, instance reports, an owner's
        results, predicted and revoked clocks."""
        x, st = self.x, self.state
        seg, buf = ideal_pack(
            self.K, self.s, self.direct, st.out_msg[:st.out_n[0]], self.revoked, st.out_coll[:st.out_n[1]],
            self.o_done[:self.o_done_n[0]], self.m_dest, self.m_rloc, self.m_seq, st.sent, self.p_set, self.p_off,
            self.p_share, self.o_instance, self.o_set, self.o_off, self.o_share, self.o_int, self.o_flt, x.c_off,
            x.c_loc, x.c_rows, x.c_root, x.c_inst, x.c_instance, self.c_need, st.c_arr, st.c_got, st.c_at,
            self.own_count, self.own_last_loc, self.own_type, self.glob, x.cut_off, x.kind, x.row, x.comp, x.b_inst,
            x.m_team, x.m_master, self.m_remote, st.ptr, self.pred_inst)
        self.revoked = np.zeros(0, np.int64)
        self.o_done_n[0] = 0
        out: list = [None] * self.K
        for d in np.flatnonzero(seg[1:] > seg[:-1]).tolist():
            out[d] = buf[seg[d]:seg[d + 1]].tobytes()
        return out

    def status(self, moved: bool) -> Status:
        left = self.left()
        if not left or moved:  # run_rounds reads where a share waits only when none moved
            return Status(left, moved, NOT_STUCK)
        blocked = self.owned[self.state.ptr[self.owned] < self.x.cut_off[self.owned + 1]]
        return Status(left, moved, int(self.glob[blocked].min()) if len(blocked) else NOT_STUCK)

    # --- the end ---------------------------------------------------------------------------------------------------

    def finals(self):
        """(the latest end of the own locations' ideal walks, the largest own useful time), None without any."""
        if not len(self.owned):
            return None
        end = self.state.clock[self.owned] + self.x.comp_last[self.owned]
        return float(np.max(end)), float(np.max(self.useful()[self.owned]))

    def useful(self) -> np.ndarray:
        """The useful time per location, at most T (``patterns.pop._profile``'s u)."""
        if self._useful is None:
            self._useful = self._useful_time()
        return self._useful

    def _useful_time(self) -> np.ndarray:
        r = self.ctx.results
        if self.ctx.n_locations == 1 and self.n_total > 1:
            # NumPy sums a column of a [C, 1] array pairwise, one of a wider array row by row (the serial way)
            r = {k: np.concatenate([r[k], np.zeros_like(r[k])], axis=1)
                 for k in ("execution", "mpi", "omp_time") if k in r}
            return np.minimum(useful_time(r)[:1], self.elapsed)
        return np.minimum(useful_time(r), self.elapsed)

    def profile(self, finals: list) -> dict:
        ends = np.array([f[0] for f in finals], np.float64)
        tops = np.array([f[1] for f in finals], np.float64)
        T = float(self.elapsed)
        T_ideal = float(np.max(ends) - self.t0) if len(ends) else 0.0
        top = float(np.max(tops)) if len(tops) else 0.0
        u = np.zeros(self.ctx.n_locations)
        u[self.owned] = self.useful()[self.owned]
        out = profile_arrays(self.ctx.n_cnodes, u, T, T_ideal, top)
        foreign = np.ones(self.ctx.n_locations, bool)
        foreign[self.owned] = False
        for v in out.values():
            if isinstance(v, np.ndarray):
                v[:, foreign] = 0.0
        return out


def _by_dest(dest: np.ndarray, cols: dict) -> dict[int, dict]:
    """The rows of ``cols`` for each destination share ``dest`` (in their order), as ``route`` takes them."""
    o = np.argsort(dest, kind="stable")
    dests, starts = np.unique(dest[o], return_index=True)
    bounds = np.append(starts, len(o))
    return {int(d): {k: np.asarray(v)[o[bounds[i]:bounds[i + 1]]] for k, v in cols.items()}
            for i, d in enumerate(dests.tolist())}


def _step(s: int, K: int, w: _Walk, inbox: dict, stuck: int):
    """One round of share ``s`` (``run_rounds``): the first takes the member shares of the own instances."""
    if w.p_set is None:
        w.take_peers(inbox.get(PEERS, []))
    left = w.left()
    w.state.out_n[:] = 0
    w.receive(inbox.get(ROUND, []))
    w.advance(stuck)
    out = w.post()
    return w, {ROUND: out}, w.status(w.left() < left or any(p is not None for p in out))
