"""Dense ids for analysis: :func:`dense_view` renumbers a trace whose ids are sparse or huge.

The analysis keeps tables indexed by id (region attributes by region id,
``[call path, location]`` arrays by location id, per-process arrays by rank).
Ids come from the file, so a 4 kB trace with one region id of 10^8, a
location id of 2^31 or a process id of ``0xfffffffe`` would size those
tables by the id, not by what the file holds.  ``dense_view(trace)`` returns
the trace itself when its ids are compact (every id below the number of its
kind plus a small slack; location ids exactly ``0..L-1``), else a
:class:`DenseTrace`: the same definitions and events with those ids
renumbered in increasing order of the original ids, so every table is sized
by what occurs.  Event fields holding such ids are rewritten per location as
the events are decoded (a vectorised lookup), so a compact trace pays nothing.

What is renumbered, and when:

* **locations** when their ids are not exactly ``0..L-1`` (the format asks
  for dense ids, docs/format.md §2): a problem line says so;
* **processes** (MPI ranks, also in groups and in the ``dest``/``source``/
  ``root`` fields of events) when a rank is 2^31 or more (no MPI rank can be)
  or the ranks are far from dense: a problem line says so;
* **threads** of a process when a thread number is 2^31 or more or two locations
  of one process have the same thread number: a problem line says so;
* **regions** (ENTER/EXIT/collective exits, call sites) and **metrics**
  (COUNTER) when their ids are far from dense; sparse ids are legal for these,
  so this is silent.

Ids that events use without a definition keep their value where it cannot
collide with a new id (the replay then reports them as undefined) and become
``NO_ID`` otherwise.
"""

from __future__ import annotations

import numpy as np

from .definitions import Callsite, Clock, Comm, Definitions, Location, Metric, Offset, Process, Region
from .layout import ANY, NO_ID, EventType, RmaSync

__all__ = ["DenseTrace", "IdMap", "dense_view", "duplicate_threads", "id_slack", "INT32_LIMIT"]

#: ids of a kind count as compact while below ``count + SLACK`` (tables that size cost a few kB)
SLACK = 1024
#: the first id that does not fit the analysis' int32 columns (and no MPI rank can have)
INT32_LIMIT = 1 << 31

_REGION_EVENTS = (EventType.ENTER, EventType.EXIT, EventType.MPI_COLLEXIT, EventType.OMP_COLLEXIT)
_RANK_A_EVENTS = (EventType.MPI_SEND, EventType.MPI_RECV, EventType.MPI_RECV_REQUEST)
#: MPI one-sided events whose b is a target rank (2.3); MPI_RMA_SYNC's b is one only for these kinds
_RANK_B_EVENTS = (EventType.MPI_RMA_PUT, EventType.MPI_RMA_GET, EventType.MPI_RMA_ATOMIC)
_RANK_B_SYNCS = (RmaSync.LOCK, RmaSync.UNLOCK, RmaSync.FLUSH)


def id_slack(ids) -> int:
    """How far ``ids`` are from dense: ``max(ids) + 1 - len(ids)`` (0 when dense, also for no ids)."""
    ids = list(ids)
    return (max(ids) + 1 - len(ids)) if ids else 0


def _compact(ids, limit: int = INT32_LIMIT) -> bool:
    ids = list(ids)
    return not ids or (max(ids) < limit and max(ids) < len(ids) + SLACK)


class IdMap:
    """old id -> new id over sorted old ids; ids without a definition keep their value if it cannot collide."""

    def __init__(self, old_ids):
        self.old = np.array(sorted(set(int(i) for i in old_ids)), np.int64)
        self.new = np.arange(len(self.old), dtype=np.int64)
        self.n = len(self.old)
        self._scalar = {int(o): k for k, o in enumerate(self.old.tolist())}

    def __call__(self, i: int) -> int:
        i = int(i)
        new = self._scalar.get(i)
        if new is not None:
            return new
        return i if i > self.n else NO_ID

    def array(self, vals: np.ndarray, keep=(NO_ID,)) -> np.ndarray:
        v = np.asarray(vals, np.int64)
        if self.n == 0:
            hit = np.zeros(v.shape, bool)
            pos = np.zeros(v.shape, np.int64)
        else:
            pos = np.minimum(np.searchsorted(self.old, v), self.n - 1)
            hit = self.old[pos] == v
        # an undefined id >= n + 1 stays (never equal to a new id, nor to the synthetic root id n);
        # a smaller one would collide with a renumbered definition and becomes NO_ID
        out = np.where(hit, self.new[pos] if self.n else 0, np.where(v > self.n, v, NO_ID))
        for k in keep:
            out = np.where(v == k, k, out)
        return out


