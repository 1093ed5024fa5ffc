"""The replay engine: one pass per location, then vectorised table builders.

``replay(trace)`` walks the locations one at a time with one fused jitted
pass each (``kernels.location``: call paths and every table row at once),
keeping only per-location summaries (visits and times per call-tree node)
and table fragments, so memory is bounded by the largest location plus the
tables.  Worker threads continue their master's call path: the node of a
parallel region on a worker is the child of the master's node at the FORK
of that team, so masters are walked before the workers of their teams
(locations are taken in (process, thread) order; a location whose team is
not yet known is deferred and retried).

Time conventions (EXPERT / Scalasca, made explicit):

* ``visits[c, l]`` counts the ENTERs of call path ``c`` on location ``l``;
* ``incl_time`` is the sum of EXIT - ENTER over those visits;
* ``excl_time`` is ``incl_time`` minus the inclusive time of the direct
  children on the same location.  A worker's parallel region is a child of
  the master's fork call path, but its time is charged on the worker, so the
  master's fork call path keeps its full exclusive time there;
* time a location spends outside every region (before its first ENTER,
  between its top-level calls) is not counted anywhere;
* calls still open at the end of a (truncated) location are closed at that
  location's last timestamp and reported in ``ctx.problems``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tracefmt import nesting
from tracefmt.columns import event_columns
from tracefmt.errors import TraceFormatError
from tracefmt.layout import MetricDtype, MetricMode
from tracefmt.reader import Events

from .calltree import SYNTHETIC_ROOT_NAME, CallTreeBuilder
from patterns.context import AnalysisContext
from patterns.tables import MPI_FILE_OPS, MPI_RMA_OPS, TABLE_NAMES, Table
from .extract import file_io_fragment, fragments, rma_fragment
from .kernels import location as K
from .kernels.bundles import KnownTeams
from .kernels.counters import counter_increments
from .kernels.order import check_order, clamp
from .kernels.summary import call_summary
from .matching import build_collectives, build_locks, build_messages, build_omp, remap_cnodes
from .tasks import add_task_busy, build_task_tables, dependence_fragment, thread_grafts

ALL_TABLES = TABLE_NAMES  # every table the replay can build (patterns.tables.TABLES)
TIMELINE_TABLES = {"time_segments", "sync_points"}  # built by analyzer.replay.timeline

_TIMELINE_KINDS = ("cuts", "segments", "send_cuts", "recv_cuts")
#: the fragment kinds each table is built from (``assemble``); the walk keeps only the wanted tables'
FRAGMENT_KINDS = {
    "messages": ("sends", "recvs"),
    "collectives": ("collectives",),
    "omp_teams": ("forks", "joins", "members"),  # the teams are matched for every OpenMP table
    "omp_team_members": ("forks", "joins", "members"),
    "omp_barriers": ("forks", "joins", "members", "barriers", "tasks"),  # tasks: add_task_busy
    "locks": ("locks",),
    "omp_tasks": ("tasks", "task_creates", "task_deps"),
    "omp_task_dependences": ("task_deps",),
    "omp_task_fragments": ("tasks",),
    "threads": ("threads",),
    "mpi_file_ops": ("file_ops",),
    "mpi_rma_ops": ("rma_ops",),
    "time_segments": _TIMELINE_KINDS,
    "sync_points": _TIMELINE_KINDS,
}


class ReplayError(TraceFormatError):
    """The events of a location cannot be replayed (unbalanced ENTER/EXIT, unknown region or team)."""


def region_arrays(defs):
    """Region name / paradigm / role arrays by id, plus one extra id for a synthetic root."""
    n = (max(defs.regions) + 1 if defs.regions else 0) + 1
    names = [""] * n
    paradigm = np.zeros(n, np.uint8)
    role = np.zeros(n, np.uint8)
    for rid, r in defs.regions.items():
        names[rid] = r.name
        paradigm[rid] = int(r.paradigm)
        role[rid] = int(r.role)
    names[n - 1] = SYNTHETIC_ROOT_NAME
    return names, paradigm, role


def location_meta(trace):
    loc_ids = np.asarray(trace.location_ids, np.int64)
    n_loc = int(loc_ids.max()) + 1 if len(loc_ids) else 0
    proc = np.zeros(n_loc, np.int32)
    thread = np.zeros(n_loc, np.int32)
    for lid in loc_ids:
        d = trace.defs.locations.get(int(lid))
        if d is not None:
            proc[lid] = d.process
            thread[lid] = d.thread
    return loc_ids, n_loc, proc, thread


def _region_label(rid: int, names) -> str:
    """A region as error messages show it: its quoted name, or its id where it has none."""
    return repr(names[rid]) if 0 <= rid < len(names) and names[rid] else str(rid)


def _walk_error(status, event, open_region, loc, names, ev, path):
    """The ReplayError for a nesting problem the kernel found at ``event`` (worded by ``tracefmt.nesting``)."""
    i = int(event)
    text = nesting.message(status, event=i, time=float(ev.time[i]), event_type=int(ev.type[i]),
                           region=_region_label(int(ev.a[i]), names),
                           open_region=_region_label(int(open_region), names))
    return ReplayError(text, path=path, location=int(loc))


@dataclass
class Share:
    """What walking one share of the locations produced (builder call-tree ids of ``tree``).

    Everything here is plain numpy and picklable: the distributed replay
    sends it to rank 0.  ``done`` maps each walked location to its
    ``(summary, fragments, problems)``.
    """

    tree: CallTreeBuilder
    done: dict = field(default_factory=dict)
    error: Exception | None = None  # the first ReplayError, in walk order
    error_loc: int = -1


def walk_order(trace) -> list[list[int]]:
    """Locations grouped by process (processes ascending), each group in (thread, id) order.

    This is the order of the serial replay; parallel shares are contiguous
    runs of these groups, so every OpenMP team (teams live within a process)
    is walked by one worker and merging the shares' call trees in share
    order reproduces the serial tree exactly.
    """
    _, _, loc_proc, loc_thread = location_meta(trace)
    groups: dict[int, list[int]] = {}
    for l in sorted((int(x) for x in trace.location_ids), key=lambda l: (loc_proc[l], loc_thread[l], l)):
        groups.setdefault(int(loc_proc[l]), []).append(l)
    return [groups[p] for p in sorted(groups)]


def partition(trace, n_shares: int) -> list[list[int]]:
    """Split the walk order into at most ``n_shares`` contiguous runs of whole processes with about
    equal event counts (from the footer index, nothing decoded).  Shares may be empty."""
    groups = walk_order(trace)
    weight = np.array([sum(int(trace.n_events(l)) for l in g) + 1 for g in groups], np.float64)
    n_shares = max(1, int(n_shares))
    shares: list[list[int]] = [[] for _ in range(n_shares)]
    if not groups:
        return shares
    # group i goes to the share its weight's midpoint falls in: contiguous and balanced
    cum = np.cumsum(weight)
    mid = (cum - weight / 2) / cum[-1]
    which = np.minimum((mid * n_shares).astype(np.int64), n_shares - 1)
    for g, w in zip(groups, which):
        shares[int(w)].extend(g)
    return shares


def counter_metrics(defs):
    """The metrics replayed into ``ctx.counters``: ``(names, slot by metric id, is_double by slot)``.

    Only accumulated counters (their difference between two readings is a
    count); sampled (ABSOLUTE) metrics have no meaningful increment per call.
    """
    followed = sorted(mid for mid, m in defs.metrics.items() if m.mode == MetricMode.ACCUMULATED)
    slot = np.full(max(defs.metrics, default=-1) + 1, -1, np.int64)
    slot[followed] = np.arange(len(followed))
    names = [defs.metrics[mid].name for mid in followed]
    is_double = np.array([defs.metrics[mid].dtype == MetricDtype.DOUBLE for mid in followed], np.bool_)
    return names, slot, is_double


def walk_share(trace, locs, region_role, names, progress=None, timeline: bool = False, salvage: bool = False,
               keep=None, store=None) -> Share:
    """Walk the locations ``locs`` (whole processes, in walk order) with one call-tree builder.

    ``timeline``: also cut every location's time line (``analyzer.replay.timeline``).
    ``keep``: the fragment kinds to keep (default all; ``FRAGMENT_KINDS`` of the wanted tables): the
    kernel cuts every kind in its one pass, and the rows no wanted table is built from are dropped at once.
    ``salvage``: repair a location whose time goes backwards (clamped, and reported) instead of failing.
    ``store``: the timeline's columns for this share (``analyzer.replay.timeline.shared_stores``; default: its own)."""
    path = getattr(trace, "path", None)
    _, _, loc_proc, _ = location_meta(trace)
    share = Share(CallTreeBuilder())
    by_proc: dict[int, list[int]] = {}
    for l in locs:
        by_proc.setdefault(int(loc_proc[l]), []).append(int(l))
    counters = counter_metrics(trace.defs)
    events = _EventSource(trace, locs, salvage)
    if timeline and store is None:
        store = _timeline_store(trace, locs)
    try:
        for proc, plocs in by_proc.items():
            _walk_process(events, proc, plocs, region_role, names, path, share, progress, counters,
                          _timeline_walker(trace, names, store) if timeline else None, keep)
    except ReplayError as exc:
        share.error = exc
    return share


