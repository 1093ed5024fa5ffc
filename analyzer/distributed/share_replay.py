"""The share replay: the stages that turn a trace and K shares of whole processes into one
:class:`~patterns.context.AnalysisContext` per share.

Share ``s`` owns the locations ``shares[s]`` (``engine.partition``: contiguous runs of the walk order).
Its context keeps GLOBAL location ids: ``n_locations`` is every location, ``calltree`` is the serial
tree (every share merges all shares' builder trees the same way), ``visits``/``excl_time``/``incl_time``/
``counters`` hold the owned columns (zeros elsewhere), ``owned`` the owned ids; each table holds the
serial table's rows that touch an owned location plus the halo rows the wait states of owned locations
need, in the serial table's relative order.  So a "location" pattern's value in an owned column is the
serial value bit for bit.

Stages (``share_stages``; each ``stage(share, state, inbox) -> (state, outbox)``, network.py):

1. walk: ``walk_share`` over the share's locations.  Posts ``"tree"`` (the builder tree) to every share,
   ``"sends"`` (send rows, the walking share's builder ids) to the share owning the destination process,
   its numbers of send and receive rows and the collective summary to every share, and ``"fallback"``
   (the walked Share with only the fragment kinds of ``fallback_tables``) to share 0.
2. match: every share merges the trees in share order (``merge_trees`` + ``freeze``: the same ids on
   every share), remaps its own fragments and the received sends (with the sending share's map), builds
   the process-local tables, and matches its processes' receives with the sends routed to it
   (``matching.match_messages``: every receive of a channel lives in its destination process, so the pairs
   are the serial ones); matched rows whose send location is foreign go back to the sender's share.
   Collective candidates go to each instance's owner share; one-sided rows to every share; the columns
   of its process-local tables to every share.
3. reduce: the message halo rows are merged with the own rows (serial order: receiving location, then
   the order on it); instance owners reduce the collective candidates and post the winners back.  A table
   empty on this share gets the columns of the serial table (builders give an empty table only the
   schema's, a filled one also their extras such as ``omp_team_members.cnode``; the serial messages table
   has ``send_pos`` once the trace has both send and receive rows).
4. context: the share's AnalysisContext; the final state is a :class:`ShareResult` (``.context``,
   ``.problems``: the parts :func:`merge_problems` turns into the serial ``ctx.problems`` on share 0).

Collectives and ``mpi_rma_ops`` live in ``analyzer.distributed.share_collectives`` (called only when those
tables are wanted).  The hooks this module calls there (cnode columns of every row handed over are merged
BUILDER ids, the same on every share; this module maps the tables it gets back to final ids):

* ``collective_summary(trace, rows) -> payload`` (stage 1; ``rows``: the share's own collectives rows as
  one dict of columns, possibly empty); posted to every share.
* ``collective_candidates(trace, shares, s, rows, summaries) -> (coll_state, {dest: payload})`` (stage 2;
  ``summaries``: one payload per source share, None for none).
* ``reduce_candidates(trace, shares, s, coll_state, received) -> (coll_state, {dest: payload})`` (stage 3).
* ``collective_table(trace, shares, s, coll_state, received) -> (Table, problems_part)`` (stage 4).
* ``collective_problems(parts) -> list[str]`` (on share 0: every share's ``problems_part``, in share order;
  the serial texts of ``build_collectives``).
* ``rma_rows(trace, rows) -> payload`` (stage 2, to every share) and ``rma_table(trace, payloads) -> Table``
  (stage 3; every share gets all rows, in the serial order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analyzer.replay.calltree import CallTreeBuilder
from analyzer.replay.engine import (ALL_TABLES, FRAGMENT_KINDS, TIMELINE_TABLES, Share, check_tables, counter_metrics,
                                    location_meta, merge_trees, region_arrays, remap_fragment, walk_order, walk_share)
from analyzer.replay.matching import (build_locks, build_omp_counted, concat, match_messages, message_problem,
                                      remap_cnodes, unforked_problem)
from analyzer.replay.tasks import add_task_busy, build_task_tables
from patterns.context import AnalysisContext
from patterns.tables import MESSAGES, MPI_FILE_OPS, Table

from .network import EVERY, Stage, route

__all__ = ["ShareResult", "merge_problems", "share_stages"]

#: outbox kinds of the stages
TREE, SENDS, HALO, FALLBACK, P2P_COUNTS = "tree", "sends", "message_halo", "fallback", "p2p_counts"
COLUMNS = "local_columns"
COLL_SUMMARY, COLL_CANDIDATES, COLL_WINNERS, RMA = "coll_summary", "coll_candidates", "coll_winners", "rma_rows"

#: the tables in the order the serial replay builds them (``engine.assemble``), so ``ctx.tables`` iterates alike
_TABLE_ORDER = ("messages", "collectives", "omp_teams", "omp_team_members", "omp_barriers", "locks", "omp_tasks",
                "omp_task_dependences", "omp_task_fragments", "threads", "mpi_file_ops", "mpi_rma_ops",
                "time_segments", "sync_points")
_OMP = ("omp_teams", "omp_team_members", "omp_barriers")
#: send columns only copied into the messages table (not matched on): sent in the table's narrower types
_SEND_OUTPUT = ("send_flags", "send_region", "send_cnode", "sendc_region", "sendc_cnode")


@dataclass
class ShareResult:
    """The final state of a share: its context (whose own ``problems`` stay empty) and the parts of the
    problems :func:`merge_problems` joins on share 0 (``locations``: (walk index, text) pairs; per table
    builder, the counts behind its problem lines)."""

    context: AnalysisContext
    problems: dict = field(default_factory=dict)


def _collectives():
    # imported only when collectives or one-sided rows are wanted
    from . import share_collectives

    return share_collectives


class _Setup:
    """What every stage of every share needs from the trace's definitions (computed once per process)."""

    def __init__(self, trace, shares, want, fallback_tables):
        self.trace = trace
        self.shares = [list(map(int, s)) for s in shares]
        # None: every table but the timeline ones; those only when named (with the tables their cut points
        # link to), each share cutting the time lines of its own locations
        self.want = check_tables(set(ALL_TABLES) - TIMELINE_TABLES if want is None else set(want))
        self.timeline = bool(self.want & TIMELINE_TABLES)
        self.fallback_tables = set(fallback_tables or ())
        self.fallback_kinds = {k for t in self.fallback_tables for k in FRAGMENT_KINDS[t]}
        self.kinds = {k for t in self.want - TIMELINE_TABLES for k in FRAGMENT_KINDS[t]}
        self.timeline_kinds = {k for t in self.want & TIMELINE_TABLES for k in FRAGMENT_KINDS[t]}
        self.names, self.paradigm, self.role = region_arrays(trace.defs)
        _, self.n_loc, self.loc_proc, self.loc_thread = location_meta(trace)
        self.walk_index = {l: i for i, l in enumerate(l for g in walk_order(trace) for l in g)}
        every = np.asarray([l for g in self.shares for l in g], np.int64)
        if sorted(every.tolist()) != sorted(self.walk_index):
            raise ValueError("the shares must hold every location of the trace exactly once")
        self.loc_owner = np.full(self.n_loc, -1, np.int64)  # share owning each location
        for s, locs in enumerate(self.shares):
            self.loc_owner[np.asarray(locs, np.int64)] = s
        # the processes (sorted, not an array by process id: ids may be sparse) and the share of each
        procs = self.loc_proc[every].astype(np.int64)
        self.procs, first = np.unique(procs, return_index=True)
        self.proc_owner = self.loc_owner[every][first]
        if (self.proc_owner[np.searchsorted(self.procs, procs)] != self.loc_owner[every]).any():
            raise ValueError("the shares must hold whole processes (engine.partition)")  # teams, locks, tasks

    def dest_share(self, dest: np.ndarray, here: int) -> np.ndarray:
        """The share owning each destination process; ``here`` for one no share has (never matched)."""
        d = np.asarray(dest, np.int64)
        if not len(self.procs):
            return np.full(len(d), here, np.int64)
        at = np.minimum(np.searchsorted(self.procs, d), len(self.procs) - 1)
        return np.where(self.procs[at] == d, self.proc_owner[at], here)


