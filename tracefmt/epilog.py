"""Reader for genuine EPILOG 1.x traces (KOJAK, Scalasca 1.x / EPIK), format versions 1.0-1.9.

Two inputs are accepted:

* a merged trace (``epik.elg`` or any ``*.elg`` written by ``elg_merge``/KOJAK):
  one EPILOG file with global definitions followed by events that carry
  global location ids;
* an EPIK experiment archive ``epik_<title>/`` with unified definitions
  ``epik.esd``, per-rank id maps and clock offsets ``epik.map`` and one trace
  per rank ``ELG/NNNNN`` (gzip-compressed or not).

Records and definitions are parsed by :mod:`tracefmt.epilog_records`; the
events of each file are decoded by the numba kernel of
:mod:`tracefmt.epilog_kernels` (driven by :mod:`tracefmt.epilog_decode`, no
per-event Python), and the fix-ups that need every file run on the columns
(:mod:`tracefmt.epilog_columns`).  The result is a
:class:`tracefmt.foreign.TraceAssembly` in our terms:

* local ids mapped to global ones through ``epik.map``; communicator-local
  partner ranks (EPILOG >= 1.8 per-rank traces) mapped to global ranks, and
  global location ids (merged traces) mapped to the ranks owning them;
  MPI_GROUP records whose mode says WORLD carry only their size;
* clock offsets applied by linear interpolation between the two OFFSET
  measurements, then all times rebased so the earliest event is at 0;
* EXIT records (which carry no region) resolved with a per-location stack;
* metric values (one per METRIC definition, or as many as the first
  ENTER/EXIT holds) as COUNTER rows after their event;
* regions classified by type code and by the EPIK naming conventions;
* OpenMP teams numbered per process from the FORK events, thread numbers
  taken from the location's thread id (EPIK ignores nested parallelism),
  team sizes counted from the threads that entered the parallel region;
* lock acquisition order counted from 1 per lock and process;
* received byte counts (which EPILOG leaves out) taken from the matching send;
* non-blocking requests rebuilt from the REQUEST attribute records.

What is read but not analysed (RMA transfers, whose MPI calls keep their
time; call paths, topologies, windows; unknown record types) is said in
``notes``, not ``problems``.  The format is described record by record in
``docs/interop.md``; ``tests/helpers/epilog_reference.py`` is the slow
per-record reader the tests compare the kernels with.
"""

from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass, field

import numpy as np

from .epilog_columns import finish_assembly
from .epilog_decode import EventColumns, FileTables, decode_file
from .epilog_records import (  # noqa: F401  (EpilogFormatError, R: part of this module's interface)
    ELG_NO_ID,
    GROUP_SELF,
    GROUP_WORLD,
    TICKS_PER_SECOND,
    EpilogDefinitions,
    EpilogFile,
    EpilogFormatError,
    R,
    SparseIdMap,
    classify_region,
    read_definitions,
)
from .foreign import ForeignLocation, ForeignRegion, TraceAssembly
from .layout import NO_ID, LockKind, MetricDtype, MetricMode, Role

# --------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------
@dataclass
class FileContext:
    """How ids in one event file translate to global ones."""

    f: EpilogFile
    merged: bool  # partner ranks are global location ids (merged traces)
    rank: int | None  # the process of a per-rank file
    default_location: int | None  # global location used when records carry no location id
    loc_map: np.ndarray | SparseIdMap | None = None
    region_map: np.ndarray | SparseIdMap | None = None
    comm_map: np.ndarray | SparseIdMap | None = None
    callsite_map: np.ndarray | SparseIdMap | None = None
    offsets: list[tuple[float, float]] = field(default_factory=list)
    events_read: int = 0  # event records (types 100 and up) met, for the NUM_EVENTS check


def clock_correction(offsets: list[tuple[float, float]]) -> tuple[float, float, float] | None:
    """(t0, o0, slope) of one process's clock correction t + o0 + slope (t - t0): linear interpolation
    between the first and last OFFSET measurement; None with fewer than two (elg_merge and PEARL
    discard a single one)."""
    if len(offsets) < 2:
        return None
    (t0, o0), (t1, o1) = offsets[0], offsets[-1]
    return t0, o0, (0.0 if t1 == t0 else (o1 - o0) / (t1 - t0))


