"""What the foreign-format readers (EPILOG 1.x, OTF2) hand over: :class:`TraceAssembly`.

A reader translates definitions and events into our format's terms (global
ranks, our region paradigms/roles, team ids, lock orders, request ids) and
stores them here.  :meth:`TraceAssembly.to_trace` then writes a native trace
through :class:`tracefmt.TraceWriter` so every consumer sees one interface,
whatever the input format was.

Region classification by name lives here too because both importers and the
OTF2 exporter need it: the EPIK/Score-P conventions name MPI functions
``MPI_Xxx`` and OpenMP constructs ``!$omp <construct> @file:line``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from . import conventions
from .definitions import Clock, Comm, Definitions, Location, Lock, Machine, Metric, Node, Process, Region
from .layout import MetricDtype, MetricMode
from .reader import open as open_native
from .writer import to_bytes, write_trace
from .layout import EVENT_DTYPE, NO_ID, EventType, LockKind, Paradigm, Role

# --------------------------------------------------------------------------
# Naming conventions (shared with the native builder: tracefmt.conventions)
# --------------------------------------------------------------------------
def classify_name(name: str) -> tuple[Paradigm, Role]:
    """(paradigm, role) of a region from its name alone."""
    return conventions.classify(name)


def mpi_role(name: str) -> Role:
    """Role of an MPI function from its name, with or without the ``MPI_`` prefix."""
    if name[:4].upper() != "MPI_":
        name = "MPI_" + name
    return conventions.classify(name)[1]


#: the ``!$omp`` word Score-P/OPARI2 use for each OpenMP role (OTF2 output names)
_OMP_WORDS = {
    Role.OMP_PARALLEL: "parallel",
    Role.OMP_LOOP: "for",
    Role.OMP_SECTIONS: "sections",
    Role.OMP_SECTION: "section",
    Role.OMP_SINGLE: "single",
    Role.OMP_SINGLE_BODY: "single sblock",
    Role.OMP_MASTER: "master",
    Role.OMP_WORKSHARE: "workshare",
    Role.OMP_CRITICAL: "critical",
    Role.OMP_CRITICAL_BODY: "critical sblock",
    Role.OMP_ATOMIC: "atomic",
    Role.OMP_BARRIER: "barrier",
    Role.OMP_IMPLICIT_BARRIER: "implicit barrier",
    Role.OMP_FLUSH: "flush",
    Role.OMP_ORDERED: "ordered",
    Role.OMP_ORDERED_BODY: "ordered sblock",
    Role.OMP_TASK: "task",
    Role.OMP_TASKWAIT: "taskwait",
}


def omp_construct_label(role: int) -> str | None:
    """The ``!$omp`` construct word of an OpenMP role, None for roles that are no construct."""
    return _OMP_WORDS.get(role)


# --------------------------------------------------------------------------
# The assembly
# --------------------------------------------------------------------------
@dataclass
class RegionInfo:
    name: str
    file: str = ""
    begin_line: int = NO_ID
    end_line: int = NO_ID
    paradigm: int = Paradigm.UNKNOWN
    role: int = Role.FUNCTION


@dataclass
class LocationInfo:
    rank: int  # process id (MPI rank in MPI_COMM_WORLD, 0 for non-MPI)
    thread: int  # thread number within the process
    name: str = ""


@dataclass
class TraceAssembly:
    """Definitions and per-location events produced by a foreign-format reader.

    Ids here are already our global ids.  ``events[loc]`` is a structured
    array of ``layout.EVENT_DTYPE`` whose ``time`` column holds ticks of a
    single global clock with ``ticks_per_second`` (clock offsets already
    applied by the reader).
    """

    source: str
    creator: str
    ticks_per_second: float = 1e9
    regions: dict[int, RegionInfo] = field(default_factory=dict)
    locations: dict[int, LocationInfo] = field(default_factory=dict)
    process_names: dict[int, str] = field(default_factory=dict)
    machine_name: str = "machine"
    node_of_process: dict[int, str] = field(default_factory=dict)  # rank -> node name
    groups: dict[int, tuple[int, ...]] = field(default_factory=dict)
    comms: dict[int, tuple[int, str, int]] = field(default_factory=dict)  # id -> (group, name, parent)
    locks: dict[int, tuple[int, str]] = field(default_factory=dict)  # id -> (LockKind, name)
    metrics: dict[int, tuple[str, str, int, int]] = field(default_factory=dict)  # id -> (name, unit, dtype, mode)
    attributes: dict[str, str] = field(default_factory=dict)
    events: dict[int, np.ndarray] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    # -- helpers for readers ------------------------------------------------
    def region_id(self, name: str, **kw) -> int:
        """Id of the region with this name, defining it (classified by name) if new."""
        for rid, r in self.regions.items():
            if r.name == name:
                return rid
        rid = len(self.regions)
        while rid in self.regions:
            rid += 1
        if "paradigm" not in kw or "role" not in kw:
            p, ro = classify_name(name)
            kw.setdefault("paradigm", p)
            kw.setdefault("role", ro)
        self.regions[rid] = RegionInfo(name, **kw)
        return rid

    def n_events(self) -> int:
        return int(sum(len(e) for e in self.events.values()))

    # -- output -----------------------------------------------------------------
    def definitions(self) -> Definitions:
        """Our :class:`Definitions` for the assembled trace."""
        d = Definitions()
        file_ids: dict[str, int] = {}
        for rid, r in sorted(self.regions.items()):
            fid = NO_ID
            if r.file:
                fid = file_ids.setdefault(r.file, len(file_ids))
            d.regions[rid] = Region(rid, r.name, fid, r.begin_line, r.end_line,
                                    Paradigm(r.paradigm), Role(r.role))
        d.files = {fid: name for name, fid in file_ids.items()}
        d.machines[0] = Machine(0, self.machine_name or "machine")
        node_ids: dict[str, int] = {}
        ranks = sorted({loc.rank for loc in self.locations.values()} | set(self.process_names))
        for rank in ranks:
            node = self.node_of_process.get(rank, "node")
            nid = node_ids.get(node)
            if nid is None:
                nid = node_ids[node] = len(node_ids)
                d.nodes[nid] = Node(nid, 0, node)
            d.processes[rank] = Process(rank, nid, self.process_names.get(rank, f"rank {rank}"))
            d.clocks[rank] = Clock(rank, float(self.ticks_per_second), 0)
        for lid, loc in sorted(self.locations.items()):
            d.locations[lid] = Location(lid, loc.rank, loc.thread, loc.name)
        d.groups = {gid: tuple(int(r) for r in ranks) for gid, ranks in self.groups.items()}
        for cid, (gid, name, parent) in sorted(self.comms.items()):
            d.comms[cid] = Comm(cid, gid, name, parent, d.groups.get(gid, ()))
        for lk, (kind, name) in sorted(self.locks.items()):
            d.locks[lk] = Lock(lk, LockKind(kind), name)
        for mid, (name, unit, dtype, mode) in sorted(self.metrics.items()):
            d.metrics[mid] = Metric(mid, name, unit, MetricDtype(dtype), MetricMode(mode))
        d.attributes = dict(self.attributes)
        d.attributes.setdefault("converted_from", self.creator)
        return d

    def _events_for_writing(self) -> dict[int, np.ndarray]:
        return {lid: self.events.get(lid, np.zeros(0, EVENT_DTYPE)) for lid in self.locations}

    def write(self, path: str | os.PathLike) -> None:
        """Write a native ``.elg`` trace."""
        write_trace(path, self.definitions(), self._events_for_writing(), creator=self.creator)

    def to_trace(self):
        """The assembled trace as a native :class:`~tracefmt.reader.Trace` (encoded in memory)."""
        data = to_bytes(self.definitions(), self._events_for_writing(), creator=self.creator)
        trace = open_native(data)
        trace.path = self.source
        trace.problems[:0] = self.problems
        return trace


__all__ = [
    "TraceAssembly",
    "RegionInfo",
    "LocationInfo",
    "classify_name",
    "mpi_role",
    "omp_role",
    "omp_construct_label",
    "EventType",
    "LockKind",
]