def _joined(location_frags: list[dict], kind: str) -> dict:
    """The locations' rows of ``kind`` as one dict of columns, each piece's column dropped as it is joined
    (as ``engine.assemble`` does), so the rows are not held twice."""
    pieces = [fr.pop(kind) for fr in location_frags if kind in fr]
    if not pieces:
        return {}
    return {k: np.concatenate([p.pop(k) for p in pieces]) for k in list(pieces[0])}


def _split(cols: dict, to: np.ndarray, skip: int = -1) -> dict[int, dict]:
    """The rows of ``cols`` by destination share ``to`` (in their order), one gather per column; none for
    ``skip``."""
    if len(to) and (to == to[0]).all():  # one destination (always with one share): no copy
        return {} if to[0] == skip else {int(to[0]): cols}
    o = np.argsort(to, kind="stable")
    dests, starts = np.unique(to[o], return_index=True)
    bounds = np.append(starts, len(o))
    return {int(d): {k: v[o[bounds[i]:bounds[i + 1]]] for k, v in cols.items()}
            for i, d in enumerate(dests) if d != skip}


def _remap(cols: dict, m: np.ndarray, kind: str = "rows") -> dict:
    # a tree whose nodes keep their ids in the merged one (always with one share, often share 0's): no copy
    return remap_fragment({kind: cols}, m)[kind] if cols and len(m) and not _identity(m) else cols


