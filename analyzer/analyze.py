"""From a trace to a severity cube: replay, compute every pattern, assemble the Cube.

``analyze(path_or_trace, patterns=None)`` is the whole analysis as one call,
for scripts and notebooks; ``expert-analyze`` (``analyzer.cli``) wraps it.
"""

from __future__ import annotations

import difflib
import os
import re
import time as _time

import numpy as np

import tracefmt
from tracefmt.dense import dense_view
from tracefmt.names import escape_bytes
from tracefmt.plausible import definition_warnings
from tracefmt.pages import numpy_page_advice
from patterns.api import Pattern, PatternError, check_subset_rule, compute_results

from .cube import Cube, LocationInfo, MetricInfo, RegionInfo, region_strings
from .cube.stored_rows import RowValues
from .cube.dimensions import ABSENT_LOCATION_ATTR
from .distributed import MISMATCHES, ROOT_CAUSE_MODULES, ROOT_CAUSE_PROBLEMS

__all__ = ["analyze", "compute_patterns", "build_cube", "collective_mismatches", "counter_cube_metrics",
           "efficiency_attrs", "metric_status", "required_tables", "select_patterns", "without_patterns",
           "damage_note", "NOT_MEASURED_ATTR", "ABSENT_ATTR", "SALVAGED_ATTR", "TRACE_ATTR"]

#: cube attribute per property left out as not measured: ``NOT_MEASURED_ATTR + name`` = the reason
NOT_MEASURED_ATTR = "expert-analyze::not-measured::"
#: cube attribute of an analysis of a damaged or incomplete trace, or one repaired by ``salvage``: what the
#: results cover (``expert-analyze::problemN`` say what was lost or repaired)
SALVAGED_ATTR = "expert-analyze::salvaged"
#: prefix of the trace's own attributes (command, clock, openmp_runtime ...), copied into the cube
TRACE_ATTR = "trace::"
#: cube attribute per paradigm without any call in the trace: ``ABSENT_ATTR + paradigm`` = the unique names
#: (space-separated) of the properties that are zero for that reason
ABSENT_ATTR = "expert-analyze::absent::"


def select_patterns(patterns=None, plugins: bool = True, files=()) -> list[Pattern]:
    """Pattern instances in computation order.

    ``patterns``: None (all built-ins and plugins), unique names (a list or a
    comma-separated string; parents and dependencies come along), or Pattern
    classes / instances used as given.  ``files``: Python files whose patterns
    join the built-ins and plugins (``expert-analyze --plugin FILE.py``).
    """
    from patterns.registry import load_patterns

    if patterns is None or isinstance(patterns, str):
        return load_patterns(patterns, plugins=plugins, files=files)
    patterns = list(patterns)
    if all(isinstance(p, str) for p in patterns):
        return load_patterns(patterns, plugins=plugins, files=files)
    from patterns.api import validate_pattern

    out = []
    for p in patterns:
        inst = p() if isinstance(p, type) else p
        validate_pattern(inst, "analyze(patterns=...)")
        out.append(inst)
    return out