class EpilogImporter:
    """Builds a TraceAssembly from EPILOG definitions and one or more event files.

    Our locations are the defined ones, numbered by (rank, thread, EPILOG id);
    our region ids are the global EPILOG region ids; MPI_COMM_SELF becomes one
    communicator per process, as ``elg_merge`` makes it.  ``read_events`` runs
    the numba kernels of :mod:`tracefmt.epilog_kernels` over one file; the
    fix-ups that need all files are in :mod:`tracefmt.epilog_columns`.
    """

    def __init__(self, source: str, defs: EpilogDefinitions, version: int):
        self.defs = defs
        self.version = version
        self.asm = TraceAssembly(source=source, creator=f"EPILOG {version // 1000}.{version % 1000}",
                                 ticks_per_second=TICKS_PER_SECOND)
        self.metc = len(defs.metrics) if defs.metrics else -1  # -1: inferred from the first ENTER/EXIT
        self.problems, self.notes = self.asm.problems, self.asm.notes
        self._said: set[str] = set()
        self.locks: dict[tuple[int, int], int] = {}  # (rank, EPILOG lock id) -> our lock id
        self.columns = EventColumns()
        self.record_counts = np.zeros(256, np.int64)  # records of each type in the files decoded so far
        self._setup_definitions()
        self.loc_messages = np.zeros(len(self.lids), np.int64)  # sends and receives of each location so far

    def warn(self, key: str, msg: str, note: bool = False) -> None:
        """Say msg once per key: in problems (damage) or, with ``note``, in notes (something not analysed)."""
        if key not in self._said:
            self._said.add(key)
            (self.notes if note else self.problems).append(msg)

    # -- definitions --------------------------------------------------------
    def _setup_definitions(self) -> None:
        d, a = self.defs, self.asm
        for rid, (name, fid, beg, end, descr, rt) in d.regions.items():
            file = d.files.get(fid, "") if fid != ELG_NO_ID else ""
            par, role = classify_region(name, file, descr, rt)
            a.regions[rid] = ForeignRegion(name, file, beg, end, int(par), int(role))
        a.machine_name = next(iter(d.machines.values()), "machine")
        for pid, name in d.processes.items():
            a.process_names[pid] = name
        for _lid, (_mid, nid, pid, _tid) in d.locations.items():
            a.node_of_process.setdefault(pid, d.nodes.get(nid, (0, f"node{nid}"))[1])
            a.process_names.setdefault(pid, f"rank {pid}")
        # our locations: every defined one, by (rank, thread, EPILOG id)
        self.lids = sorted(d.locations, key=lambda lid: (d.locations[lid][2], d.locations[lid][3], lid))
        self.loc_index = {lid: i for i, lid in enumerate(self.lids)}
        for i, lid in enumerate(self.lids):
            _m, _n, pid, tid = d.locations[lid]
            a.locations[i] = ForeignLocation(pid, tid, d.threads.get((pid, tid), "") or f"rank {pid} thread {tid}")
        self.loc_rank = np.array([d.locations[lid][2] for lid in self.lids], np.int64)
        ranks = sorted(set(self.loc_rank.tolist()))
        # our comms: EPILOG >= 1.8 defines groups + comm refs, older files bit vectors
        for gid, (mode, ranks_of) in d.groups.items():
            known = sorted(d.processes) or ranks
            if mode & GROUP_WORLD and not ranks_of:  # WORLD with no size given: every process
                ranks_of = tuple(known)
            elif mode & GROUP_WORLD and len(ranks_of) > len(known):
                self.warn(f"world-{gid}", f"MPI_GROUP {gid} (WORLD) says {len(ranks_of)} ranks, the definitions "
                                          f"have {len(known)} processes; taken as those")
                ranks_of = tuple(known)
            a.groups[gid] = tuple(ranks_of)
        next_gid = max(a.groups, default=-1) + 1
        for cid, gid in d.comm_refs.items():
            mode = d.groups.get(gid, (0, ()))[0]
            name = "MPI_COMM_WORLD" if mode & GROUP_WORLD else ("MPI_COMM_SELF" if mode & GROUP_SELF else "")
            a.comms[cid] = (gid, name, NO_ID)
        for cid, (_mode, ranks_of) in d.comm_bits.items():
            if cid in a.comms:
                continue
            a.groups[next_gid] = ranks_of
            a.comms[cid] = (next_gid, "", NO_ID)
            next_gid += 1
        # MPI_COMM_SELF: one communicator per process, numbered after the defined ones
        self.self_comms: dict[tuple[int, int], int] = {}
        next_cid = max(list(a.comms) + list(d.comm_refs) + list(d.comm_bits), default=-1) + 1
        for cid in sorted(c for c, g in d.comm_refs.items() if d.groups.get(g, (0,))[0] & GROUP_SELF):
            for rank in ranks:
                a.groups[next_gid] = (rank,)
                a.comms[next_cid] = (next_gid, "MPI_COMM_SELF", NO_ID)
                self.self_comms[(cid, rank)] = next_cid
                next_gid, next_cid = next_gid + 1, next_cid + 1
        for i, (_mid, name, descr, dtype, mode) in enumerate(d.metrics):
            a.metrics[i] = (name, descr, int(MetricDtype.DOUBLE if dtype == 1 else MetricDtype.UINT64),
                            int(MetricMode.ACCUMULATED if mode == 0 else MetricMode.ABSOLUTE))
        self._definition_notes()

    def _definition_notes(self) -> None:
        """What the definitions hold that the analysis does not use: said in notes, kept as attributes."""
        d, a = self.defs, self.asm
        if d.callpaths:
            self.notes.append(f"{len(d.callpaths)} CALL_PATH definition(s) read; EPILOG events do not refer to "
                              f"them, the call tree is rebuilt from ENTER/EXIT")
        for topid, (cid, dims, periodic, name, _dim_names) in sorted(d.topologies.items()):
            label = d.string(name) if name != ELG_NO_ID else f"topology {topid}"
            shape = "x".join(str(x) for x in dims)
            a.attributes[f"epilog.cart_topology.{topid}"] = (
                f"{label}: {shape}, periodic {''.join('1' if p else '0' for p in periodic)}, "
                f"comm {'none' if cid == ELG_NO_ID else cid}, "
                f"{sum(1 for (t, _l) in d.coords if t == topid)} coordinates")
        if d.topologies:
            self.notes.append(f"{len(d.topologies)} Cartesian topolog{'y' if len(d.topologies) == 1 else 'ies'} "
                              f"read (trace attributes epilog.cart_topology.*); not used by the analysis")
        if d.windows:
            self.notes.append(f"{len(d.windows)} RMA window(s) defined; one-sided transfers are not analysed")
        if d.comm_dist:
            self.notes.append(f"{len(d.comm_dist)} MPI_COMM_DIST definition(s) read and not used")

    def is_self(self, cid: int) -> bool:
        d = self.defs
        return cid in d.comm_refs and bool(d.groups.get(d.comm_refs[cid], (0,))[0] & GROUP_SELF)

    def comm_ranks(self, cid: int) -> tuple[int, ...] | None:
        """Global ranks of a global communicator in comm-rank order (None if not defined)."""
        d = self.defs
        if cid in d.comm_refs:
            return self.asm.groups.get(d.comm_refs[cid], d.groups.get(d.comm_refs[cid], (0, ()))[1])
        if cid in d.comm_bits:
            return d.comm_bits[cid][1]
        return None

    def our_comm(self, cid: int, rank: int | None) -> int:
        """Our communicator id of global communicator cid used by a process."""
        return self.self_comms.get((cid, rank), cid)

    def location_rank(self, lid: int) -> int:
        return self.defs.locations[lid][2]

    def lock_id(self, rank: int, lk: int, top_region: int) -> int:
        """Our lock id of EPILOG lock lk of a process, defined at its first use (kind from the region
        open around it: a critical construct, or a nestable-lock API call)."""
        key = (rank, lk)
        if key not in self.locks:
            gl = len(self.locks)
            self.locks[key] = gl
            kind, name = LockKind.OMP_LOCK, f"lock {lk}"
            top = self.asm.regions.get(top_region)
            if top is not None:
                if top.role == Role.OMP_CRITICAL:
                    kind, name = LockKind.OMP_CRITICAL, top.name
                elif top.role == Role.OMP_LOCK_API and "nest" in top.name.lower():
                    kind = LockKind.OMP_NEST_LOCK
            self.asm.locks[gl] = (int(kind), f"{name} (rank {rank})" if kind != LockKind.OMP_CRITICAL else name)
        return self.locks[key]

    def file_clock(self, ctx: FileContext):
        if not ctx.offsets:
            return None
        corr = clock_correction(ctx.offsets)
        if corr is None:
            self.warn(f"one-offset-{ctx.rank}", f"{ctx.f.path}: only one clock-offset measurement; not applied")
        return corr

    # -- events of one file -------------------------------------------------
    def read_events(self, ctx: FileContext, start: int) -> None:
        """Decode the events of one file (numba kernel, two passes) into ``self.columns``."""
        tables = FileTables(self, ctx)
        ctx.events_read = decode_file(self, ctx, start, tables)

    def finish(self) -> TraceAssembly:
        return finish_assembly(self)


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------
def is_epik_archive(path: str) -> bool:
    return os.path.isdir(path) and (os.path.isfile(os.path.join(path, "epik.esd"))
                                    or os.path.isfile(os.path.join(path, "epik.elg")))