class _EventSource:
    """The events of one share's locations, all decoded into one reused set of columns.

    Fresh columns per location would be faulted in page by page every time
    (the largest cost of a first analysis, docs/performance.md); one buffer
    sized for the share's largest location is faulted in once.  Each
    location's events are valid only until the next one is decoded, which
    suits the walk: it keeps only what the kernels return.  Readers without
    ``decode_into`` (``tracefmt.Trace.decode_into``) get fresh events per location.

    Every location's time must never go backwards: otherwise a ReplayError names the location, the event
    and both times, or with ``salvage`` each such time is raised to the latest before it and
    ``repaired[loc]`` says so (durations never come out negative).
    """

    def __init__(self, trace, locs, salvage: bool = False):
        self._trace = trace
        self._salvage = salvage
        self.repaired: dict[int, str] = {}
        self._buffer = None
        if hasattr(trace, "decode_into"):
            largest = max((int(trace.n_events(l)) for l in locs), default=0)
            if largest:
                self._buffer = trace.new_column_buffer(largest)

    def __call__(self, loc: int):
        if self._buffer is None:
            ev = self._trace.events(loc)
        else:
            self._trace.check_location(loc)
            ev = Events(loc, **self._trace.decode_into(loc, self._buffer))
        n, first, worst = check_order(ev.time)
        if n:
            t = ev.time
            what = (f"event {first} at {t[first]:.9f} s is earlier than event {first - 1} at {t[first - 1]:.9f} s: "
                    f"time goes backwards" + (f" ({n} times on this location)" if n > 1 else ""))
            if not self._salvage:
                raise ReplayError(what + "; --salvage raises such times to the time before",
                                  path=getattr(self._trace, "path", None), location=int(loc))
            if not t.flags.writeable:
                ev.time = t = t.copy()
            clamp(t)
            self.repaired[loc] = (f"location {loc}: {what}, by up to {worst:.9f} s; each such time was raised "
                                  f"to the latest before it (--salvage)")
        return ev


