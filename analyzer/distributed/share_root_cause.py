"""The root-cause analysis by shares: delay costs and the critical path of each share's own locations, from its
backward inputs (``share_backward``) and what the other shares send while the replays run.

* **Delay costs** (``patterns.kernels.delay.delay_round``): every share runs its locations' backward replay as
  far as it can; when the replay passes an own point whose wait state another share handles, the costs stored
  on it go there (8 numbers and the point's position in the list of ghosts the share sent it); a share whose
  causer waits for such costs stops there until the next round brings them.  Each round ends with every
  share's status (``rounds.run_rounds``); a cycle of waits (an inconsistent trace) is broken at the lowest
  location, as the serial replay does.  A location's costs come out as serially, bit for bit: every
  handling charges its causer's location only, and it runs there at the same place in that location's
  backward order (a waiter or member never waits for the handling, the costs it sends are final when the
  replay passes it).
* **Critical path** (``patterns.kernels.backward.walk_path``): one walk, from where the run ends back to its
  start; a share walks its part and hands the walk to the share of the location where the path goes on
  (a *remote link*: the global location and the cut there).  The impact metrics sum over all locations
  (``patterns.critical_path.impact_metrics``): every share gets every share's owned columns of the path
  and of the time without waits (one exchange of two ``[C, locations]`` arrays), so the sums are the serial
  ones in the serial order.
"""

from __future__ import annotations

import numpy as np

from analyzer.replay.engine import location_meta

from . import ROOT_CAUSE_MODULES
from .network import EVERY, run_stages
from .rounds import NOT_STUCK, Status, run_rounds

__all__ = ["share_delay", "share_critical_path"]

_COSTS, _TOKEN, _COLUMNS = "delay_costs", "cp_token", "cp_columns"


def _g2l(sb) -> dict:
    return {int(g): l for l, g in enumerate(sb.global_location)}


def share_delay(net, sbs: dict, store=None) -> dict:
    """``{share: (res, forced)}`` (``res`` ``[metric, cnode, local location]``, exact in the owned columns;
    ``forced``: handlings forced on this share) for the local shares' ``ShareBackward`` in ``sbs``.
    ``store``: a ``mapped.MappedStore``: the replay's state is mapped too, every share's pages released after
    its step."""
    from patterns.kernels.delay import DelayState, delay_round

    states = {s: DelayState(sb.inp, sb.n_own) for s, sb in sbs.items()}
    if store is not None:
        for s in states:
            store.map(states[s], key=s)
            store.trim(s)
    ghost_of = {}  # per share: source share -> ghost id of each position in that source's list
    for s, sb in sbs.items():
        by = {}
        for src in np.unique(sb.ghost_src):
            sel = np.flatnonzero(sb.ghost_src == src)
            ids = np.full(int(sb.ghost_pos[sel].max()) + 1, -1, np.int64)
            ids[sb.ghost_pos[sel]] = sb.n_own + sel
            by[int(src)] = ids
        ghost_of[s] = by
    # per share the local id of each location it has touches of (its own) by global id: a location blocked in a
    # cycle of waits is forced by its owner only
    owners = {s: {int(sb.global_location[l]): int(l) for l in np.flatnonzero(np.diff(sb.inp.tc_off) > 0)}
              for s, sb in sbs.items()}

    def step(s, state, inbox, stuck):
        sb, st = sbs[s], states[s]
        ids, costs = [], []
        for src, p in enumerate(inbox.get(_COSTS, [])):
            if p is not None:
                ids.append(ghost_of[s][src][p["slot"]])
                costs.append(p["cost"])
        ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        costs = np.concatenate(costs) if costs else np.zeros((0, 8))
        force = owners[s].get(stuck, -1) if stuck != NOT_STUCK else -1
        gm = (sb.gm_off, sb.gm_cnode, sb.gm_value)
        left, moved, blocked, em = delay_round(sb.inp, st, sb.n_own, gm, sb.ghost_h, ids, costs, force)
        out = [None] * net.n_shares
        for d in np.unique(sb.em_dest[em]):
            sel = em[sb.em_dest[em] == d]
            out[int(d)] = {"slot": sb.em_slot[sel], "cost": st.costs_of(sb.em_point[sel])}
        status = Status(int(left), bool(moved or len(em) or len(ids) or force >= 0),
                        int(sb.global_location[blocked]) if blocked >= 0 else NOT_STUCK)
        if store is not None:
            store.trim(s)
        return state, {_COSTS: out}, status

    run_rounds(net, step)
    return {s: (st.res, st.forced) for s, st in states.items()}