def read_merged(path: str, importer=None) -> TraceAssembly:
    """A single EPILOG file: a merged trace (global location ids) or a one-process trace.

    ``importer``: the EpilogImporter class to use (the tests pass their slow reference)."""
    importer = importer or EpilogImporter
    f = EpilogFile.open(str(path))
    defs, first = read_definitions(f)
    imp = importer(str(path), defs, f.version)
    default = next(iter(defs.locations)) if len(defs.locations) == 1 else None
    if not defs.locations:
        raise EpilogFormatError(f"{path}: no LOCATION definitions before the first event (byte offset {first})")
    offsets = []
    if defs.offsets:
        if len({p for (_m, _n, p, _t) in defs.locations.values()}) == 1:
            offsets = defs.offsets
        else:
            imp.warn("merged-offsets", f"{path}: OFFSET records in a multi-process file cannot be attributed "
                                       f"to a process; ignored")
    ctx = FileContext(f, merged=True, rank=None, default_location=default, offsets=offsets)
    imp.read_events(ctx, first)
    if defs.num_events and ctx.events_read < defs.num_events:  # 0 is the dummy of a file never patched
        imp.warn("truncated", f"{path}: truncated: {ctx.events_read} of the {defs.num_events} event records "
                              f"its NUM_EVENTS record announces")
    return imp.finish()