def _timeline_store(trace, locs):
    """The columns the timeline fragments of the share ``locs`` are written to."""
    from . import timeline

    sizes = [int(trace.n_events(l)) for l in locs]
    return timeline.Store(sum(sizes), len(sizes), max(sizes, default=0))


def _timeline_walker(trace, names, store):
    """``f(loc, cols, res, n_nodes, role)`` giving one location's timeline fragments (one process's; ``store``:
    the share's columns)."""
    from . import timeline

    flags = timeline.region_flags(names)
    _, _, _, loc_thread = location_meta(trace)
    scratch = timeline.Scratch(store)
    return lambda loc, cols, res, n_nodes, role: timeline.location_fragments(
        loc, cols, res.calls, role, flags, loc_thread[loc] > 0, n_nodes, scratch)


def _walk_process(events, proc, pending, role, names, path, share, progress, counters, timeline=None, keep=None):
    """Walk one process's locations; a worker whose team is not forked yet waits for a later round."""
    tree = share.tree
    teams = _Teams()
    while pending:
        deferred = []
        first_defer = None  # the error if no location of this round can be walked
        for loc in pending:
            ev = events(loc)
            cols = event_columns(ev)
            res = K.replay_location(cols, loc, role, tree.state(), teams.arrays())
            if res.status == nesting.DEFER:  # its team's master has not been walked yet
                if first_defer is None:
                    first_defer = _walk_error(nesting.UNKNOWN_TEAM, res.info, -1, loc, names, ev, path)
                deferred.append(loc)
                continue
            tree.update(res.tree)
            if res.status not in (nesting.OK, nesting.UNCLOSED):
                raise _walk_error(res.status, res.info, res.open_region, loc, names, ev, path)
            problems = [events.repaired[loc]] if loc in events.repaired else []
            if res.status == nesting.UNCLOSED:
                problems.append(f"location {loc}: {int(res.info)} region(s) still open at the end; "
                                f"closed at its last event")
            fr = fragments(loc, proc, res.rows)
            file_ops = file_io_fragment(loc, cols, res.calls)
            if file_ops is not None:
                fr["file_ops"] = file_ops
            rma_ops = rma_fragment(loc, proc, cols, res.calls)
            if rma_ops is not None:
                fr["rma_ops"] = rma_ops
            task_deps = dependence_fragment(loc, cols)
            if task_deps is not None:
                fr["task_deps"] = task_deps
            if timeline is not None:
                fr.update(timeline(loc, cols, res, tree.n_nodes, role))
            summary = call_summary(res.calls, tree.n_nodes)
            if len(counters[0]):  # exclusive counter increments of the visited nodes
                incr = counter_increments(cols, res.calls, counters[1], counters[2], tree.n_nodes)
                summary = (*summary, incr[summary.nodes])
            share.done[loc] = (summary, fr if keep is None else {k: v for k, v in fr.items() if k in keep}, problems)
            # publish this location's forks so its team's workers can be walked
            teams.add(loc, fr["forks"])
            teams.add(loc, thread_grafts(fr["threads"]))  # and its threads' creations (format 2.1)
            if progress is not None:
                progress(len(ev))
            del ev, cols, res
        if len(deferred) == len(pending):
            raise first_defer
        pending = deferred


