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

import bisect
import os
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from . import conventions
from .definitions import Clock, Comm, Definitions, Location, Lock, Machine, Metric, Node, Process, Region, Window
from .errors import TraceFormatError
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
class ForeignRegion:
    """A region definition as a foreign-format reader collects it (tracefmt codes, not CUBE strings)."""

    name: str
    file: str = ""
    begin_line: int = NO_ID
    end_line: int = NO_ID
    paradigm: int = Paradigm.UNKNOWN
    role: int = Role.FUNCTION


@dataclass
class ForeignLocation:
    """A location (thread of a process) as a foreign-format reader collects it."""

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
    regions: dict[int, ForeignRegion] = field(default_factory=dict)
    locations: dict[int, ForeignLocation] = field(default_factory=dict)
    process_names: dict[int, str] = field(default_factory=dict)
    machine_name: str = "machine"
    node_of_process: dict[int, str] = field(default_factory=dict)  # rank -> node name
    groups: dict[int, tuple[int, ...]] = field(default_factory=dict)
    comms: dict[int, tuple[int, str, int]] = field(default_factory=dict)  # id -> (group, name, parent)
    windows: dict[int, tuple[int, str]] = field(default_factory=dict)  # id -> (comm, name): MPI RMA windows (2.3)
    locks: dict[int, tuple[int, str]] = field(default_factory=dict)  # id -> (LockKind, name)
    metrics: dict[int, tuple[str, str, int, int]] = field(default_factory=dict)  # id -> (name, unit, dtype, mode)
    attributes: dict[str, str] = field(default_factory=dict)
    events: dict[int, np.ndarray] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # damage: something the file should hold is missing
    notes: list[str] = field(default_factory=list)  # what the source holds that we do not analyse (not damage)

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
        self.regions[rid] = ForeignRegion(name, **kw)
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
        for wid, (comm, name) in sorted(self.windows.items()):
            d.windows[wid] = Window(wid, comm, name)
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
        try:
            data = to_bytes(self.definitions(), self._events_for_writing(), creator=self.creator)
        except (ValueError, OverflowError) as e:  # definitions no file of ours can hold (a damaged source)
            raise TraceFormatError(f"inconsistent definitions: {e}", path=str(self.source)) from None
        trace = open_native(data)
        trace.path = self.source
        trace.problems[:0] = self.problems
        trace.notes[:0] = self.notes
        return trace


# --------------------------------------------------------------------------
# Events under construction, and the whole-trace fix-ups both importers need
# --------------------------------------------------------------------------
class Row(list):
    """One event under construction: [time, type, flags, a, b, c, d, e] (field meaning: layout.EventType)."""

    __slots__ = ()


T, TYPE, FLAGS, A, B, C, D, E = range(8)


