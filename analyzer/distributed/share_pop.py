"""The POP metrics (``patterns.pop``) per share of processes: each share computes the profile of its own
locations, bit for bit the serial one in its owned columns, with the run's T and T_ideal.

What is global in ``patterns.pop`` is a few extremes and the ideal-network replay
(``patterns.kernels.ideal``).  The extremes travel as one value per share: the first and last event of its
locations (T), the latest end of its ideal walk (T_ideal) and its largest useful time; a maximum or minimum
of the shares' extremes is the serial one exactly.  The replay runs per share over its own locations, in
rounds (``analyzer.distributed.rounds``): each round a share takes what arrived, walks its locations until
each is blocked on something remote or done (:func:`patterns.kernels.ideal.ideal_advance`, the serial
replay's loop, its state kept between rounds) and posts what others wait for:

* ``"pop_send_clocks"``, to the share of the receiver: per own send whose receiver is another share's,
  ``recv_loc`` (global id), ``recv_seq`` (they name the message on both sides) and the send's ``clock``;
* ``"pop_arrivals"``, to the instance's owner share (``instance % K``, as in ``share_collectives``): per
  collective instance with members elsewhere, once all its own members arrived: their number, ``need``
  (the instance's members over all shares), the latest arrival, the last root in location order (global
  id, -1 for none) and its arrival, the last member's location and the instance type it called;
* ``"pop_collective_ends"``, from the owner to each member share, once every member arrived: the latest
  arrival, the root's and the type (those of the member last in location order, as the serial replay takes
  them), from which each share computes its members' leave times as the serial replay does.

OpenMP teams never span processes, so forks and barriers are walked within the share.  A cycle of waits
(an inconsistent trace) ends as serially: when nobody moved, the lowest location with cut points left lets
its blocked cut point pass (``stuck`` of ``run_rounds``).

Exchanges: one before the rounds (to every share: the share's owned location ids, its first and last
event and its part of a bound on the rounds, so every share knows T, t0, whose each location is and when
the rounds are overdue), the rounds, one after (to every share: the largest end of the ideal walk and the
largest useful time).  The state of a round holds the share's context
(MemoryNetwork and MpiNetwork keep states in memory).
"""

from __future__ import annotations

import numpy as np

from patterns.kernels.ideal import (QN, IdealState, combine_arrivals, ideal_advance, ideal_deliver, ideal_pass,
                                    ideal_state, own_arrivals)
from patterns.pop import ideal_inputs, location_spans, profile_arrays, useful_time

from .network import EVERY, Network, route, run_stages
from .rounds import NOT_STUCK, Status, run_rounds

__all__ = ["share_pop_profiles"]

SPANS, CLOCKS, ARRIVALS, ENDS, FINALS = "pop_spans", "pop_send_clocks", "pop_arrivals", "pop_collective_ends", \
    "pop_finals"
#: columns of an arrivals report, in :func:`patterns.kernels.ideal.combine_arrivals`' order after ``slot``
_REPORT = ("count", "latest", "root_loc", "root", "last_loc", "last_type")


def share_pop_profiles(net: Network, ctxs) -> dict[int, dict]:
    """The POP profile (``patterns.pop.pop_profile``) of every share local to ``net``: ``ctxs[s]`` is share s's context (built with
    the tables ``patterns.pop.REQUIRES``, ``ctx.results`` holding ``execution``, ``mpi`` and ``omp_time``
    in its owned columns).  Each profile's arrays are ``[C, ctx.n_locations]``, the serial values in the
    owned columns and zeros elsewhere; ``"_elapsed"`` and ``"_ideal"`` are the serial floats."""
    K = net.n_shares

    def spans(s, state, inbox):
        ctx = ctxs[s]
        glob = _global_ids(ctx)
        first, last = location_spans(ctx.trace, glob[ctx.owned])
        return first, {SPANS: {EVERY: {"owned": glob[ctx.owned], "first": _extreme(np.nanmin, first),
                                      "last": _extreme(np.nanmax, last), "rounds": _most_rounds(ctx)}}}

    run_stages(net, [spans])
    limit = sum(p["rounds"] for p in net.inbox(net.local[0])[SPANS] if p is not None) + 2 if net.local else None
    walks, _ = run_rounds(net, lambda s, w, inbox, stuck: _step(s, K, ctxs[s], w, inbox, stuck), limit)

    def finals(s, w, inbox):
        return w, {FINALS: {EVERY: w.finals()}}

    walks = run_stages(net, [finals])
    return {s: walks[s].profile([p for p in net.inbox(s)[FINALS] if p is not None]) for s in net.local}


def _global_ids(ctx) -> np.ndarray:
    glob = getattr(ctx, "global_location", None)
    return np.arange(ctx.n_locations, dtype=np.int64) if glob is None else np.asarray(glob, np.int64)