class _Teams:
    """The teams forked so far in one process: team id -> (builder node at the fork, team reference).

    A later fork of the same team id replaces an earlier one, as a dict update would.
    """

    def __init__(self):
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._arrays = KnownTeams(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64))

    def add(self, loc: int, forks: dict) -> None:
        n = len(forks["team_id"])
        if n == 0:
            return
        refs = (np.int64(loc) << 32) | np.arange(n, dtype=np.int64)
        self._parts.append((forks["team_id"], forks["fork_node"], refs))
        self._arrays = None

    def arrays(self) -> KnownTeams:
        """Sorted team ids with their fork nodes and references, as the kernel wants them."""
        if self._arrays is None:
            keys = np.concatenate([p[0] for p in self._parts]).astype(np.int64)
            nodes = np.concatenate([p[1] for p in self._parts]).astype(np.int32)
            refs = np.concatenate([p[2] for p in self._parts])
            o = np.argsort(keys, kind="stable")
            keys, nodes, refs = keys[o], nodes[o], refs[o]
            last = np.ones(len(keys), bool)  # the latest fork of each id wins
            last[:-1] = keys[1:] != keys[:-1]
            self._arrays = KnownTeams(keys[last], nodes[last], refs[last])
        return self._arrays


def merge_trees(trees: list[CallTreeBuilder]) -> tuple[CallTreeBuilder, list[np.ndarray]]:
    """Union of the shares' call trees, taking nodes in share order then creation order.

    Returns the merged builder and, per share, the merged id of each of its
    builder nodes.  Because shares are contiguous runs of the serial walk
    order, nodes are created in the serial order, so the frozen tree (children
    by first visit, ties by creation) is the serial one.
    """
    if len(trees) == 1:
        t = trees[0]
        return t, [np.arange(t.n_nodes, dtype=np.int64)]
    out = CallTreeBuilder()
    parent, region, first = [-1], [-1], [np.inf]
    index: dict[tuple[int, int], int] = {}
    maps = []
    for t in trees:
        m = np.zeros(t.n_nodes, np.int64)  # node 0 (super-root) -> 0
        tp, tr, tf = t.parent[: t.n_nodes].tolist(), t.region[: t.n_nodes].tolist(), t.first_visit[: t.n_nodes]
        for b in range(1, t.n_nodes):
            key = (int(m[tp[b]]), tr[b])
            g = index.get(key)
            if g is None:
                g = index[key] = len(parent)
                parent.append(key[0])
                region.append(key[1])
                first.append(float(tf[b]))
            elif tf[b] < first[g]:
                first[g] = float(tf[b])
            m[b] = g
        maps.append(m)
    out.parent = np.asarray(parent, np.int32)
    out.region = np.asarray(region, np.int32)
    out.first_visit = np.asarray(first, np.float64)
    out.n_nodes = len(parent)
    return out, maps


