"""The analysis per share, end to end: stages over a :class:`~analyzer.distributed.network.Network`, then the
reduction on share 0 into one context with every share-computed pattern's nonzero call-path rows.

``analyze_by_shares(trace, pats, net)`` runs on every process of the network (each MPI rank, or the one
process of ``--memory``) and returns the context on the process holding share 0, None elsewhere:

1. the share replay (``share_replay.share_stages``): every share walks its processes and builds its
   context (own rows plus halo rows; owned columns of the dense arrays);
2. one more stage here: each share computes its "location" patterns (``share_patterns``) and posts
   the owned columns of every result, of the visits and times, and its problems to share 0;
3. on share 0: the blocks are put together (each cell comes from exactly one share, so nothing is summed
   across shares and the values are the serial ones bit for bit), and the context is completed with the
   patterns that cannot run per share: "row" patterns over the full results, "global" ones (delay,
   critical path, POP, plugins that do not declare a scope) over tables built on share 0 from the
   fragments every share sent it (the fallback: as much memory on share 0 as a serial run needs for
   those tables, docs/performance.md).

The caller (``analyzer.analyze``) then computes the patterns not yet in ``ctx.results`` (the row and
global ones) and checks the subset rule over everything, as for a serial context.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from analyzer.replay.engine import assemble, check_tables, location_meta, partition
from patterns.tables import Table

from . import MISMATCHES, ROOT_CAUSE_PROBLEMS
from .mapped import MappedStore, bound_heap
from .memory import ROOT_CAUSE_BUDGET
from .network import MemoryNetwork, Network, run_stages
from .share_collectives import mismatch_problems
from .share_patterns import compute_owned, gather_rows, nonzero_rows, split_by_scope
from .share_replay import FALLBACK, merge_problems, share_stages
from .share_root_cause import is_root_cause, root_cause_by_shares, root_cause_problems

__all__ = ["analyze_by_shares", "plan"]

#: outbox kind of each share's owned results, for share 0
RESULT = "owned_results"


@dataclasses.dataclass
class Plan:
    """Which patterns run where, and which tables each part builds."""

    local: list  # "location" patterns, computed on every share
    later: list  # "row" and "global" patterns, computed on share 0 after the reduction
    share_tables: set[str]  # tables every share builds (for its location patterns)
    fallback_tables: set[str]  # tables share 0 builds from gathered fragments (for the global patterns)
    scopes: dict | None = None  # scopes that replace the patterns' own (split_by_scope)


def plan(pats, keep_tables: bool = False, root_cause: bool = False) -> Plan:
    """Split ``pats`` by scope.  ``keep_tables``: share 0 also needs every table the patterns read (the
    ``--timeline`` writer reads them), so they are all gathered there.  ``root_cause``: the root-cause patterns
    (``share_root_cause.MODULES``) are computed per share, like "location" patterns, after the exchanges of
    ``share_root_cause.root_cause_by_shares``."""
    scopes = {p.name: "location" for p in pats if is_root_cause(p)} if root_cause else None
    local, row, glob = split_by_scope(pats, scopes)
    share_tables = {t for p in local for t in p.requires}
    fallback = {t for p in glob for t in p.requires}
    if keep_tables:
        fallback |= share_tables
    if fallback:
        fallback = check_tables(fallback)
        # the problems of a share-0 table build are the serial ones only when it builds every table: it does
        fallback |= check_tables(share_tables) if share_tables else set()
    return Plan(local, row + glob, check_tables(share_tables) if share_tables else set(), fallback, scopes)


def analyze_by_shares(trace, pats, net: Network, salvage: bool = False, progress=None, keep_tables: bool = False):
    """The context of the whole trace with the results of every share-computable pattern, on the process
    running share 0 (None on the others)."""
    # the root-cause analysis per share keeps every local share's context across its exchanges (under --memory
    # mapped from the spill folder); not where share 0 gets every table anyway (--timeline)
    by_shares = not keep_tables and any(is_root_cause(q) for q in pats)
    p = plan(pats, keep_tables, root_cause=by_shares)
    shares = partition(trace, net.n_shares)
    _, n_locations, location_process, location_thread = location_meta(trace)  # of the whole trace
    stages = share_stages(trace, shares, p.share_tables, salvage=salvage, progress=progress,
                          fallback_tables=p.fallback_tables, compact=True)
    fallback: list = []

    def take_fallback(stage):
        """Share 0 keeps the fragments sent for the fallback out of the stage's inbox (in this process)."""
        def run(s, state, inbox):
            if FALLBACK in inbox:
                got = inbox.pop(FALLBACK)
                if s == 0:
                    fallback.extend(x for x in got if x is not None)
            return stage(s, state, inbox)
        return run

    meta: dict = {}

    def results_stage(s, state, inbox):
        ctx = state.context
        owned = np.asarray(ctx.owned, np.int64)  # columns of this context
        blocks = nonzero_rows(compute_owned(ctx, p.local, p.scopes))
        glob = owned if ctx.global_location is None else ctx.global_location[owned]
        part = {"owned": glob, "blocks": blocks, "visits": ctx.visits[:, owned], "excl": ctx.excl_time[:, owned],
                "incl": ctx.incl_time[:, owned], "counters": {n: a[:, owned] for n, a in ctx.counters.items()},
                "problems": state.problems, "table_rows": {n: len(t) for n, t in ctx.tables.items()}}
        if s == 0:  # what every share's context holds alike (call tree, region attributes)
            meta["ctx"] = dataclasses.replace(ctx, visits=None, excl_time=None, incl_time=None, tables={},
                                              results={}, derived={}, counters={}, problems=[], owned=None,
                                              global_location=None, n_locations=int(n_locations),
                                              location_process=location_process, location_thread=location_thread)
        return None, {RESULT: [part] + [None] * (net.n_shares - 1)}

    def last_stage(s, state, inbox):
        # the share's context is used at once, never kept: a spilled state holds no trace object
        result, outbox = stages[-1](s, state, inbox)
        state, mine = results_stage(s, result, {})
        return state, {**outbox, **mine}

    if by_shares and net.keeps_states:
        states = run_stages(net, [stages[0]] + [take_fallback(st) for st in stages[1:]])
        rc_net, store = net, None
    elif by_shares:  # --memory: each share's context mapped as soon as it is built, the rest in this process
        # a share's pages released after its step when the next step could take the process past 80 % of the
        # limit (MappedStore.trim; the rest: a step growing more than the steps before it)
        limit = getattr(net, "memory_limit", None)
        store = MappedStore(os.path.join(net.directory, "mapped"),
                            budget=None if limit is None else int(ROOT_CAUSE_BUDGET * limit))
        bound_heap()
        states = {}

        def mapped_context(s, state, inbox):
            result, outbox = stages[-1](s, state, inbox)
            states[s] = store.map(result, key=s)
            store.trim(s)
            return None, outbox

        run_stages(net, [stages[0]] + [take_fallback(st) for st in stages[1:-1]] + [take_fallback(mapped_context)])
        rc_net = MemoryNetwork(net.n_shares)  # what the shares exchange from here on is small
    if by_shares:
        ctxs = {s: states[s].context for s in rc_net.local}
        for s, part in root_cause_by_shares(rc_net, ctxs, shares, pats, store).items():
            states[s].problems["root_cause"] = part
        del ctxs

        def results_after(s, state, inbox):
            # the exchanges kept their own states: each share's context is the one the replay left
            out = results_stage(s, states[s], inbox)
            # its results are in the outbox: the context goes, with the caches its patterns left in it (under
            # --memory they are not mapped, and every share's would add up in the one process)
            states[s] = None
            if store is not None:
                store.trim(s)
            return out

        if store is not None:
            store.new_stage()
        run_stages(rc_net, [results_after])
        net = rc_net
    else:
        run_stages(net, [stages[0]] + [take_fallback(st) for st in stages[1:-1]] + [take_fallback(last_stage)])
    if 0 not in net.local:
        return None
    parts = [x for x in net.inbox(0).get(RESULT, []) if x is not None]
    return _reduce(trace, parts, p, fallback, meta["ctx"])