def read_archive(path: str, importer=None) -> TraceAssembly:
    """An EPIK experiment archive: ``epik.esd`` + ``epik.map`` + ``ELG/NNNNN``."""
    importer = importer or EpilogImporter
    path = str(path)
    esd = os.path.join(path, "epik.esd")
    elg_dir = os.path.join(path, "ELG")
    if not os.path.isfile(esd):
        if os.path.isfile(os.path.join(path, "epik.elg")):
            return read_merged(os.path.join(path, "epik.elg"), importer)
        raise EpilogFormatError(f"{path}: not an EPIK archive (no epik.esd)")
    if not os.path.isdir(elg_dir):
        if os.path.isfile(os.path.join(path, "epik.elg")):
            return read_merged(os.path.join(path, "epik.elg"), importer)
        sion = [n for n in os.listdir(path) if n.endswith(".sion")]
        if sion:
            raise EpilogFormatError(f"{path}: traces are in SIONlib containers ({sion[0]}), which are not "
                                    f"supported; re-run with ELG_SION_FILES=0")
        raise EpilogFormatError(f"{path}: no ELG/ directory with per-rank traces and no merged epik.elg")
    ef = EpilogFile.open(esd)
    defs, _ = read_definitions(ef, stop_at_events=False)
    map_path = os.path.join(path, "epik.map")
    if os.path.isfile(map_path):
        mf = EpilogFile.open(map_path)
        mdefs, _ = read_definitions(mf, stop_at_events=False)
        defs.sections = mdefs.sections
        moved = sorted(r for r, at in defs.map_offsets.items() if r in mdefs.sections and
                       mdefs.sections[r].offset != at)
        if moved:  # PEARL seeks by MAP_OFFSET and would fail there; we read the sections in order
            r = moved[0]
            defs.map_offset_problem = (f"{esd}: MAP_OFFSET of rank {r} says byte {defs.map_offsets[r]} of epik.map, "
                                       f"its section is at byte {mdefs.sections[r].offset} "
                                       f"({len(moved)} rank(s) so); sections read in order")
    else:
        defs.sections = {}
    rank_files = sorted(n for n in os.listdir(elg_dir) if n.isdigit())
    if not rank_files:
        raise EpilogFormatError(f"{elg_dir}: no per-rank trace files (expected names like 00000)")
    imp = None
    for name in rank_files:
        rank = int(name)
        f = EpilogFile.open(os.path.join(elg_dir, name))
        if imp is None:
            imp = importer(path, defs, f.version)
            if not os.path.isfile(map_path):
                imp.warn("nomap", f"{path}: no epik.map; local ids are taken as global ids")
            if defs.map_offset_problem:  # nothing is lost: a note, not damage
                imp.warn("map-offset", defs.map_offset_problem, note=True)
        sec = defs.sections.get(rank)
        loc_map = sec.idmaps.get(R.LOCATION) if sec else None
        if loc_map is not None and len(loc_map):
            default = int(loc_map[0])
        else:
            own = sorted((t, lid) for lid, (_m, _n, p, t) in defs.locations.items() if p == rank)
            default = own[0][1] if own else None
        _, first = read_definitions(f)
        ctx = FileContext(
            f, merged=False, rank=rank, default_location=default, loc_map=loc_map,
            region_map=sec.idmaps.get(R.REGION) if sec else None,
            comm_map=sec.idmaps.get(R.MPI_COMM) if sec else None,
            callsite_map=sec.idmaps.get(R.CALL_SITE) if sec else None,
            offsets=sec.offsets if sec else [],
        )
        imp.read_events(ctx, first)
    return imp.finish()