def share_critical_path(net, ctxs: dict, sbs: dict, store=None) -> dict:
    """``{share: profile}``: the critical path's metrics as ``patterns.critical_path`` gives them, exact in the
    owned columns of each local share's context.  ``store``: as for :func:`share_delay`."""
    from patterns.critical_path import impact_metrics, own_time
    from patterns.kernels.backward import walk_path

    lcp = {s: np.zeros((ctxs[s].n_cnodes, ctxs[s].n_locations)) for s in sbs}
    owners = {s: _g2l(sb) for s, sb in sbs.items()}

    def step(s, state, inbox, stuck):
        sb, inp = sbs[s], sbs[s].inp
        walks = []
        if state is None and sb.cp_starts_here:
            loc = inp.cp_start_loc
            budget = sb.n_points_run + 2  # the serial walk's bound: a cycle of links (an inconsistent trace) ends
            if inp.cp_start_sp >= 0:
                walks.append((loc, int(inp.sp_i[inp.cp_start_sp, 1]), inp.cp_start_sp - 1, budget))
            else:
                walks.append((loc, int(inp.n_cuts[loc]) + 1, int(inp.sp_off[loc + 1]) - 1, budget))
        for p in inbox.get(_TOKEN, []):
            if p is not None:
                loc = owners[s][p[0]]
                lo, hi = int(inp.sp_off[loc]), int(inp.sp_off[loc + 1])
                at = lo + int(np.searchsorted(inp.sp_i[lo:hi, 1], p[1]))
                walks.append((loc, p[1], at - 1, p[2]))
        out = [None] * net.n_shares
        for loc, end, i, budget in walks:
            k, budget = walk_path(inp, lcp[s], loc, end, i, budget)
            if k >= 0 and budget > 0:
                out[int(sb.rl_share[k])] = (int(sb.rl_loc[k]), int(sb.rl_cut[k]), int(budget))
        sent = any(x is not None for x in out)
        if store is not None and walks:
            store.trim(s)
        return True, {_TOKEN: out}, Status(1 if sent else 0, bool(walks), NOT_STUCK)

    run_rounds(net, step)
    # every share's owned columns to every share: the impact metrics sum over all locations
    t = {}
    for s in sbs:
        t[s] = own_time(ctxs[s], sbs[s].inp, sbs[s].n_own)
        if store is not None:
            store.trim(s)

    def columns(s, state, inbox):
        o = np.asarray(ctxs[s].owned, np.int64)
        return None, {_COLUMNS: {EVERY: (sbs[s].global_location[o], lcp[s][:, o], t[s][:, o])}}

    run_stages(net, [columns])
    out = {}
    for s in sbs:
        got = [p for p in net.inbox(s).get(_COLUMNS, []) if p is not None]
        L = location_meta(ctxs[s].trace)[1]  # the serial arrays' width: their sums over locations alike
        C = ctxs[s].n_cnodes
        full_lcp, full_t = np.zeros((C, L)), np.zeros((C, L))
        for g, a, b in got:
            full_lcp[:, g], full_t[:, g] = a, b
        metrics = impact_metrics(full_lcp, full_t)
        o = np.asarray(ctxs[s].owned, np.int64)
        mine = sbs[s].global_location[o]
        prof = {}
        for name, full in metrics.items():
            a = np.zeros((C, ctxs[s].n_locations))
            a[:, o] = full[:, mine]
            prof[name] = a
        out[s] = prof
    return out


MODULES = ROOT_CAUSE_MODULES


def is_root_cause(pattern) -> bool:
    return type(pattern).__module__ in MODULES


def root_cause_by_shares(net, ctxs: dict, shares: list, pats, store=None) -> dict:
    """Compute the selected root-cause patterns' profiles on every local share, into each context's
    ``derived`` where the patterns read them (``patterns.delay.delay_profile`` and the like), so the share's
    pattern step computes them as "location" patterns.  ``pats``: every selected pattern (POP needs the
    execution, MPI and OpenMP times first: computed here, their results stay).  Returns per share its part of
    the problems (the handlings forced on an inconsistent trace).  ``store``: a ``mapped.MappedStore`` where
    one process holds every share (``--memory``): their data mapped, one share's step resident at a time."""
    from patterns.api import compute_results
    from patterns.backward_points import KINDS

    mods = {type(p).__module__ for p in pats if is_root_cause(p)}
    forced = {s: 0 for s in ctxs}
    if mods & {"patterns.delay", "patterns.critical_path"}:
        from .share_backward import share_backward_inputs

        sbs = share_backward_inputs(net, ctxs, shares, store)
        if "patterns.delay" in mods:
            _stage_starts(store)
            for s, (res, n) in share_delay(net, sbs, store).items():
                prof = {}
                for k, kind in enumerate(KINDS):
                    prof[f"delay_{kind}"] = res[k]
                    prof[f"delay_{kind}_longterm"] = res[len(KINDS) + k]
                ctxs[s].derived["patterns.delay"] = prof
                forced[s] = int(n)
        if "patterns.critical_path" in mods:
            _stage_starts(store)
            for s, prof in share_critical_path(net, ctxs, sbs, store).items():
                ctxs[s].derived["patterns.critical_path"] = prof
        del sbs
    if "patterns.pop" in mods:
        from .share_pop import share_pop_profiles

        first = [p for p in pats if p.name in ("execution", "mpi", "omp_time")]
        _stage_starts(store)
        for s, ctx in ctxs.items():
            compute_results(ctx, [p for p in first if p.name not in ctx.results])
            if store is not None:
                store.trim(s)
        _stage_starts(store)
        for s, prof in share_pop_profiles(net, ctxs, store).items():
            ctxs[s].derived["patterns.pop"] = prof
    return {s: {"delay_forced": n} for s, n in forced.items()}


def _stage_starts(store) -> None:
    """A new stage grows each share by its own amount: its first share starts without any share's pages."""
    if store is not None:
        store.new_stage()


def root_cause_problems(parts: list) -> list[str]:
    """The serial analysis's problem lines of the root-cause analysis from every share's part."""
    n = sum(int(p.get("delay_forced", 0)) for p in parts if p)
    return [f"delay analysis: {n} wait state(s) met out of order (inconsistent trace); their costs are approximate"] \
        if n else []