def remap_fragment(fr: dict, m: np.ndarray, in_place=()) -> dict:
    """A location's fragments (``{kind: {column: array}}``) with builder call-tree ids mapped by ``m`` (new
    dicts; the arrays not mapped are shared).  The kinds ``in_place`` are mapped in their own arrays (the
    timeline's: views of columns joined without a copy, ``analyzer.replay.timeline.shared_stores``)."""
    out = {}
    for name, cols in fr.items():
        c2 = dict(cols)
        for k, v in cols.items():
            if k == "cnode" or k.endswith("_cnode") or k == "fork_node":
                if name in in_place:
                    v[...] = np.where(v >= 0, m[np.maximum(v, 0)], v)
                else:
                    c2[k] = np.where(v >= 0, m[np.maximum(v, 0)], v)
        out[name] = c2
    return out


def replay(trace, tables=None, jobs: int = 1, progress=None, salvage: bool = False) -> AnalysisContext:
    """Replay a trace into an :class:`AnalysisContext` (see the module docstring).

    ``tables``: names of the tables to build (default: all; ``analyzer.analyze`` passes the
    union of the selected patterns' ``requires``); the others are neither matched nor
    built, and the problems their matching would report are not reported.  ``jobs``: worker
    threads walking disjoint shares of the processes (the kernels release
    the GIL); the result is identical for every value.  ``progress``: optional
    callable ``progress(n_events_done)`` called after each location.  A location whose time goes
    backwards is a ReplayError naming the event and both times, unless ``salvage``: then such times are
    raised to the latest before them and ``ctx.problems`` says where.
    """
    want = check_tables(tables)
    names, _, role = region_arrays(trace.defs)
    jobs = max(1, int(jobs))
    keep = {k for t in want for k in FRAGMENT_KINDS[t]}
    if jobs == 1:
        shares = [walk_share(trace, [l for g in walk_order(trace) for l in g], role, names, progress,
                             timeline=TIMELINE_TABLES & want != set(), salvage=salvage, keep=keep)]
    else:
        import threading
        from concurrent.futures import ThreadPoolExecutor

        lock = threading.Lock()

        def tick(n):
            with lock:
                progress(n)

        parts = [p for p in partition(trace, jobs) if p]
        tl = TIMELINE_TABLES & want != set()
        stores = [None] * len(parts)
        if tl:  # one set of timeline columns for all shares, joined in place (timeline.shared_stores)
            from .timeline import shared_stores

            stores = shared_stores([[int(trace.n_events(l)) for l in p] for p in parts])
        with ThreadPoolExecutor(max_workers=len(parts), thread_name_prefix="replay") as pool:
            shares = list(pool.map(lambda ps: walk_share(trace, ps[0], role, names, tick if progress else None, tl,
                                                         salvage, keep, ps[1]), zip(parts, stores)))
    return assemble(trace, shares, want, owned=True)