class DenseTrace:
    """A trace with renumbered ids (see the module docstring); reads through to the trace it wraps.

    ``original`` is the wrapped trace; ``location_map``, ``process_map``,
    ``region_map`` and ``metric_map`` give the original id of each new id
    (None where that kind was kept as it is).
    """

    def __init__(self, trace, locations: bool, processes: bool, threads: bool, regions: bool, metrics: bool):
        self.original = trace
        d = trace.defs
        self.problems = list(getattr(trace, "problems", []) or [])
        self.path = getattr(trace, "path", "<trace>")
        lmap = IdMap(d.locations) if locations else None
        rank_ids = set(d.processes) | {r for g in d.groups.values() for r in g if r not in (NO_ID, ANY)}
        pmap = IdMap(rank_ids) if processes else None
        rmap = IdMap(d.regions) if regions else None
        mmap = IdMap(d.metrics) if metrics else None
        self._lmap, self._pmap, self._rmap, self._mmap = lmap, pmap, rmap, mmap
        L = (lambda i: lmap(i)) if lmap else (lambda i: i)
        P = (lambda i: pmap(i)) if pmap else (lambda i: i)
        R = (lambda i: rmap(i)) if rmap else (lambda i: i)
        M = (lambda i: mmap(i)) if mmap else (lambda i: i)
        if locations:
            ids = sorted(d.locations)
            self.problems.append(f"location ids are not dense ({len(ids)} locations, ids {_span(ids)}); "
                                 f"numbered 0..{len(ids) - 1} for the analysis")
        if processes:
            ids = sorted(rank_ids)
            self.problems.append(f"process ids (MPI ranks) are not dense or out of range ({len(ids)} ranks, ids "
                                 f"{_span(ids)}); numbered 0..{len(ids) - 1} for the analysis")
        thread_of = {}
        if threads:
            by_proc: dict[int, list[tuple[int, int]]] = {}
            for loc in d.locations.values():
                by_proc.setdefault(loc.process, []).append((loc.thread, loc.id))
            for members in by_proc.values():
                for k, (_, lid) in enumerate(sorted(members)):
                    thread_of[lid] = k
            self.problems.append("thread numbers of 2^31 or more, or two locations with the same thread number "
                                 "in one process; threads numbered from 0 per process for the analysis")
        nd = Definitions(strings=d.strings, files=d.files, machines=d.machines, nodes=d.nodes, comms={},
                         locks=d.locks, windows=d.windows, attributes=d.attributes, repairs=d.repairs)
        nd.regions = {R(r.id): Region(R(r.id), r.name, r.file, r.begin_line, r.end_line, r.paradigm, r.role)
                      for r in d.regions.values()}
        nd.callsites = {c.id: Callsite(c.id, c.file, c.line, R(c.region_entered)) for c in d.callsites.values()}
        nd.processes = {P(p.id): Process(P(p.id), p.node, p.name) for p in d.processes.values()}
        nd.locations = {L(l.id): Location(L(l.id), P(l.process), thread_of.get(l.id, l.thread), l.name)
                        for l in d.locations.values()}
        nd.groups = {g: tuple(P(r) if r not in (NO_ID, ANY) else r for r in ranks) for g, ranks in d.groups.items()}
        nd.comms = {c.id: Comm(c.id, c.group, c.name, c.parent, tuple(P(r) for r in c.ranks))
                    for c in d.comms.values()}
        nd.clocks = {P(p): Clock(P(p), c.ticks_per_second, c.origin) for p, c in d.clocks.items()}
        nd.offsets = {P(p): [Offset(o.local_time, o.offset) for o in offs] for p, offs in d.offsets.items()}
        nd.metrics = {M(m.id): Metric(M(m.id), m.name, m.unit, m.dtype, m.mode) for m in d.metrics.values()}
        self.defs = nd
        self.location_ids = np.array(sorted(nd.locations), dtype=np.int64)
        self._old_loc = {L(i): i for i in d.locations}

    def __getattr__(self, name):  # header, blocks, close, ...: those of the wrapped trace
        return getattr(self.original, name)

    def __repr__(self) -> str:
        return f"<DenseTrace of {self.original!r}>"

    # ------------------------------------------------------------------ events
    def _old(self, location: int) -> int:
        try:
            return self._old_loc[int(location)]
        except KeyError:
            raise KeyError(f"{self.path}: no location {location} (locations: 0..{len(self.location_ids) - 1} "
                           f"after renumbering)") from None

    def check_location(self, location: int) -> None:
        self._old(location)

    def n_events(self, location: int) -> int:
        return self.original.n_events(self._old(location))

    def events(self, location: int):
        ev = self.original.events(self._old(location))
        ev.location = int(location)
        self._rewrite(ev.type, ev.a, ev.c, ev.b)
        return ev

    def new_column_buffer(self, n: int):
        return self.original.new_column_buffer(n)

    def decode_into(self, location: int, buffer):
        cols = self.original.decode_into(self._old(location), buffer)
        self._rewrite(cols["type"], cols["a"], cols["c"], cols["b"])
        return cols

    def time_range(self, location: int):
        return self.original.time_range(self._old(location))

    def _rewrite(self, etype: np.ndarray, a: np.ndarray, c: np.ndarray, b: np.ndarray) -> None:
        """Renumber the id fields of one location's events in place."""
        if self._rmap is not None:
            m = np.isin(etype, _REGION_EVENTS)
            if m.any():
                a[m] = self._rmap.array(a[m]).astype(a.dtype)
        if self._mmap is not None:
            m = etype == EventType.COUNTER
            if m.any():
                a[m] = self._mmap.array(a[m]).astype(a.dtype)
        if self._pmap is not None:
            m = np.isin(etype, _RANK_A_EVENTS)
            if m.any():
                a[m] = self._pmap.array(a[m], keep=(NO_ID, ANY)).astype(a.dtype)
            m = etype == EventType.MPI_COLLEXIT
            if m.any():
                c[m] = self._pmap.array(c[m], keep=(NO_ID,)).astype(c.dtype)
            m = np.isin(etype, _RANK_B_EVENTS) | ((etype == EventType.MPI_RMA_SYNC) & np.isin(c, _RANK_B_SYNCS))
            if m.any():
                b[m] = self._pmap.array(b[m], keep=(NO_ID,)).astype(b.dtype)