def read(path: str | os.PathLike, importer=None) -> TraceAssembly:
    """An EPILOG trace (merged file) or EPIK archive (directory) as a TraceAssembly."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return read_archive(path, importer)
    return read_merged(path, importer)


def open_epilog(path: str | os.PathLike):
    """An EPILOG trace or EPIK archive as a :class:`tracefmt` Trace."""
    return read(path).to_trace()


def warm_up() -> TraceAssembly:
    """Compile (or load from numba's cache) every EPILOG kernel by reading a tiny merged trace: a
    message to itself, a parallel region of two threads with a lock, the shapes every kernel's signature
    depends on (``analyzer.warmup`` may call it; it returns what it read)."""
    def rec(rtype: int, fmt: str, *vals) -> bytes:
        body = struct.pack("<" + fmt, *vals)
        return bytes([len(body), rtype]) + body

    no = ELG_NO_ID
    data = b"EPILOG\0" + bytes([1, 9, 1]) + b"".join([
        rec(R.STRING, "IB5s", 0, 0, b"main\0"), rec(R.STRING, "IB15s", 1, 0, b"!$omp parallel\0"),
        rec(R.LOCATION, "5I", 0, 0, 0, 0, 0), rec(R.LOCATION, "5I", 1, 0, 0, 0, 1),
        rec(R.REGION, "6IB", 0, 0, no, no, no, no, 1), rec(R.REGION, "6IB", 1, 1, no, no, no, no, 11),
        rec(R.MPI_COMM, "IBIB", 0, 0, 1, 1), rec(R.LAST_DEF, ""), rec(R.ENTER, "IdI", 0, 0.0, 0),
        rec(R.MPI_SEND, "IdIIII", 0, 0.05, 0, 0, 1, 8), rec(R.MPI_RECV, "IdIII", 0, 0.06, 0, 0, 1),
        rec(R.OMP_FORK, "Id", 0, 0.1),
        rec(R.ENTER, "IdI", 0, 0.1, 1), rec(R.ENTER, "IdI", 1, 0.1, 1), rec(R.OMP_ALOCK, "IdI", 1, 0.2, 0),
        rec(R.OMP_RLOCK, "IdI", 1, 0.3, 0), rec(R.OMP_COLLEXIT, "Id", 0, 0.4), rec(R.OMP_COLLEXIT, "Id", 1, 0.4),
        rec(R.OMP_JOIN, "Id", 0, 0.5), rec(R.EXIT, "Id", 0, 1.0)])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "warm.elg")
        with open(path, "wb") as f:
            f.write(data)
        return read_merged(path)