class EventRows:
    """Per-location rows of an import, with the fix-ups that need more than one location.

    ``rank_thread[key]`` gives the process and thread number of each row list.
    ENTER rows of parallel regions may carry a thread number in d already
    (OTF2 knows it from the team); NO_ID there means "use the thread id".
    """

    def __init__(self, rows: dict, rank_thread: dict, asm: TraceAssembly):
        self.rows, self.rank_thread, self.asm = rows, rank_thread, asm
        self._warned: set[str] = set()

    def warn(self, key: str, msg: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.asm.problems.append(msg)

    def _by_rank(self) -> dict[int, list[tuple[int, object]]]:
        by_rank: dict[int, list] = defaultdict(list)
        for key in self.rows:
            rank, tid = self.rank_thread[key]
            by_rank[rank].append((tid, key))
        for v in by_rank.values():
            v.sort(key=lambda x: x[0])
        return by_rank

    def resolve_teams(self) -> None:
        """Team ids (numbered per process from the master's FORKs), thread numbers, team sizes.

        A parallel region entered at time t belongs to the latest FORK of its
        process at or before t; the team's size is the number of threads that
        entered it.
        """
        par = {rid for rid, r in self.asm.regions.items() if r.role == Role.OMP_PARALLEL}
        for rank, locs in self._by_rank().items():
            forks: list[tuple] = []  # (fork time, team id)
            fork_rows: dict[int, list[Row]] = defaultdict(list)
            open_team = NO_ID
            for row in self.rows[locs[0][1]]:
                if row[TYPE] == EventType.OMP_FORK:
                    open_team = len(forks)
                    forks.append((row[T], open_team))
                    row[A] = open_team
                    fork_rows[open_team].append(row)
                elif row[TYPE] == EventType.OMP_JOIN:
                    row[A] = open_team
                    fork_rows[open_team].append(row)
            fork_times = [ft for ft, _ in forks]
            members: dict[int, set] = defaultdict(set)
            for tid, key in locs:
                teams: list[int] = []
                for row in self.rows[key]:
                    typ = row[TYPE]
                    if typ == EventType.ENTER and row[A] in par:
                        k = bisect.bisect_right(fork_times, row[T]) - 1
                        if k < 0:
                            self.warn(f"nofork-{rank}", f"rank {rank}: parallel region entered at {row[T]!r} "
                                                        f"before any FORK; its team is left undefined")
                            team = NO_ID
                        else:
                            team = forks[k][1]
                        num = tid if row[D] == NO_ID else row[D]
                        if team != NO_ID:
                            members[team].add(num)
                        row[C], row[D] = team, num
                        teams.append(team)
                    elif typ in (EventType.EXIT, EventType.OMP_COLLEXIT):
                        if typ == EventType.OMP_COLLEXIT:
                            row[B] = teams[-1] if teams else NO_ID
                        if row[A] in par and teams:
                            teams.pop()
            for team, rows in fork_rows.items():
                size = len(members.get(team, ())) or len(locs)
                for row in rows:
                    if row[C] in (0, NO_ID):
                        row[C] = size

    def resolve_lock_orders(self) -> None:
        """Acquisition order per lock, counted from 1 over all threads, by time; releases get their acquire's."""
        acquires: dict[int, list] = defaultdict(list)
        keys = list(self.rows)
        for i, key in enumerate(keys):
            for row in self.rows[key]:
                if row[TYPE] == EventType.OMP_ACQUIRE_LOCK:
                    acquires[row[A]].append((row[T], i, row))
        for lst in acquires.values():
            lst.sort(key=lambda x: (x[0], x[1]))
            for n, (_t, _i, row) in enumerate(lst, start=1):
                row[D] = n
        for key in keys:
            held: dict[int, list[int]] = defaultdict(list)
            for row in self.rows[key]:
                if row[TYPE] == EventType.OMP_ACQUIRE_LOCK:
                    held[row[A]].append(row[D])
                elif row[TYPE] == EventType.OMP_RELEASE_LOCK:
                    if held[row[A]]:
                        row[D] = held[row[A]].pop()
                    else:
                        self.warn(f"rel-{key}", f"lock {row[A]} released at {row[T]!r} without being acquired "
                                                f"(rank {self.rank_thread[key][0]}, thread {self.rank_thread[key][1]})")

    def resolve_receive_bytes(self) -> None:
        """Receives with byte count -1 take it from the matching send (MPI's non-overtaking order)."""
        sends: dict[tuple, list[int]] = defaultdict(list)
        recvs: dict[tuple, list[Row]] = defaultdict(list)
        for key in self.rows:
            rank = self.rank_thread[key][0]
            for row in self.rows[key]:
                if row[TYPE] == EventType.MPI_SEND:
                    sends[(rank, row[A], row[B], row[C])].append(row[D])
                elif row[TYPE] == EventType.MPI_RECV:
                    recvs[(row[A], rank, row[B], row[C])].append(row)
        unmatched = 0
        for chan, rows in recvs.items():
            sizes = sends.get(chan, [])
            for i, row in enumerate(rows):
                if row[D] == -1:
                    if i < len(sizes):
                        row[D] = sizes[i]
                    else:
                        row[D] = 0
                        unmatched += 1
        if unmatched:
            self.asm.problems.append(f"{unmatched} receive(s) have no matching send; their byte count is set to 0")

    def arrays(self, origin, ticks_per_unit: float | None) -> dict:
        """Event arrays per key.  Times become ticks: (t - origin) x ticks_per_unit, or t - origin for
        integer tick times (ticks_per_unit None)."""
        out = {}
        for key, rows in self.rows.items():
            ev = np.zeros(len(rows), dtype=EVENT_DTYPE)
            if rows:
                arr = np.array([r[1:] for r in rows], dtype=np.int64)
                if ticks_per_unit is None:
                    ticks = np.array([r[0] for r in rows], dtype=np.int64) - int(origin)
                else:
                    times = np.array([r[0] for r in rows], dtype=np.float64)
                    ticks = np.rint((times - origin) * ticks_per_unit).astype(np.int64)
                if np.any(np.diff(ticks) < 0):
                    k = int(np.flatnonzero(np.diff(ticks) < 0)[0])
                    rk, th = self.rank_thread[key]
                    self.warn(f"order-{key}", f"rank {rk} thread {th}: event {k + 1} is earlier than event {k}; "
                                              f"times kept as recorded")
                ev["time"] = np.maximum(ticks, 0).astype(np.uint64)
                ev["type"] = arr[:, 0]
                ev["flags"] = arr[:, 1]
                ev["a"] = arr[:, 2] & 0xFFFFFFFF
                ev["b"] = arr[:, 3] & 0xFFFFFFFF
                ev["c"] = arr[:, 4] & 0xFFFFFFFF
                ev["d"] = arr[:, 5].astype(np.uint64)
                ev["e"] = arr[:, 6].astype(np.uint64)
            out[key] = ev
        return out


__all__ = [
    "EventRows",
    "Row",
    "TraceAssembly",
    "ForeignRegion",
    "ForeignLocation",
    "classify_name",
    "mpi_role",
    "omp_role",
    "omp_construct_label",
    "EventType",
    "LockKind",
]