class RowsOnShares(Table):
    """A table whose rows stayed on the shares: on share 0 only whether it has rows is known (``len``:
    rows over all shares, halo rows counted once per share holding them, so 0 exactly when the table is
    empty; ``mpi_rma_ops``, which every share holds whole, counted once).  What ``Pattern.unmeasured``
    asks of a table; reading a column says where the rows are."""

    def __init__(self, name: str, counts: list[int]):
        super().__init__()
        self.name = name
        self.n = int(max(counts, default=0) if name == "mpi_rma_ops" else sum(counts))

    def __len__(self) -> int:
        return self.n

    def __missing__(self, key):
        raise KeyError(f"replay table {self.name!r}: its rows stayed on the analysis shares (only patterns of "
                       f"scope 'location' read them; a pattern of scope 'global' gets them on share 0)")


def _scatter(parts, key, C, L, dtype):
    out = np.zeros((C, L), dtype)
    for part in parts:
        out[:, part["owned"]] = part[key]
    return out


def _reduce(trace, parts, p: Plan, fallback, bare):
    """Share 0: one context from the shares' owned columns (and the fallback tables)."""
    C, L = bare.n_cnodes, bare.n_locations
    owned = [part["owned"] for part in parts]
    rows = gather_rows([part["blocks"] for part in parts], owned, C, L)
    if p.fallback_tables:
        # every table the run reads is built here, so the problems are the serial ones (see plan())
        ctx = assemble(trace, fallback, p.fallback_tables)
        fallback.clear()
    else:
        ctx = dataclasses.replace(bare, visits=_scatter(parts, "visits", C, L, np.int64),
                                  excl_time=_scatter(parts, "excl", C, L, np.float64),
                                  incl_time=_scatter(parts, "incl", C, L, np.float64))
        ctx.counters = {n: _scatter([{"owned": q["owned"], n: q["counters"][n]} for q in parts], n, C, L, np.float64)
                        for n in parts[0]["counters"]}
        ctx.problems = merge_problems([part["problems"] for part in parts], trace)
        ctx.derived[ROOT_CAUSE_PROBLEMS] = root_cause_problems([part["problems"].get("root_cause") for part in parts])
        ctx.tables = {n: RowsOnShares(n, [part["table_rows"].get(n, 0) for part in parts])
                      for n in p.share_tables}
        if "collectives" in p.share_tables:  # the instances' owners counted the mismatched ones
            ctx.derived[MISMATCHES] = mismatch_problems([part["problems"].get("collectives") for part in parts],
                                                        trace)
    # the share-computed results as their nonzero call-path rows (analyzer.analyze holds them as the cube's
    # RowValues: dense one metric at a time), not a [C, L] array per metric
    ctx.results = {}
    ctx.stored_results = rows
    return ctx