def check_tables(tables) -> set[str]:
    """The set of table names to build: all for None; a ValueError names unknown ones."""
    if isinstance(tables, str):
        tables = (tables,)
    want = set(ALL_TABLES if tables is None else tables)
    if want & TIMELINE_TABLES:  # the timeline links its cut points to these: built with it
        from .timeline import LINKED_TABLES

        want |= set(LINKED_TABLES) | TIMELINE_TABLES
    unknown = want - set(ALL_TABLES)
    if unknown:
        raise ValueError(f"unknown replay tables {sorted(unknown)}; known: {list(ALL_TABLES)}")
    return want


def _take(frags: dict[str, list], kind: str) -> dict[str, np.ndarray]:
    """``concat(frags[kind])``, removing the kind from ``frags`` and each column from its pieces as it is
    joined, so a piece's memory goes as soon as nothing of it is left to join (the kernel's fragment columns
    are views of one int and one float matrix per piece: those go with their last column)."""
    pieces = frags.pop(kind, [])
    if not pieces:
        return {}
    return {k: np.concatenate([p.pop(k) for p in pieces]) for k in list(pieces[0])}


def assemble(trace, shares: list[Share], want=None, owned: bool = False) -> AnalysisContext:
    """Merge the shares (in walk order) into the context: call tree, dense metrics, tables.

    The shares' fragments are consumed (``done`` is emptied): each kind's pieces are freed column by
    column as they are joined, so the fragments and the tables they become are not all held at once.
    ``owned``: nobody else holds the fragments' arrays (the shares were walked for this call), so the
    timeline's tables may be made of them in place (``analyzer.replay.timeline.build_timeline``)."""
    want = check_tables(want)
    for s in shares:
        if s.error is not None:
            raise s.error
    defs = trace.defs
    names, paradigm, role = region_arrays(defs)
    synthetic_region = len(names) - 1
    _, n_loc, loc_proc, loc_thread = location_meta(trace)
    problems: list[str] = list(getattr(trace, "problems", []) or [])
    merged, maps = merge_trees([s.tree for s in shares])
    ctree, new_id, synthesized = merged.freeze(synthetic_region)
    C = len(ctree)
    visits = np.zeros((C, n_loc), np.int64)
    incl = np.zeros((C, n_loc), np.float64)
    excl = np.zeros((C, n_loc), np.float64)
    frags: dict[str, list] = {}
    order = {l: i for i, l in enumerate(l for g in walk_order(trace) for l in g)}
    done = []
    for s, m in zip(shares, maps):
        ident = len(shares) == 1
        for loc, (summ, fr, probs) in s.done.items():
            done.append((order[loc], loc, summ,
                         fr if ident else remap_fragment(fr, m, ("cuts", "segments") if owned else ()), probs, m))
        s.done = {}  # the fragments live on only in `frags` below, to be freed as the tables are built
    done.sort(key=lambda x: x[0])  # fragments concatenate in walk order whatever the shares were
    counter_names = counter_metrics(defs)[0]
    counters = {name: np.zeros((C, n_loc), np.float64) for name in counter_names}
    for _, loc, summary, fr, probs, m in done:
        nodes, v, inc, exc = summary[:4]
        ids = new_id[m[nodes]]  # distinct: builder nodes map one to one onto call paths
        visits[ids, loc] = v
        incl[ids, loc] = inc
        excl[ids, loc] = exc
        for k, name in enumerate(counter_names):
            counters[name][ids, loc] = summary[4][:, k]
        problems.extend(probs)
        for k, v in fr.items():
            frags.setdefault(k, []).append(v)
    del done
    frags = {k: frags.get(k, []) for k in ("sends", "recvs", "collectives", "forks", "joins", "members",
                                           "barriers", "locks", "cuts", "segments", "send_cuts", "recv_cuts",
                                           "tasks", "task_creates", "task_deps", "threads", "file_ops", "rma_ops")}

    # only the wanted tables are matched and built (the kernel still cuts every
    # location's rows of all of them: cheap next to matching, and one fused pass)
    tbl = {}
    if "messages" in want:
        tbl["messages"] = build_messages(_take(frags, "sends"), _take(frags, "recvs"), problems)
    if "collectives" in want:
        comm_size = {cid: len(c.ranks) for cid, c in defs.comms.items() if len(c.ranks)}
        tbl["collectives"] = build_collectives(_take(frags, "collectives"), comm_size, problems)
    omp = [n for n in ("omp_teams", "omp_team_members", "omp_barriers") if n in want]
    if omp:  # barriers and members are numbered by team: the teams are always matched
        barrier_rows = _take(frags, "barriers") if "omp_barriers" in want else {}
        built = build_omp(_take(frags, "forks"), _take(frags, "joins"), _take(frags, "members"), barrier_rows,
                          loc_proc, problems)
        tbl.update((n, t) for n, t in zip(("omp_teams", "omp_team_members", "omp_barriers"), built) if n in want)
        if "omp_barriers" in tbl:  # the time each member ran tasks in a barrier is no wait (format 2.1)
            add_task_busy(tbl["omp_barriers"], frags["tasks"])
    if "locks" in want:
        kinds = {lid: int(lk.kind) for lid, lk in defs.locks.items()}
        tbl["locks"] = build_locks(_take(frags, "locks"), loc_proc, kinds)
    tbl.update(build_task_tables(frags, want, loc_proc))  # OpenMP tasks, threads (format 2.1)
    if "mpi_file_ops" in want:  # MPI file reads and writes (format 2.2)
        ops = _take(frags, "file_ops")
        tbl["mpi_file_ops"] = (Table({k: np.ascontiguousarray(ops[k], dt) for k, dt in MPI_FILE_OPS.items()})
                               if ops else Table.empty(MPI_FILE_OPS))
    if "mpi_rma_ops" in want:  # MPI one-sided events (format 2.3)
        ops = _take(frags, "rma_ops")
        tbl["mpi_rma_ops"] = (Table({k: np.ascontiguousarray(ops[k], dt) for k, dt in MPI_RMA_OPS.items()})
                              if ops else Table.empty(MPI_RMA_OPS))
    for t in tbl.values():
        remap_cnodes(t, new_id)
    if want & TIMELINE_TABLES:
        from .timeline import build_timeline

        tbl.update(build_timeline(frags, tbl, new_id, ctree.parent, owned))

    ctx = AnalysisContext(
        trace=trace, calltree=ctree, n_locations=n_loc, location_process=loc_proc, location_thread=loc_thread,
        region_name=names, region_paradigm=paradigm, region_role=role, visits=visits, excl_time=excl,
        incl_time=incl, tables=tbl,
    )
    ctx.problems = problems
    ctx.synthetic_root = synthesized
    ctx.counters = counters
    return ctx