def _identity(m: np.ndarray) -> bool:
    return bool(m[-1] == len(m) - 1 and (m == np.arange(len(m))).all())


def share_stages(trace, shares: list[list[int]], want: set[str], salvage: bool = False, progress=None,
                 fallback_tables: set[str] = frozenset(), compact: bool = False) -> list[Stage]:
    """The four stages of the share replay (module docstring) for the shares ``shares`` (lists of location
    ids, ``engine.partition``) building the tables ``want`` (None: all) on every share (the timeline tables
    are never built per share).  ``fallback_tables``: the walk also posts to share 0, under ``"fallback"``, its
    :class:`~analyzer.replay.engine.Share` with only the fragment kinds of these tables (builder ids, as
    ``engine.assemble`` takes them); nothing is built from them here.  The last stage leaves a
    :class:`ShareResult` as each share's state.  ``compact``: the context's locations are only those its
    rows name (its own and the halo rows' partners; :func:`compact_locations`), not every location of the
    trace: its dense arrays then grow with the share, not with the whole run."""
    setup = _Setup(trace, shares, want, fallback_tables)
    setup.compact = compact
    return [lambda s, state, inbox: _walk(setup, s, progress, salvage),
            lambda s, state, inbox: _match(setup, s, state, inbox),
            lambda s, state, inbox: _reduce(setup, s, state, inbox),
            lambda s, state, inbox: _context(setup, s, state, inbox)]


def _walk(setup: _Setup, s: int, progress, salvage: bool):
    """Stage 1: walk the share's locations; post the tree, the routed sends, the collective summary and the
    fallback fragments."""
    K = len(setup.shares)
    sh = walk_share(setup.trace, setup.shares[s], setup.role, setup.names, progress,
                    timeline=setup.timeline or bool(setup.fallback_tables & TIMELINE_TABLES), salvage=salvage,
                    keep=setup.kinds | setup.fallback_kinds | setup.timeline_kinds)
    if sh.error is not None:
        raise sh.error
    n = sh.tree.n_nodes
    out: dict = {TREE: {EVERY: {"parent": sh.tree.parent[:n].copy(), "region": sh.tree.region[:n].copy(),
                                "first_visit": sh.tree.first_visit[:n].copy()}}}
    locs = sorted(sh.done, key=setup.walk_index.__getitem__)
    if setup.fallback_tables:  # copies of the column dicts: assemble on share 0 pops its columns
        fb = Share(sh.tree, {l: (sh.done[l][0], {k: dict(v) for k, v in sh.done[l][1].items()
                                                 if k in setup.fallback_kinds}, sh.done[l][2]) for l in locs})
        out[FALLBACK] = [fb] + [None] * (K - 1)
    frags = {k: _joined([sh.done[l][1] for l in locs], k) for k in setup.kinds}
    state = {"locs": locs, "summaries": [sh.done[l][0] for l in locs],
             "loc_problems": [(setup.walk_index[l], p) for l in locs for p in sh.done[l][2]]}
    if setup.timeline:  # per location, as analyzer.replay.timeline.build_timeline takes them
        state["timeline"] = {k: [sh.done[l][1].pop(k) for l in locs if k in sh.done[l][1]]
                             for k in setup.timeline_kinds}
    del sh
    if "messages" in setup.want:  # every send goes to the share of its destination process
        S = frags.pop("sends")
        out[P2P_COUNTS] = {EVERY: (len(S["send_time"]) if S else 0, len(frags["recvs"]["recv_time"])
                                   if frags["recvs"] else 0)}
        if S:
            S.update({k: S[k].astype(MESSAGES[k]) for k in _SEND_OUTPUT})  # what the table would cast them to
            to = setup.dest_share(S["dest"], s)
            out[SENDS] = route(K, {SENDS: _split(S, to)})[SENDS]
    if "collectives" in setup.want:
        out[COLL_SUMMARY] = {EVERY: _collectives().collective_summary(setup.trace, frags.get("collectives", {}))}
    state["frags"] = frags
    return state, out