def _span(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:3])
    return shown + (f", ..., {ids[-1]}" if len(ids) > 3 else "")


def duplicate_threads(defs) -> list[tuple[int, int, int, int]]:
    """(first location, other location, process, thread) for each location whose process already has a
    location with its thread number (no measurement writes that; the cube needs distinct threads)."""
    seen: dict[tuple[int, int], int] = {}
    out = []
    for lid in sorted(defs.locations):
        loc = defs.locations[lid]
        key = (loc.process, loc.thread)
        if key in seen:
            out.append((seen[key], lid, loc.process, loc.thread))
        else:
            seen[key] = lid
    return out


def dense_view(trace):
    """``trace`` itself when its ids are compact, else a :class:`DenseTrace` over it (module docstring)."""
    d = trace.defs
    loc_ids = sorted(d.locations)
    locations = bool(loc_ids) and loc_ids[-1] != len(loc_ids) - 1
    ranks = set(d.processes) | {r for g in d.groups.values() for r in g if r not in (NO_ID, ANY)}
    processes = not _compact(ranks)
    threads = bool(duplicate_threads(d)) or any(l.thread >= INT32_LIMIT for l in d.locations.values())
    regions = not _compact(d.regions)
    metrics = not _compact(d.metrics)
    if not (locations or processes or threads or regions or metrics):
        return trace
    return DenseTrace(trace, locations, processes, threads, regions, metrics)