def without_patterns(pats: list[Pattern], names) -> list[Pattern]:
    """``pats`` less the patterns named (a list or a comma-separated string), their sub-properties in the
    metric tree and every pattern that depends on one of them (``expert-analyze --without``).  An unknown
    name is a PatternError."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    known = {p.name for p in pats}
    for n in names:
        if n not in known:
            hint = difflib.get_close_matches(n, sorted(known), n=3)
            extra = f"; did you mean {', '.join(map(repr, hint))}?" if hint else ""
            raise PatternError(f"--without: unknown pattern {n!r}{extra}")
    gone = set(names)
    changed = True
    while changed:  # the sub-trees and the dependants, to a fixed point
        changed = False
        for p in pats:
            if p.name not in gone and (p.parent in gone or gone & set(p.depends)):
                gone.add(p.name)
                changed = True
    return [p for p in pats if p.name not in gone]


def required_tables(pats: list[Pattern]) -> tuple[str, ...]:
    """The replay tables the patterns declare in ``requires`` (their union, in the order of
    ``patterns.tables.TABLES``): the only ones :func:`analyze` has the replay build."""
    from patterns.tables import TABLE_NAMES

    wanted = {t for p in pats for t in p.requires}
    return tuple(t for t in TABLE_NAMES if t in wanted)


def compute_patterns(ctx, pats: list[Pattern], check: bool = True) -> None:
    """Compute each pattern into ``ctx.results[name]`` (dense [C, L] float64), in order
    (``patterns.api.compute_results``: the loop the analysis per share runs too).

    While a pattern computes, it can read only the tables it declares in
    ``requires`` (``ctx.computing``).  Afterwards, unless ``check`` is False (a share's or a
    group's results, checked later over the full results), the subset rule is checked
    (``patterns.api.check_subset_rule``): a PatternError names a child that
    exceeds its parent, the call path and the location.
    """
    compute_results(ctx, pats)
    if check:
        check_subset_rule(ctx, pats)


def _metric_order(pats: list[Pattern]) -> list[Pattern]:
    """Parents before children, siblings in load order (the report's tree order)."""
    from patterns.registry import hierarchy

    return [e.pattern if hasattr(e, "pattern") else e[1] for e in hierarchy(pats)]


def damage_note(problems: list[str]) -> str:
    """One line for a damaged or incomplete trace: the first problem, how many more, and what to do."""
    more = len(problems) - 1
    extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
    return f"damaged or incomplete trace: {problems[0]}{extra}; use --salvage to analyze what survived"


def metric_status(ctx, pats: list[Pattern]) -> tuple[dict[str, str], dict[str, str]]:
    """Which properties a report should not show as plain numbers: ``(not_measured, absent)``.

    ``not_measured[name]`` is the reason a property cannot be measured from this trace
    (``Pattern.unmeasured``; a property under an unmeasured one inherits the reason);
    ``absent[name]`` is the paradigm (``Pattern.paradigm``, inherited along the metric tree)
    of a property whose paradigm has no call in the call tree: it is zero by construction.
    Both in metric-tree order.
    """
    paradigms = ctx.cnode_paradigm()
    present = {"mpi": bool((paradigms == tracefmt.layout.Paradigm.MPI).any()),
               "openmp": bool((paradigms == tracefmt.layout.Paradigm.OPENMP).any()),
               "pthread": bool((paradigms == tracefmt.layout.Paradigm.PTHREAD).any())}
    names = {p.name for p in pats}
    paradigm: dict[str, str | None] = {}
    not_measured: dict[str, str] = {}
    absent: dict[str, str] = {}
    for p in _metric_order(pats):
        parent = p.parent if p.parent in names else None
        own = getattr(p, "paradigm", None)
        paradigm[p.name] = own if own not in (None, "generic") else (paradigm[parent] if parent else None)
        why = not_measured.get(parent) if parent else None
        if why is None:
            try:
                why = p.unmeasured(ctx) if hasattr(p, "unmeasured") else None
            except Exception as exc:
                origin = getattr(p, "origin", type(p).__module__)
                raise PatternError(f"pattern {p.name!r} (from {origin}) failed in unmeasured(): "
                                   f"{type(exc).__name__}: {exc}") from exc
        if why:
            not_measured[p.name] = str(why)
        elif paradigm[p.name] is not None and not present.get(paradigm[p.name], True):
            absent[p.name] = paradigm[p.name]
    return not_measured, absent


def build_cube(ctx, pats: list[Pattern], attrs: dict | None = None, not_measured: dict[str, str] | None = None) -> Cube:
    """The cube of computed patterns; those in ``not_measured`` (name -> reason) are left out of its
    metrics and values and kept in ``cube.not_measured`` instead."""
    defs = ctx.trace.defs
    names = {p.name for p in pats}
    not_measured = not_measured or {}
    metrics = []
    left_out = {}
    for p in _metric_order(pats):
        info = MetricInfo(
            name=p.name, display_name=p.display_name, parent=p.parent if p.parent in names else None, unit=p.unit,
            description=p.description, diagnosis=p.diagnosis, dtype="FLOAT" if p.unit == "sec" else "INTEGER",
        )
        if p.name in not_measured:
            left_out[p.name] = (info, not_measured[p.name])
        else:
            metrics.append(info)
    regions = []
    for rid, name in enumerate(ctx.region_name):
        r = defs.regions.get(rid)
        par, role = region_strings(int(ctx.region_paradigm[rid]), int(ctx.region_role[rid]))
        if r is None:
            regions.append(RegionInfo(name=escape_bytes(name) or f"region {rid}", paradigm=par, role=role))
            continue
        line = lambda v: -1 if v is None or v == tracefmt.layout.NO_ID else int(v)  # noqa: E731
        # names are bytes from the trace: one that is not UTF-8 shows as \xNN in every result (tracefmt.names)
        regions.append(RegionInfo(name=escape_bytes(r.name), file=escape_bytes(defs.files.get(r.file, "")),
                                  begin_line=line(r.begin_line), end_line=line(r.end_line), paradigm=par, role=role))
    locations = []
    for lid in range(ctx.n_locations):
        d = defs.locations.get(lid)
        if d is None:
            locations.append(LocationInfo(rank=int(ctx.location_process[lid]), thread=int(ctx.location_thread[lid])))
            continue
        proc = defs.processes.get(d.process)
        node = defs.nodes.get(proc.node) if proc is not None else None
        machine = defs.machines.get(node.machine) if node is not None else None
        locations.append(LocationInfo(
            machine=escape_bytes(machine.name) if machine is not None else "machine",
            node=escape_bytes(node.name) if node is not None else "node",
            rank=int(d.process), thread=int(d.thread), name=escape_bytes(d.name or ""),
            process_name=escape_bytes(proc.name) if proc is not None and proc.name else "",
        ))
    keep = [p.name for p in pats if p.name in ctx.results and p.name not in left_out]
    rows = isinstance(ctx.results, RowValues)  # an analysis by shares: results held as their nonzero rows
    values = {} if rows else {n: ctx.results[n] for n in keep}
    counters = counter_cube_metrics(ctx, names)
    for info, counts in counters:
        metrics.append(info)
        values[info.name] = counts
    cube = Cube(metrics, regions, ctx.calltree.parent, ctx.calltree.region, locations, values, attrs or {})
    if rows:  # the cube reads them the way it reads a file's: one dense metric at a time
        held = RowValues({n: h for n, h in ctx.results.stored.items() if n in keep}, cube.metric_names,
                         (cube.n_cnodes, cube.n_locations))
        for n in keep:
            if n not in held:  # computed here, dense
                held[n] = ctx.results[n]
        for info, counts in counters:
            held[info.name] = counts
        cube.values = held
    cube.not_measured = left_out
    return cube


def counter_cube_metrics(ctx, taken=()) -> list[tuple[MetricInfo, np.ndarray]]:
    """One root cube metric per hardware counter in ``ctx.counters`` (exclusive increments per call path).

    The unique name is the counter's name lower-cased with every character
    other than a-z, 0-9 and _ replaced by _ (``PAPI_L1_DCM`` -> ``papi_l1_dcm``),
    prefixed with ``counter_`` if a pattern already uses it.
    """
    dtypes = {m.name: m.dtype for m in ctx.trace.defs.metrics.values()}
    used = set(taken)
    out = []
    for name, counts in ctx.counters.items():
        uniq = re.sub(r"[^a-z0-9_]", "_", name.lower())
        if uniq in used:
            uniq = "counter_" + uniq
        used.add(uniq)
        integer = dtypes.get(name) == tracefmt.layout.MetricDtype.UINT64
        out.append((MetricInfo(name=uniq, display_name=escape_bytes(name), parent=None, unit="occ",
                               description=f"hardware counter {name} as recorded",
                               diagnosis="Expand the call tree to see where the events were counted; values are "
                                         "exclusive (each call path without its callees).",
                               dtype="INTEGER" if integer else "FLOAT"), counts))
    return out


def collective_mismatches(ctx) -> list[str]:
    """One line if some MPI collective instance has members that called different operations (a Bcast
    matched with a Reduce): no correct MPI program does that; the wait states are computed as if they matched."""
    if MISMATCHES in ctx.derived:  # an analysis by shares: counted there (analyzer.distributed)
        return list(ctx.derived[MISMATCHES])
    t = ctx.tables.get("collectives")
    if t is None or len(t["instance"]) == 0:
        return []
    inst = np.asarray(t["instance"], np.int64)
    region = np.asarray(t["region"], np.int64)
    # one id per distinct name, numbered over the regions (a handful) and gathered per member: the members' names
    # as strings were a 100 k-row object array to sort at 10^7 events
    region_names = np.asarray(ctx.region_name, dtype=object)
    _, id_of_region = np.unique(region_names.astype(str), return_inverse=True)
    name_id = id_of_region.reshape(-1)[region]
    n = int(inst.max()) + 1
    lo = np.full(n, np.iinfo(np.int64).max)
    hi = np.full(n, -1)
    np.minimum.at(lo, inst, name_id)
    np.maximum.at(hi, inst, name_id)
    bad = np.flatnonzero((hi >= 0) & (lo != hi))
    if not len(bad):
        return []
    rows = np.flatnonzero(inst == bad[0])
    from .replay.matching import mismatch_problem  # numba kernels beside it: imported only when needed

    ops = sorted(set(region_names[region[rows]].tolist()))
    return [mismatch_problem(len(bad), ops, int(t["comm"][rows[0]]), ctx.trace.defs.comms)]


def _share_network(trace, pats, comm, memory, spill_dir, notes, strict=True):
    """The carrier of an analysis by shares (``analyzer.distributed``), or None for the analysis in one piece."""
    if comm is not None:
        from .distributed.mpi_network import MpiNetwork

        return MpiNetwork(comm)
    if memory is None:
        return None
    from .distributed.memory import plan_memory
    from .distributed.pipeline import plan

    later = plan(pats, root_cause=True).later  # the root-cause patterns run by shares (share_root_cause)
    root_cause = any(type(p).__module__ in ROOT_CAUSE_MODULES for p in pats)
    try:
        glob = {p.name: p for p in later if getattr(p, "scope", "global") == "global"}
        # named by the roots of their sub-trees: what --without takes
        mp = plan_memory(trace, int(memory), [n for n, p in glob.items() if p.parent not in glob], root_cause)
    except ValueError as exc:
        if strict:
            raise
        if notes is not None:
            notes.append(f"{exc} (running in one piece; it may not fit)".replace("--memory ", "half the available "
                                                                                  "memory, ", 1))
        return None
    if not mp.bounded:
        return None
    from .distributed.spill import SpillNetwork

    net = SpillNetwork(spill_dir, mp.n_shares)  # a new folder under spill_dir, removed by net.close()
    net.memory_limit = mp.limit
    if notes is not None:
        notes.append(f"the analysis needs about {mp.estimate / (1 << 20):.0f} MiB, more than the limit of "
                     f"{mp.limit / (1 << 20):.0f} MiB: it runs in {mp.n_shares} shares of whole processes, one after "
                     f"another, spilling to {net.directory}")
    return net


def efficiency_attrs(cube: Cube) -> dict[str, str]:
    """The run's POP efficiencies as cube attributes (``EFFICIENCY_ATTR + name``), computed from the cube's
    ``pop_*`` totals as ``expert-analyze`` prints them; none unless every ``pop_*`` metric is in the cube."""
    from patterns.pop import NAMES, efficiencies

    from .cube.json_summary import EFFICIENCY_ATTR

    if not all(n in cube.metric_names for n in NAMES):
        return {}
    return {EFFICIENCY_ATTR + k: repr(float(v)) for k, v in efficiencies({n: cube.total(n) for n in NAMES}).items()}


def analyze(path_or_trace, patterns=None, plugins: bool = True, progress=None, jobs: int = 1,
            comm=None, plugin_files=(), salvage: bool = False, memory: int | None = None,
            spill_dir: str | None = None, keep_tables: bool = False, notes=None,
            memory_strict: bool = True, without=()) -> Cube | None:
    """Analyze a trace (path of any supported format, or an opened ``tracefmt.Trace``) and return the
    severity :class:`Cube`.

    ``patterns``: see :func:`select_patterns`; ``without``: names left out (:func:`without_patterns`);
    ``plugin_files``: Python files of patterns to add.  ``progress``: optional
    callable ``progress(n_events)`` called as locations are replayed.
    ``jobs``: threads replaying disjoint shares of the processes.  ``comm``:
    an mpi4py communicator for the distributed analysis (every rank calls
    ``analyze``; rank 0 gets the cube, the others None).  ``memory``: a limit in
    bytes: a trace whose analysis would need more runs in shares of whole processes
    one after another, their data spilled to ``spill_dir`` (default: a temporary
    directory) between steps (``analyzer.distributed``).  The result does not
    depend on ``jobs``, on the number of ranks or on ``memory``.  The replay context stays
    available as ``cube.context``; ``keep_tables``: under ``comm``/``memory`` it also
    holds every replay table (the ``--timeline`` writer reads them).  ``notes``: a list
    that receives one line per decision worth telling (shares chosen for ``memory``).  When no number of
    shares keeps the analysis within ``memory``, a ValueError says why, unless not ``memory_strict`` (the
    command's default limit): then it runs in one piece and a note says it may not fit.

    A location whose time goes backwards raises :class:`tracefmt.TraceFormatError` naming the event and
    both times, unless ``salvage``: then such times are raised to the latest before them.  Of a damaged or
    incomplete trace (the reader's ``trace.problems``; ``expert-analyze`` refuses it without ``--salvage``)
    the analysis covers what survived.  Either way the cube says what was lost or repaired: attribute
    ``SALVAGED_ATTR`` and ``expert-analyze::problemN``.
    """
    with numpy_page_advice():  # its large tables are fresh memory: huge pages only where they pay (tracefmt.pages)
        return _analyze(path_or_trace, patterns, plugins, progress, jobs, comm, plugin_files, salvage, memory,
                        spill_dir, keep_tables, notes, memory_strict, without)


def _analyze(path_or_trace, patterns, plugins, progress, jobs, comm, plugin_files, salvage, memory, spill_dir,
             keep_tables, notes, memory_strict, without) -> Cube | None:
    t0 = _time.perf_counter()
    if isinstance(path_or_trace, (str, os.PathLike)):
        from tracefmt.detect import open_any

        trace = open_any(path_or_trace)  # native, EPILOG 1.x / EPIK or OTF2, by content
        source = os.fspath(path_or_trace)
    else:
        trace = path_or_trace
        source = str(getattr(trace, "path", "") or "<trace>")
    if len(trace.location_ids) == 0:
        why = "; ".join(getattr(trace, "problems", []) or []) or "no location has events"
        raise tracefmt.TraceFormatError(f"nothing to analyze: {why}", path=source)
    lost = list(getattr(trace, "problems", []) or [])  # what the reader lost (before the ids are made dense)
    gone = getattr(trace, "absent_locations", None) or {}  # location id -> why its events are missing
    absent_locs = {i: gone[l] for i, l in enumerate(trace.location_ids.tolist()) if l in gone}  # by cube index
    if hasattr(trace, "defs"):  # tables sized by the ids that occur, not by the largest id (tracefmt.dense)
        trace = dense_view(trace)
    from .replay import replay  # numba kernels: imported only when a trace is analyzed

    pats = select_patterns(patterns, plugins=plugins, files=plugin_files)
    if without:
        pats = without_patterns(pats, without)
    tables = required_tables(pats)  # the replay builds only what the selected patterns read
    net = _share_network(trace, pats, comm, memory, spill_dir, notes, memory_strict)
    if net is not None:
        from .distributed.pipeline import analyze_by_shares

        try:
            ctx = analyze_by_shares(trace, pats, net, salvage=salvage, progress=progress, keep_tables=keep_tables)
        finally:
            net.close()
        if notes is not None and getattr(net, "spilled_bytes", 0):  # what bounding the memory cost
            notes.append(f"spilled {net.spilled_bytes / (1 << 20):.0f} MiB to disk and read back "
                         f"{net.read_bytes / (1 << 20):.0f} MiB in {net.spill_seconds:.1f} s")
        if ctx is None:  # not rank 0: its share's results went to rank 0
            return None
        from .cube.stored_rows import StoredRows

        # the shares' results as their nonzero call-path rows, made dense one metric at a time when read
        stored = {n: StoredRows(r, d) for n, (r, d) in ctx.stored_results.items()}  # no rows: zero everywhere
        ctx.results = RowValues(stored, [p.name for p in pats], (ctx.n_cnodes, ctx.n_locations))
        del ctx.stored_results
    else:
        ctx = replay(trace, tables=tables, jobs=jobs, progress=progress, salvage=salvage)
    ctx.problems.extend(definition_warnings(trace.defs, ids=False))  # dense_view words the ids itself
    ctx.problems.extend(collective_mismatches(ctx))
    ctx.problems.extend(ctx.derived.pop(ROOT_CAUSE_PROBLEMS, []))  # the root-cause analysis by shares counted them
    done = set(ctx.results)  # computed per share (analyzer.distributed): the rest runs here, over the whole
    compute_patterns(ctx, [p for p in pats if p.name not in done], check=not done)
    if done:
        check_subset_rule(ctx, pats)
    attrs = {
        "expert-analyze::trace": source,
        "expert-analyze::events": str(sum(int(trace.n_events(int(l))) for l in trace.location_ids)),
        "expert-analyze::seconds": f"{_time.perf_counter() - t0:.3f}",
        "CUBE_CT_AGGR": "SUM",
    }
    for key, value in getattr(getattr(trace, "defs", None), "attributes", {}).items():
        attrs[TRACE_ATTR + key] = value  # what the trace says of the run: which OpenMP runtime ran, ...
    for i, prob in enumerate(ctx.problems):
        attrs[f"expert-analyze::problem{i}"] = prob
    if lost or any("(--salvage)" in p for p in ctx.problems):
        attrs[SALVAGED_ATTR] = (f"the trace is damaged, incomplete or out of time order: these results cover what "
                                f"survived; expert-analyze::problem0 to problem{len(ctx.problems) - 1} say what was "
                                f"lost or repaired")
    not_measured, absent = metric_status(ctx, pats)
    for name, why in not_measured.items():
        attrs[NOT_MEASURED_ATTR + name] = why
    for par in dict.fromkeys(absent.values()):
        attrs[ABSENT_ATTR + par] = " ".join(n for n, p in absent.items() if p == par)
    cube = build_cube(ctx, pats, attrs, not_measured)
    for i, why in absent_locs.items():  # measured nothing: n/a in the reports, not 0
        cube.attrs[ABSENT_LOCATION_ATTR + cube.locations[i].key] = why
    cube.attrs.update(efficiency_attrs(cube))
    cube.context = ctx
    cube.problems.extend(ctx.problems)
    return cube