def _merged_tree(setup: _Setup, trees: list):
    builders = []
    for p in trees:
        b = CallTreeBuilder(capacity=1)
        b.parent, b.region, b.first_visit = p["parent"], p["region"], p["first_visit"]
        b.n_nodes = len(p["parent"])
        builders.append(b)
    merged, maps = merge_trees(builders)
    ctree, new_id, synthesized = merged.freeze(len(setup.names) - 1)
    return ctree, new_id, synthesized, maps


def _match(setup: _Setup, s: int, state: dict, inbox: dict):
    """Stage 2: the serial call tree on every share; the process-local tables; the messages received by the
    share's processes (halo rows back to their senders' shares); collective candidates; one-sided rows."""
    K, want = len(setup.shares), setup.want
    ctree, new_id, synthesized, maps = _merged_tree(setup, inbox[TREE])
    m = maps[s]
    frags = state.pop("frags")

    def take(kind):  # one kind of the own rows, in merged builder ids; dropped here as it is used
        return _remap(frags.pop(kind, {}), m)

    state.update(ctree=ctree, new_id=new_id, synthesized=synthesized, final=new_id[m], tables={}, counts={})
    out: dict = {}
    tables, counts = state["tables"], state["counts"]
    if "messages" in want:
        sends = inbox.pop(SENDS, [])  # taken out of the inbox: freed once joined
        S = concat([_remap(p, maps[src]) for src, p in enumerate(sends) if p is not None])
        del sends
        table, counts["messages"] = match_messages(S, take("recvs"))
        del S
        remap_cnodes(table, new_id)
        totals = [sum(c[i] for c in inbox[P2P_COUNTS] if c is not None) for i in (0, 1)]
        if totals[0] and totals[1] and "send_pos" not in table:
            # the serial table has the send positions once it matched at all, even where this share did not
            table["send_pos"] = np.zeros(0, np.int64)
        to = setup.loc_owner[np.asarray(table["send_loc"], np.int64)]
        halo = {d: Table(rows) for d, rows in _split(table, to, skip=s).items()}
        if halo:
            out[HALO] = route(K, {HALO: halo})[HALO]
        tables["messages"] = table
    if "collectives" in want:
        state["coll"], by_dest = _collectives().collective_candidates(
            setup.trace, setup.shares, s, take("collectives"), inbox.get(COLL_SUMMARY, [None] * K))
        out[COLL_CANDIDATES] = route(K, {COLL_CANDIDATES: by_dest})[COLL_CANDIDATES]
    if "mpi_rma_ops" in want:
        out[RMA] = {EVERY: _collectives().rma_rows(setup.trace, take("rma_ops"))}
    local = _local_tables(setup, take, counts)
    for t in local.values():
        remap_cnodes(t, new_id)
    tables.update(local)
    # the builders give an empty table only the schema's columns, a filled one also their extra columns
    # (omp_teams.fork_cnode, omp_team_members.cnode, omp_barriers.call_id): every share tells the columns
    # it has, so a share with no rows gets those of the serial table (filled iff some share's is)
    out[COLUMNS] = {EVERY: {n: [(c, t[c].dtype.str) for c in t] for n, t in local.items()}}
    return state, out