def _most_rounds(ctx) -> int:
    """A share's part of a bound on the rounds: each round passes a cut point, or posts a send clock, an
    instance report or an instance's end, or (nobody moved) precedes a round that passes one."""
    return 2 * len(ctx.table("sync_points")) + len(ctx.table("messages")) + 2 * len(ctx.table("collectives"))


def _extreme(f, v: np.ndarray) -> float:
    return float(f(v)) if np.isfinite(v).any() else np.nan


class _Walk:
    """A share's ideal replay between rounds: its inputs, the kernel's state, where its messages go, and as
    an instance owner the reports on its instances.  ``first``: the own locations' first events (NaN: none)."""

    def __init__(self, s: int, K: int, ctx, first: np.ndarray, spans: list):
        self.s, self.K, self.ctx = s, K, ctx
        got = [p for p in spans if p is not None]
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
        self.glob = _global_ids(ctx)
        self.owned = np.asarray(ctx.owned, np.int64)
        self.mine = mine = np.zeros(L, bool)
        mine[self.owned] = True
        C = ctx.table("collectives")
        x = ideal_inputs(ctx, mine[np.asarray(C["loc"], np.int64)] if len(C) else None)
        self.x = x
        start = np.full(L, self.t0, np.float64)
        start[self.owned] = np.where(np.isfinite(first), first, self.t0)
        n_ci = len(x.c_off) - 1
        self.state = IdealState(*ideal_state(start, x.cut_off, x.n_messages, len(x.c_inst), len(x.c_rows), n_ci,
                                             len(x.b_inst), len(x.b_off) - 1, len(x.kind), len(x.t_off) - 1))
        self.queue_all()
        # collectives: the members over all shares (the communicator's size: the instance is complete)
        self.own_count = np.diff(x.c_off)
        self.c_need = np.asarray(C["n_members"], np.int64)[x.c_rows[x.c_off[:-1]]] if n_ci else self.own_count
        self.c_remote = self.own_count < self.c_need
        self.c_root_own = np.ones(n_ci, np.bool_)
        self.own_type = x.c_type.copy()  # the last own member's: reported before the owner's replaces it
        # messages: sent here to another share's receiver, received here from another share's sender
        M = ctx.table("messages")
        self.m_send, self.m_recv = np.asarray(M["send_loc"], np.int64), np.asarray(M["recv_loc"], np.int64)
        self.m_seq = np.asarray(M["recv_seq"], np.int64)
        send_here, recv_here = self.here(self.m_send), self.here(self.m_recv)
        self.m_remote = send_here & ~recv_here
        imports = np.flatnonzero(recv_here & ~send_here)
        self.seq_span = int(self.m_seq.max()) + 1 if len(M) else 1
        keys = self.m_recv[imports] * self.seq_span + self.m_seq[imports]
        o = np.argsort(keys, kind="stable")
        self.imp_keys, self.imp_rows = keys[o], imports[o]
        # as the owner of instances s, s + K, ...: reports folded per slot (instance // K) until complete
        self.acc: dict[str, np.ndarray] = {}
        self.pending = {"instance": np.zeros(0, np.int64), "src": np.zeros(0, np.int64)}
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

    def deliver(self, inbox: dict) -> None:
        """Send clocks and the owners' collective ends into the kernel's state."""
        x, st = self.x, self.state
        got = [p for p in inbox.get(CLOCKS, []) if p is not None]
        rows, clocks = np.zeros(0, np.int64), np.zeros(0, np.float64)
        if got:
            loc = np.concatenate([p["recv_loc"] for p in got])
            seq = np.concatenate([p["recv_seq"] for p in got])
            clocks = np.concatenate([p["clock"] for p in got])
            key = np.searchsorted(self.glob, loc) * self.seq_span + seq
            at = np.minimum(np.searchsorted(self.imp_keys, key), max(len(self.imp_keys) - 1, 0))
            if not len(self.imp_keys) or (self.imp_keys[at] != key).any():
                raise RuntimeError(f"share {self.s}: a send clock arrived for a message no own location receives")
            rows = self.imp_rows[at]
        ends = [p for p in inbox.get(ENDS, []) if p is not None]
        g = np.zeros(0, np.int64)
        latest, root, typ = np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
        if ends:
            inst = np.concatenate([p["instance"] for p in ends])
            g = np.minimum(np.searchsorted(x.c_instance, inst), max(len(x.c_instance) - 1, 0))
            if not len(x.c_instance) or (x.c_instance[g] != inst).any():
                raise RuntimeError(f"share {self.s}: the end arrived of a collective instance with no own member")
            latest = np.concatenate([p["latest"] for p in ends])
            root = np.concatenate([p["root"] for p in ends])
            typ = np.concatenate([p["type"] for p in ends])
        if len(rows) or len(g):
            ideal_deliver(rows, clocks, g, latest, root, typ, x.c_off, x.c_loc, x.c_rows, x.c_type, x.c_root,
                          self.c_need, self.c_root_own, st.sent, st.msg_wait, st.c_arr, st.c_got, st.c_at, st.c_leave,
                          st.c_rmax, st.c_rroot, st.queue, st.inq, st.ctr)

    def own_instances(self, inbox: dict) -> dict:
        """As an owner: fold the reports that arrived; the ends of the instances now complete, per member
        share."""
        got = [(src, p) for src, p in enumerate(inbox.get(ARRIVALS, [])) if p is not None]
        if not got:
            return {}
        inst = np.concatenate([p["instance"] for _, p in got])
        src = np.concatenate([np.full(len(p["instance"]), q, np.int64) for q, p in got])
        cols = {k: np.concatenate([p[k] for _, p in got]) for k in _REPORT + ("need",)}
        slot = inst // self.K
        self._grow(int(slot.max()) + 1)
        a = self.acc
        a["need"][slot] = cols["need"]
        combine_arrivals(slot, *(cols[k] for k in _REPORT), a["count"], a["latest"], a["root_loc"], a["root"],
                         a["last_loc"], a["type"])
        pend_i = np.concatenate([self.pending["instance"], inst])
        pend_s = np.concatenate([self.pending["src"], src])
        ps = pend_i // self.K
        done = a["count"][ps] == a["need"][ps]
        self.pending = {"instance": pend_i[~done], "src": pend_s[~done]}
        out: dict[int, dict] = {}
        di, ds = pend_i[done], pend_s[done]
        for d in np.unique(ds).tolist():
            i = di[ds == d]
            si = i // self.K
            out[d] = {"instance": i, "latest": a["latest"][si], "root": a["root"][si], "type": a["type"][si]}
        return out

    def _grow(self, n: int) -> None:
        have = len(self.acc.get("count", ()))
        if n <= have:
            return
        n = max(n, 2 * have)
        init = {"need": 0, "count": 0, "latest": -np.inf, "root_loc": -1, "root": -np.inf, "last_loc": -1,
                "type": 0}
        for k, v in init.items():
            grown = np.full(n, v, np.float64 if isinstance(v, float) else np.int64)
            if k in self.acc:
                grown[:have] = self.acc[k]
            self.acc[k] = grown

    # --- the walk --------------------------------------------------------------------------------------------------

    def advance(self, stuck: int) -> bool:
        """Pass the stuck location if it is this share's, then walk; whether a cut point passed."""
        x, st = self.x, self.state
        left = self.left()
        if stuck != NOT_STUCK:
            at = int(np.searchsorted(self.glob, stuck))
            if at < len(self.glob) and self.glob[at] == stuck and self.mine[at]:
                ideal_pass(at, x.kind, x.row, x.b_inst, st.ptr, st.b_done, st.queue, st.inq, st.ctr)
        ideal_advance(x.cut_off, x.kind, x.row, x.comp, x.c_inst, x.c_type, x.c_root, x.c_off, x.c_loc, x.c_rows,
                      self.c_need, self.c_remote, self.c_root_own, x.b_inst, x.b_off, x.b_loc, x.m_team, x.m_master,
                      x.t_off, x.t_loc, self.m_remote, *st)
        return self.left() < left

    def left(self) -> int:
        return int(self.state.ctr[1])

    def exports(self) -> dict:
        """What this round's walk produced for other shares: send clocks, instance reports."""
        x, st = self.x, self.state
        posted: dict = {}
        rows = st.out_msg[:st.out_n[0]].copy()
        if len(rows):
            recv = self.glob[self.m_recv[rows]]
            posted[CLOCKS] = _by_dest(self.loc_share[recv], {"recv_loc": recv, "recv_seq": self.m_seq[rows],
                                                             "clock": st.sent[rows]})
        g = st.out_coll[:st.out_n[1]].copy()
        if len(g):
            latest, root_q, root = own_arrivals(g, x.c_off, x.c_rows, x.c_root, st.c_at)
            last_q = x.c_off[g + 1] - 1
            inst = x.c_instance[g]
            posted[ARRIVALS] = _by_dest(inst % self.K, {
                "instance": inst, "need": self.c_need[g], "count": self.own_count[g], "latest": latest,
                "root_loc": np.where(root_q >= 0, self.glob[x.c_loc[np.maximum(root_q, 0)]], -1), "root": root,
                "last_loc": self.glob[x.c_loc[last_q]], "last_type": self.own_type[g]})
        return posted

    def status(self, moved: bool) -> Status:
        left = self.left()
        if not left:
            return Status(0, moved, NOT_STUCK)
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
        for k, v in out.items():
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


def _step(s: int, K: int, ctx, w, inbox: dict, stuck: int):
    """One round of share ``s`` (``run_rounds``): the first builds the walk from the spans every share sent."""
    if not isinstance(w, _Walk):  # the state of the spans stage: the own locations' first events
        w = _Walk(s, K, ctx, w, inbox[SPANS])
    w.deliver(inbox)
    ends = w.own_instances(inbox)
    moved = w.advance(stuck)
    posted = w.exports()
    if ends:
        posted[ENDS] = ends
    outbox = route(K, posted)
    return w, outbox, w.status(moved or bool(posted))