def _serial_columns(tables: dict, told: list) -> None:
    """Give each table the columns of the fullest one any share told (empty columns of their dtypes)."""
    for name, t in tables.items():
        cols = max((p[name] for p in told if p is not None and name in p), key=len, default=[])
        if len(cols) > len(t.keys()):
            tables[name] = Table({c: t[c] if c in t else np.zeros(0, dt) for c, dt in cols})


def _local_tables(setup: _Setup, take, counts: dict) -> dict:
    """The process-local tables from the share's own fragments (``take(kind)``: merged builder ids), by
    today's builders: teams, locks, tasks and threads never span processes, so each comes out as the serial
    table's rows of the share's processes, in the same relative order (dense keys such as ``team`` numbered
    per share).  Each kind is taken once and dropped when its tables are built."""
    want, defs, tbl = setup.want, setup.trace.defs, {}
    tasks = take("tasks")  # for the barriers' task time and the task tables
    if want & set(_OMP):
        built, counts["omp"] = build_omp_counted(take("forks"), take("joins"), take("members"),
                                                 take("barriers") if "omp_barriers" in want else {}, setup.loc_proc)
        tbl.update((n, t) for n, t in zip(_OMP, built) if n in want)
        del built
        if "omp_barriers" in tbl:
            add_task_busy(tbl["omp_barriers"], [tasks] if tasks else [])
    if "locks" in want:
        tbl["locks"] = build_locks(take("locks"), setup.loc_proc,
                                   {lid: int(lk.kind) for lid, lk in defs.locks.items()})
    lists = {"tasks": [tasks] if tasks else []}  # the builders of tasks take fragment lists
    del tasks
    for k in ("task_creates", "task_deps", "threads"):
        v = take(k)
        lists[k] = [v] if v else []
    tbl.update(build_task_tables(lists, want, setup.loc_proc))
    del lists
    if "mpi_file_ops" in want:
        ops = take("file_ops")
        tbl["mpi_file_ops"] = (Table({k: np.ascontiguousarray(ops[k], dt) for k, dt in MPI_FILE_OPS.items()})
                               if ops else Table.empty(MPI_FILE_OPS))
    return tbl


def _reduce(setup: _Setup, s: int, state: dict, inbox: dict):
    """Stage 3: the message halo rows join the share's own rows; instance owners reduce the collective
    candidates; every share takes all one-sided rows."""
    K, want, tables = len(setup.shares), setup.want, state["tables"]
    out: dict = {}
    _serial_columns(tables, inbox.get(COLUMNS, []))
    if "messages" in want:
        halos = [p for p in inbox.get(HALO, []) if p is not None]
        if halos:
            own = tables["messages"]
            parts = [own] + halos
            # each receiving location's rows come from one share, in the serial order: a stable sort by
            # receiving location gives the serial table's order (receiving location, then order there)
            o = np.argsort(np.concatenate([p["recv_loc"] for p in parts]), kind="stable")
            # column by column, each part's column dropped as it is joined: the rows are not held three times
            tables["messages"] = Table({k: np.concatenate([p.pop(k) for p in parts])[o] for k in list(own)})
    if "collectives" in want:
        state["coll"], by_dest = _collectives().reduce_candidates(setup.trace, setup.shares, s, state["coll"],
                                                                   inbox.get(COLL_CANDIDATES, [None] * K))
        out[COLL_WINNERS] = route(K, {COLL_WINNERS: by_dest})[COLL_WINNERS]
    if "mpi_rma_ops" in want:
        t = _collectives().rma_table(setup.trace, inbox.get(RMA, [None] * K))
        remap_cnodes(t, state["new_id"])
        tables["mpi_rma_ops"] = t
    return state, out


def _context(setup: _Setup, s: int, state: dict, inbox: dict):
    """Stage 4: the share's AnalysisContext (global location ids, owned columns filled)."""
    K, want, tables = len(setup.shares), setup.want, state["tables"]
    problems = {"locations": state["loc_problems"]}
    if "collectives" in want:
        t, problems["collectives"] = _collectives().collective_table(setup.trace, setup.shares, s, state.pop("coll"),
                                                                     inbox.get(COLL_WINNERS, [None] * K))
        remap_cnodes(t, state["new_id"])
        tables["collectives"] = t
    if "messages" in state["counts"]:
        problems["messages"] = state["counts"]["messages"]
    if "omp" in state["counts"]:
        problems["omp"] = state["counts"]["omp"]
    if setup.timeline:  # the own locations' time lines, linked to the share's rows (global location ids yet)
        from analyzer.replay.timeline import build_timeline

        tables.update(build_timeline(state.pop("timeline"), tables, state["final"], state["ctree"].parent))
    owned = np.asarray(sorted(setup.shares[s]), np.int64)
    if getattr(setup, "compact", False):
        glob = compact_locations(tables, owned)
        local = np.full(setup.n_loc, -1, np.int64)
        local[glob] = np.arange(len(glob))
        loc_proc, loc_thread = setup.loc_proc[glob], setup.loc_thread[glob]
    else:
        glob, local, loc_proc, loc_thread = None, None, setup.loc_proc, setup.loc_thread
    C, L = len(state["ctree"]), (setup.n_loc if glob is None else len(glob))
    visits = np.zeros((C, L), np.int64)
    incl = np.zeros((C, L), np.float64)
    excl = np.zeros((C, L), np.float64)
    counter_names = counter_metrics(setup.trace.defs)[0]
    counters = {name: np.zeros((C, L), np.float64) for name in counter_names}
    final = state["final"]
    for loc, summary in zip(state["locs"], state["summaries"]):
        loc = loc if local is None else local[loc]
        nodes, v, inc, exc = summary[:4]
        ids = final[nodes]  # distinct: builder nodes map one to one onto call paths
        visits[ids, loc] = v
        incl[ids, loc] = inc
        excl[ids, loc] = exc
        for k, name in enumerate(counter_names):
            counters[name][ids, loc] = summary[4][:, k]
    ctx = AnalysisContext(
        trace=setup.trace, calltree=state["ctree"], n_locations=L, location_process=loc_proc,
        location_thread=loc_thread, region_name=setup.names, region_paradigm=setup.paradigm,
        region_role=setup.role, visits=visits, excl_time=excl, incl_time=incl,
        tables={n: tables[n] for n in _TABLE_ORDER if n in tables})
    ctx.synthetic_root = state["synthesized"]
    ctx.counters = counters
    ctx.owned = owned if local is None else local[owned]
    ctx.global_location = glob
    return ShareResult(ctx, problems), {}


def _location_columns(table) -> list[str]:
    return [k for k in table if k == "loc" or k.endswith("_loc")]


def compact_locations(tables: dict, owned: np.ndarray) -> np.ndarray:
    """The global ids of the locations a share's context needs (its own and every location its rows name),
    sorted; the tables' location columns are renumbered in place to positions in that array (-1 stays -1).
    The numbering keeps the global order, so every sort by location and every sum over a cell's rows is
    the one of the global numbering."""
    named = [np.asarray(owned, np.int64)]
    for t in tables.values():
        for k in _location_columns(t):
            v = np.asarray(t[k])
            named.append(v[v >= 0].astype(np.int64))
    glob = np.unique(np.concatenate(named))
    for t in tables.values():
        for k in _location_columns(t):
            v = t[k]
            t[k] = np.where(v >= 0, np.searchsorted(glob, np.maximum(v, 0)), -1).astype(v.dtype)
    return glob


def merge_problems(per_share_parts: list[dict], trace) -> list[str]:
    """The serial ``ctx.problems`` from every share's :attr:`ShareResult.problems` (in share order): the
    trace's problems, the locations' in walk order, then the table builders' with their counts summed."""
    parts = [p for p in per_share_parts if p is not None]
    out = list(getattr(trace, "problems", []) or [])
    at = sorted((x for p in parts for x in p.get("locations", ())), key=lambda x: x[0])  # stable: a location's
    out.extend(text for _, text in at)                                                  # own order stays
    if any("messages" in p for p in parts):
        text = message_problem(*(sum(int(p["messages"][i]) for p in parts if "messages" in p) for i in range(3)))
        if text:
            out.append(text)
    if any("collectives" in p for p in parts):
        out.extend(_collectives().collective_problems([p["collectives"] for p in parts if "collectives" in p]))
    if any("omp" in p for p in parts):
        text = unforked_problem(sum(int(p["omp"]) for p in parts if "omp" in p))
        if text:
            out.append(text)
    return out
