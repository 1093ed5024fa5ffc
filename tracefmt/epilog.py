"""Reader for genuine EPILOG 1.x traces (KOJAK, Scalasca 1.x / EPIK), format versions 1.0-1.9.

Two inputs are accepted:

* a merged trace (``epik.elg`` or any ``*.elg`` written by ``elg_merge``/KOJAK):
  one EPILOG file with global definitions followed by events that carry
  global location ids;
* an EPIK experiment archive ``epik_<title>/`` with unified definitions
  ``epik.esd``, per-rank id maps and clock offsets ``epik.map`` and one trace
  per rank ``ELG/NNNNN`` (gzip-compressed or not).

The result is a :class:`tracefmt.foreign.TraceAssembly` in our terms:

* local ids mapped to global ones through ``epik.map``; communicator-local
  partner ranks (EPILOG >= 1.8 per-rank traces) mapped to global ranks, and
  global location ids (merged traces) mapped to the ranks owning them;
* clock offsets applied by linear interpolation between the two OFFSET
  measurements, then all times rebased so the earliest event is at 0;
* EXIT records (which carry no region) resolved with a per-location stack;
* regions classified by type code and by the EPIK naming conventions;
* OpenMP teams numbered per process from the FORK events, thread numbers
  taken from the location's thread id (EPIK ignores nested parallelism),
  team sizes counted from the threads that entered the parallel region;
* lock acquisition order counted from 1 per lock and process;
* received byte counts (which EPILOG leaves out) taken from the matching send;
* non-blocking requests rebuilt from the REQUEST attribute records.

RMA (MPI-2 one-sided and SHMEM) records are skipped and reported in
``problems``.  The format itself is described record by record in
``docs/interop.md``.
"""

from __future__ import annotations

import bisect
import gzip
import os
import struct
import zlib
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from .foreign import EventRows, ForeignLocation, ForeignRegion, Row, TraceAssembly, classify_name, mpi_role
from .layout import (
    ANY,
    EVENT_DTYPE,
    NO_ID,
    EventType,
    LockKind,
    MetricDtype,
    MetricMode,
    Paradigm,
    RecvFlag,
    Role,
)

from .errors import TraceFormatError

EPILOG_MAGIC = b"EPILOG\0"
HEADER_SIZE = 10
GZIP_MAGIC = b"\x1f\x8b"
ELG_LITTLE_ENDIAN = 1
ELG_BIG_ENDIAN = 2
ELG_NO_ID = 0xFFFFFFFF
TICKS_PER_SECOND = 1e9  # EPILOG times are double seconds; we store nanosecond ticks


class EpilogFormatError(TraceFormatError):
    """An EPILOG file or experiment archive that cannot be read; the message names file and byte offset."""

    def __init__(self, message: str):
        super().__init__(message)

    def _compose(self) -> str:
        return self.reason  # our messages start with the file name already


# --------------------------------------------------------------------------
# Record codes (EPILOG 1.9, elg_defs.h)
# --------------------------------------------------------------------------
class R:
    STRING = 1
    STRING_CNT = 2
    MACHINE = 3
    NODE = 4
    PROCESS = 5
    THREAD = 6
    LOCATION = 7
    FILE = 8
    REGION = 9
    METRIC = 10
    MPI_COMM = 11
    OFFSET = 12
    LAST_DEF = 13
    NUM_EVENTS = 14
    CALL_SITE = 15
    CART_TOPOLOGY = 16
    CART_COORDS = 17
    MPI_WIN = 18
    MPI_COMM_CNT = 19
    CALL_PATH = 20
    EVENT_TYPES = 21
    EVENT_COUNTS = 22
    MAP_SECTION = 23
    MAP_OFFSET = 24
    IDMAP = 25
    IDMAP_CNT = 26
    MPI_GROUP = 27
    MPI_GROUP_CNT = 28
    MPI_COMM_REF = 29
    MPI_COMM_DIST = 30
    ATTR_UI1 = 60
    ATTR_UI4 = 61
    ENTER = 101
    EXIT = 102
    MPI_SEND = 103
    MPI_RECV = 104
    MPI_COLLEXIT = 105
    OMP_FORK = 106
    OMP_JOIN = 107
    OMP_ALOCK = 108
    OMP_RLOCK = 109
    OMP_COLLEXIT = 110
    ENTER_CS = 111
    MPI_WINEXIT = 117
    MPI_WINCOLLEXIT = 118
    COLLEXIT = 129
    ALOCK = 130
    RLOCK = 131
    MPI_SEND_COMPLETE = 132
    MPI_RECV_REQUEST = 133
    MPI_REQUEST_TESTED = 134
    MPI_CANCELLED = 135
    LOG_OFF = 201
    LOG_ON = 202
    ENTER_TRACING = 203
    EXIT_TRACING = 204


# attribute types of ATTR_UI1 / ATTR_UI4
ATTR_ANYNESS = 1
ATTR_REQUEST = 2
ATTR_BYTES = 3
ATTR_REGION = 4

# MPI_GROUP.mode flags
GROUP_WORLD = 1
GROUP_SELF = 2

# REGION.rtype -> (paradigm, role); codes 0-3 are refined by the naming conventions
_RTYPE = {
    4: (Paradigm.MPI, Role.MPI_COLL_BARRIER),
    5: (Paradigm.MPI, Role.MPI_COLL_ONE2ALL),
    6: (Paradigm.MPI, Role.MPI_COLL_ALL2ONE),
    7: (Paradigm.MPI, Role.MPI_COLL_ALL2ALL),
    8: (Paradigm.MPI, Role.MPI_COLL_OTHER),
    11: (Paradigm.OPENMP, Role.OMP_PARALLEL),
    12: (Paradigm.OPENMP, Role.OMP_LOOP),
    13: (Paradigm.OPENMP, Role.OMP_SECTIONS),
    14: (Paradigm.OPENMP, Role.OMP_SECTION),
    15: (Paradigm.OPENMP, Role.OMP_WORKSHARE),
    16: (Paradigm.OPENMP, Role.OMP_SINGLE),
    17: (Paradigm.OPENMP, Role.OMP_MASTER),
    18: (Paradigm.OPENMP, Role.OMP_CRITICAL),
    19: (Paradigm.OPENMP, Role.OMP_ATOMIC),
    20: (Paradigm.OPENMP, Role.OMP_BARRIER),
    21: (Paradigm.OPENMP, Role.OMP_IMPLICIT_BARRIER),
    22: (Paradigm.OPENMP, Role.OMP_FLUSH),
    23: (Paradigm.OPENMP, Role.OMP_CRITICAL_BODY),
    24: (Paradigm.OPENMP, Role.OMP_SINGLE_BODY),
    25: (Paradigm.OPENMP, Role.OMP_ORDERED),
    26: (Paradigm.OPENMP, Role.OMP_ORDERED_BODY),
}

# event bodies after the optional location id: fixed bytes (time included) and
# how many counter values (metc x 8 bytes) the record carries
_EVENT_FIXED = {
    R.ENTER: (8 + 4, True),
    R.ENTER_CS: (8 + 4, True),
    R.EXIT: (8, True),
    R.MPI_SEND: (8 + 16, False),
    R.MPI_RECV: (8 + 12, False),
    R.MPI_COLLEXIT: (8 + 16, True),
    R.COLLEXIT: (8 + 16, True),
    R.OMP_FORK: (8, False),
    R.OMP_JOIN: (8, False),
    R.OMP_ALOCK: (8 + 4, False),
    R.OMP_RLOCK: (8 + 4, False),
    R.ALOCK: (8 + 4, False),
    R.RLOCK: (8 + 4, False),
    R.OMP_COLLEXIT: (8, True),
    R.MPI_SEND_COMPLETE: (8 + 4, False),
    R.MPI_RECV_REQUEST: (8 + 4, False),
    R.MPI_REQUEST_TESTED: (8 + 4, False),
    R.MPI_CANCELLED: (8 + 4, False),
    R.LOG_OFF: (8, True),
    R.LOG_ON: (8, True),
    R.ENTER_TRACING: (8, True),
    R.EXIT_TRACING: (8, True),
    R.MPI_WINEXIT: (8 + 9, True),
    R.MPI_WINCOLLEXIT: (8 + 4, True),
}
_RMA_CODES = set(range(112, 129)) - {117, 118}


# --------------------------------------------------------------------------
# Files and records
# --------------------------------------------------------------------------
def load_bytes(path: str) -> bytes:
    """The content of an EPILOG file, gunzipped if it is a gzip stream (as EPIK writes them)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise EpilogFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise EpilogFormatError(f"{path}: damaged gzip stream: {exc}") from None
    return data


@dataclass
class EpilogFile:
    """One EPILOG file's header and raw records."""

    path: str
    data: bytes
    version: int  # major*1000 + minor, e.g. 1009
    byte_order: int
    endian: str  # struct prefix

    @classmethod
    def open(cls, path: str) -> "EpilogFile":
        data = load_bytes(path)
        if len(data) < HEADER_SIZE or data[:7] != EPILOG_MAGIC:
            raise EpilogFormatError(f"{path}: not an EPILOG file (no 'EPILOG\\0' magic at byte 0)")
        major, minor, order = data[7], data[8], data[9]
        if major != 1:
            raise EpilogFormatError(f"{path}: EPILOG major version {major} at byte 7 is not supported (only 1.x)")
        if order not in (ELG_LITTLE_ENDIAN, ELG_BIG_ENDIAN):
            raise EpilogFormatError(f"{path}: byte order code {order} at byte 9 is neither 1 (little) nor 2 (big)")
        return cls(path, data, 1000 * major + minor, order, "<" if order == ELG_LITTLE_ENDIAN else ">")

    def records(self, start: int = HEADER_SIZE):
        """Yield (byte offset, type, body) for every record from byte offset ``start``."""
        data, pos, n = self.data, start, len(self.data)
        while pos < n:
            if pos + 2 > n:
                raise EpilogFormatError(f"{self.path}: truncated record header at byte offset {pos}")
            length, rtype = data[pos], data[pos + 1]
            end = pos + 2 + length
            if end > n:
                raise EpilogFormatError(
                    f"{self.path}: record of type {rtype} at byte offset {pos} claims {length} body bytes, "
                    f"only {n - pos - 2} left (truncated file)"
                )
            yield pos, rtype, data[pos + 2 : end]
            pos = end


class _RecordStream:
    """Records with one step of look-ahead, for continuation records."""

    def __init__(self, f: EpilogFile, start: int = HEADER_SIZE):
        self.f = f
        self._it = f.records(start)
        self._pushed = None

    def __iter__(self):
        return self

    def __next__(self):
        if self._pushed is not None:
            r, self._pushed = self._pushed, None
            return r
        return next(self._it)

    def continuation(self, rtype: int):
        """The next record if it has type rtype, else None (and the record stays)."""
        try:
            r = next(self)
        except StopIteration:
            return None
        if r[1] != rtype:
            self._pushed = r
            return None
        return r


def _bad(f: EpilogFile, off: int, rtype: int, what: str) -> EpilogFormatError:
    return EpilogFormatError(f"{f.path}: record type {rtype} at byte offset {off}: {what}")


# --------------------------------------------------------------------------
# Definitions
# --------------------------------------------------------------------------
@dataclass
class MapSection:
    """One rank's part of ``epik.map``."""

    rank: int
    idmaps: dict[int, np.ndarray] = field(default_factory=dict)  # def-record code -> local->global
    offsets: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class EpilogDefinitions:
    strings: dict[int, str] = field(default_factory=dict)
    machines: dict[int, str] = field(default_factory=dict)
    nodes: dict[int, tuple[int, str]] = field(default_factory=dict)  # nid -> (mid, name)
    processes: dict[int, str] = field(default_factory=dict)
    threads: dict[tuple[int, int], str] = field(default_factory=dict)  # (pid, tid) -> name
    locations: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)  # lid -> (mid, nid, pid, tid)
    files: dict[int, str] = field(default_factory=dict)
    regions: dict[int, tuple[str, int, int, int, str, int]] = field(default_factory=dict)
    metrics: list[tuple[int, str, str, int, int]] = field(default_factory=list)
    comm_bits: dict[int, tuple[int, tuple[int, ...]]] = field(default_factory=dict)  # cid -> (mode, ranks)
    groups: dict[int, tuple[int, tuple[int, ...]]] = field(default_factory=dict)  # gid -> (mode, ranks)
    comm_refs: dict[int, int] = field(default_factory=dict)  # cid -> gid
    callsites: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    offsets: list[tuple[float, float]] = field(default_factory=list)
    sections: dict[int, MapSection] = field(default_factory=dict)
    num_events: int | None = None
    # raw (name id, file id, descr id) are resolved to strings lazily; these keep the ids
    _region_ids: dict[int, tuple[int, int, int, int, int, int]] = field(default_factory=dict)

    def string(self, sid: int) -> str:
        if sid == ELG_NO_ID:
            return ""
        return self.strings.get(sid, f"<string {sid}>")


_DEF_CODES = set(range(1, 31))


def _read_string_chars(chunks: list[bytes]) -> str:
    raw = b"".join(chunks)
    nul = raw.find(b"\0")
    if nul >= 0:
        raw = raw[:nul]
    return raw.decode("utf-8", errors="replace")


def parse_definition(stream: _RecordStream, off: int, rtype: int, body: bytes, d: EpilogDefinitions,
                     section: MapSection | None) -> MapSection | None:
    """Apply one definition record (and its continuations) to ``d``; returns the current map section."""
    f, e = stream.f, stream.f.endian
    try:
        if rtype == R.STRING:
            sid, cntc = struct.unpack_from(e + "IB", body)
            chunks = [body[5:]]
            for _ in range(cntc):
                c = stream.continuation(R.STRING_CNT)
                if c is None:
                    raise _bad(f, off, rtype, f"string {sid} announces {cntc} continuation records, fewer follow")
                chunks.append(c[2])
            d.strings[sid] = _read_string_chars(chunks)
        elif rtype == R.STRING_CNT:
            raise _bad(f, off, rtype, "string continuation without a preceding STRING record")
        elif rtype == R.MACHINE:
            mid, _nodec, mnid = struct.unpack_from(e + "III", body)
            d.machines[mid] = mnid  # resolved to a string at the end
        elif rtype == R.NODE:
            nid, mid, _cpuc, nnid = struct.unpack_from(e + "IIII", body)  # v1.1+ adds a d8 clock rate
            d.nodes[nid] = (mid, nnid)
        elif rtype == R.PROCESS:
            pid, pnid = struct.unpack_from(e + "II", body)
            d.processes[pid] = pnid
        elif rtype == R.THREAD:
            tid, pid, tnid = struct.unpack_from(e + "III", body)
            d.threads[(pid, tid)] = tnid
        elif rtype == R.LOCATION:
            lid, mid, nid, pid, tid = struct.unpack_from(e + "IIIII", body)
            d.locations[lid] = (mid, nid, pid, tid)
        elif rtype == R.FILE:
            fid, fnid = struct.unpack_from(e + "II", body)
            d.files[fid] = fnid
        elif rtype == R.REGION:
            rid, rnid, fid, beg, end, rdid, rt = struct.unpack_from(e + "IIIIIIB", body)
            d._region_ids[rid] = (rnid, fid, beg, end, rdid, rt)
        elif rtype == R.METRIC:
            metid, metnid, metdid, dtype, mode = struct.unpack_from(e + "IIIBB", body)
            d.metrics.append((metid, metnid, metdid, dtype, mode))
        elif rtype == R.MPI_COMM:
            if f.version >= 1003:
                cid, mode, grpc = struct.unpack_from(e + "IBI", body)
                bits = bytearray(body[9:])
            else:
                cid, grpc = struct.unpack_from(e + "II", body)
                mode, bits = 0, bytearray(body[8:])
            while len(bits) < grpc:
                c = stream.continuation(R.MPI_COMM_CNT)
                if c is None:
                    raise _bad(f, off, rtype, f"communicator {cid}: {grpc} bit-vector bytes announced, "
                                              f"{len(bits)} present and no continuation follows")
                bits.extend(c[2])
            ranks = tuple(r for r in range(8 * grpc) if bits[r // 8] & (1 << (r % 8)))
            d.comm_bits[cid] = (mode, ranks)
        elif rtype == R.MPI_GROUP:
            gid, mode, grpc = struct.unpack_from(e + "IBI", body)
            vals = _collect_u4(stream, body[9:], grpc, R.MPI_GROUP_CNT, f, off, rtype, f"group {gid}")
            d.groups[gid] = (mode, tuple(int(v) for v in vals))
        elif rtype == R.MPI_COMM_REF:
            cid, gid = struct.unpack_from(e + "II", body)
            d.comm_refs[cid] = gid
        elif rtype == R.OFFSET:
            ltime, offset = struct.unpack_from(e + "dd", body)
            (section.offsets if section is not None else d.offsets).append((ltime, offset))
        elif rtype == R.NUM_EVENTS:
            (d.num_events,) = struct.unpack_from(e + "I", body)
        elif rtype == R.CALL_SITE:
            csid, fid, lno, erid, lrid = struct.unpack_from(e + "IIIII", body)
            d.callsites[csid] = (fid, lno, erid, lrid)
        elif rtype == R.MAP_SECTION:
            (rank,) = struct.unpack_from(e + "I", body)
            section = d.sections.setdefault(rank, MapSection(rank))
        elif rtype == R.IDMAP:
            etype, mode, count = struct.unpack_from(e + "BBI", body)
            n_vals = count if mode == 0 else 2 * count
            vals = _collect_u4(stream, body[6:], n_vals, R.IDMAP_CNT, f, off, rtype, f"id map of type {etype}")
            if mode == 0:
                table = np.asarray(vals, dtype=np.int64)
            else:
                pairs = np.asarray(vals, dtype=np.int64).reshape(-1, 2)
                size = int(pairs[:, 0].max()) + 1 if len(pairs) else 0
                table = np.arange(size, dtype=np.int64)
                table[pairs[:, 0]] = pairs[:, 1]
            if section is None:
                raise _bad(f, off, rtype, "id map outside a MAP_SECTION")
            section.idmaps[etype] = table
        elif rtype in (R.MPI_COMM_CNT, R.MPI_GROUP_CNT, R.IDMAP_CNT):
            raise _bad(f, off, rtype, "continuation record without the record it continues")
        # LAST_DEF, topologies, windows, call paths, statistics, MAP_OFFSET and
        # distributed comms carry nothing the analysis needs
    except struct.error:
        raise _bad(f, off, rtype, f"body of {len(body)} bytes is too short for this record type") from None
    return section


def _collect_u4(stream, head: bytes, n: int, cont_type: int, f, off, rtype, what) -> list[int]:
    e = f.endian
    raw = bytearray(head)
    while len(raw) < 4 * n:
        c = stream.continuation(cont_type)
        if c is None:
            raise _bad(f, off, rtype, f"{what}: {n} entries announced, {len(raw) // 4} present")
        raw.extend(c[2])
    return list(struct.unpack_from(e + f"{n}I", bytes(raw)))


def _finish_definitions(d: EpilogDefinitions) -> None:
    s = d.string
    d.machines = {k: s(v) for k, v in d.machines.items()}
    d.nodes = {k: (m, s(n)) for k, (m, n) in d.nodes.items()}
    d.processes = {k: s(v) for k, v in d.processes.items()}
    d.threads = {k: s(v) for k, v in d.threads.items()}
    d.files = {k: s(v) for k, v in d.files.items()}
    for rid, (rnid, fid, beg, end, rdid, rt) in d._region_ids.items():
        d.regions[rid] = (s(rnid), fid, beg, end, s(rdid), rt)
    d.metrics = [(mid, s(n), s(ds), dt, mo) for mid, n, ds, dt, mo in d.metrics]


def read_definitions(f: EpilogFile, stop_at_events: bool = True) -> tuple[EpilogDefinitions, int]:
    """Definitions at the start of ``f``; returns them and the offset of the first event record."""
    d = EpilogDefinitions()
    stream = _RecordStream(f)
    section = None
    first_event = len(f.data)
    for off, rtype, body in stream:
        if rtype in _DEF_CODES:
            section = parse_definition(stream, off, rtype, body, d, section)
        elif stop_at_events and (rtype >= 100 or rtype in (R.ATTR_UI1, R.ATTR_UI4)):
            first_event = off
            break
    _finish_definitions(d)
    return d, first_event


def classify_region(name: str, file: str, descr: str, rtype: int) -> tuple[int, int]:
    """(paradigm, role) by EPILOG type code first, then by the EPIK naming conventions."""
    if rtype in _RTYPE:
        return _RTYPE[rtype]
    if file == "EPIK" or descr == "EPIK":
        p, r = classify_name(name)
        return (Paradigm.MEASUREMENT, r if p == Paradigm.MEASUREMENT else Role.FUNCTION)
    if file == "MPI" or descr == "MPI" or name.upper().startswith("MPI_"):
        return Paradigm.MPI, mpi_role(name)
    p, r = classify_name(name)
    if p == Paradigm.OPENMP:
        return p, r
    if file == "OMP" or descr == "OMP":
        return Paradigm.OPENMP, Role.FUNCTION
    if rtype == 2:
        return Paradigm.USER, Role.LOOP
    if rtype == 3 or descr == "USR":
        return Paradigm.USER, Role.USER_REGION if rtype == 3 else Role.FUNCTION
    return Paradigm.USER, Role.FUNCTION


# --------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------
@dataclass
class _FileContext:
    """How ids in one event file translate to global ones."""

    f: EpilogFile
    merged: bool  # partner ranks are global location ids (merged traces)
    rank: int | None  # the process of a per-rank file
    default_location: int | None  # global location used when records carry no location id
    loc_map: np.ndarray | None = None
    region_map: np.ndarray | None = None
    comm_map: np.ndarray | None = None
    callsite_map: np.ndarray | None = None
    offsets: list[tuple[float, float]] = field(default_factory=list)


def _mapped(table: np.ndarray | None, local: int, what: str, ctx: _FileContext, off: int, rtype: int) -> int:
    if table is None or local == ELG_NO_ID:
        return local
    if local >= len(table):
        raise _bad(ctx.f, off, rtype, f"local {what} id {local} is not in this rank's id map (size {len(table)})")
    return int(table[local])


def _correct_time(offsets: list[tuple[float, float]]):
    """Clock correction of one process: linear interpolation between two OFFSET measurements."""
    if len(offsets) < 2:
        return None  # a single measurement is discarded, as elg_merge and PEARL do
    (t0, o0), (t1, o1) = offsets[0], offsets[-1]
    if t1 == t0:
        return lambda t: t + o0
    slope = (o1 - o0) / (t1 - t0)
    return lambda t: t + o0 + slope * (t - t0)


class _Importer:
    """Builds a TraceAssembly from EPILOG definitions and one or more event files."""

    def __init__(self, source: str, defs: EpilogDefinitions, version: int):
        self.defs = defs
        self.version = version
        self.asm = TraceAssembly(source=source, creator=f"EPILOG {version // 1000}.{version % 1000}",
                                 ticks_per_second=TICKS_PER_SECOND)
        self.metc = len(defs.metrics)
        self.metc_known = bool(defs.metrics)
        self.rows: dict[int, list[Row]] = defaultdict(list)  # global EPILOG lid -> rows
        self.region_role: dict[int, tuple[int, int]] = {}
        self.problems = self.asm.problems
        self._warned: set[str] = set()
        self._self_comms: dict[tuple[int, int], int] = {}
        self._locks: dict[tuple[int, int], int] = {}  # (rank, EPILOG lock id) -> our lock id
        self._setup_definitions()

    def warn(self, key: str, msg: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.problems.append(msg)

    # -- definitions --------------------------------------------------------
    def _setup_definitions(self) -> None:
        d, a = self.defs, self.asm
        for rid, (name, fid, beg, end, descr, rt) in d.regions.items():
            file = d.files.get(fid, "") if fid != ELG_NO_ID else ""
            par, role = classify_region(name, file, descr, rt)
            a.regions[rid] = ForeignRegion(name, file, beg, end, int(par), int(role))
            self.region_role[rid] = (par, role)
        a.machine_name = next(iter(d.machines.values()), "machine")
        for pid, name in d.processes.items():
            a.process_names[pid] = name
        for lid, (_mid, nid, pid, tid) in d.locations.items():
            a.node_of_process.setdefault(pid, d.nodes.get(nid, (0, f"node{nid}"))[1])
            a.process_names.setdefault(pid, f"rank {pid}")
        # our comms: EPILOG >= 1.8 defines groups + comm refs, older files bit vectors
        for gid, (mode, ranks) in d.groups.items():
            if mode & GROUP_WORLD:
                ranks = tuple(sorted(d.processes) or sorted({p for (_m, _n, p, _t) in d.locations.values()}))
            a.groups[gid] = ranks
        next_gid = max(a.groups, default=-1) + 1
        for cid, gid in d.comm_refs.items():
            mode = d.groups.get(gid, (0, ()))[0]
            name = "MPI_COMM_WORLD" if mode & GROUP_WORLD else ("MPI_COMM_SELF" if mode & GROUP_SELF else "")
            a.comms[cid] = (gid, name, NO_ID)
        for cid, (_mode, ranks) in d.comm_bits.items():
            if cid in a.comms:
                continue
            a.groups[next_gid] = ranks
            a.comms[cid] = (next_gid, "", NO_ID)
            next_gid += 1
        for i, (_mid, name, descr, dtype, mode) in enumerate(d.metrics):
            a.metrics[i] = (name, descr, int(MetricDtype.DOUBLE if dtype == 1 else MetricDtype.UINT64),
                            int(MetricMode.ACCUMULATED if mode == 0 else MetricMode.ABSOLUTE))

    def comm_ranks(self, cid: int, rank: int | None) -> tuple[int, ...] | None:
        """Global ranks of a global communicator in comm-rank order (None if unknown)."""
        d = self.defs
        if cid in d.comm_refs:
            mode, ranks = d.groups.get(d.comm_refs[cid], (0, ()))
            if mode & GROUP_SELF:
                return (rank,) if rank is not None else None
            return self.asm.groups.get(d.comm_refs[cid], ranks)
        if cid in d.comm_bits:
            return d.comm_bits[cid][1]
        return None

    def our_comm(self, cid: int, rank: int | None) -> int:
        """Our communicator id; MPI_COMM_SELF becomes one communicator per process, as elg_merge does."""
        d = self.defs
        if cid in d.comm_refs and d.groups.get(d.comm_refs[cid], (0,))[0] & GROUP_SELF and rank is not None:
            key = (cid, rank)
            if key not in self._self_comms:
                a = self.asm
                gid = max(a.groups, default=-1) + 1
                a.groups[gid] = (rank,)
                new = max(max(a.comms, default=-1) + 1, max(d.comm_refs, default=-1) + 1,
                          max(d.comm_bits, default=-1) + 1)
                a.comms[new] = (gid, "MPI_COMM_SELF", NO_ID)
                self._self_comms[key] = new
            return self._self_comms[key]
        return cid

    def location_rank(self, lid: int) -> int:
        loc = self.defs.locations.get(lid)
        if loc is None:
            return lid
        return loc[2]

    # -- events of one file -------------------------------------------------
    def read_events(self, ctx: _FileContext, start: int) -> None:
        f, e = ctx.f, ctx.f.endian
        if ctx.offsets:
            corr = _correct_time(ctx.offsets)
            if corr is None:
                self.warn(f"one-offset-{ctx.rank}", f"{f.path}: only one clock-offset measurement; not applied")
        else:
            corr = None
        stack: dict[int, list[int]] = defaultdict(list)
        pending_attr: dict[int | None, dict[int, int]] = {}
        metc, metc_known = self.metc, self.metc_known
        for off, rtype, body in _RecordStream(f, start):
            if rtype in _DEF_CODES:
                continue  # definitions inside an event file are covered by the global ones
            L = len(body)
            if rtype in (R.ATTR_UI1, R.ATTR_UI4):
                base = 2 if rtype == R.ATTR_UI1 else 5
                if L == base + 4:
                    lid = struct.unpack_from(e + "I", body)[0]
                    body_at = 4
                elif L == base:
                    lid, body_at = None, 0
                else:
                    raise _bad(f, off, rtype, f"attribute record of {L} bytes (expected {base} or {base + 4})")
                atype = body[body_at]
                val = body[body_at + 1] if rtype == R.ATTR_UI1 else struct.unpack_from(e + "I", body, body_at + 1)[0]
                if lid is not None:
                    lid = _mapped(ctx.loc_map, lid, "location", ctx, off, rtype)
                pending_attr.setdefault(lid, {})[atype] = val
                continue
            if rtype < 100:
                self.warn(f"unknown-{rtype}", f"{f.path}: unknown record type {rtype} at byte offset {off} skipped")
                continue
            if rtype in _RMA_CODES:
                self.warn("rma", f"{f.path}: one-sided communication (RMA) records are not analysed; "
                                 f"first at byte offset {off}")
                continue
            spec = _EVENT_FIXED.get(rtype)
            if spec is None:
                self.warn(f"unknown-{rtype}", f"{f.path}: unknown event type {rtype} at byte offset {off} skipped")
                continue
            fixed, has_metrics = spec
            if has_metrics and not metc_known and rtype in (R.ENTER, R.EXIT, R.OMP_COLLEXIT):
                # no METRIC definitions: infer the counter count from the first such record
                rest = L - fixed
                metc = (rest - (rest % 8)) // 8 if rest % 8 in (0, 4) else 0
                metc_known = True
                self.metc = metc
            expect = fixed + (8 * metc if has_metrics else 0)
            if L == expect + 4:
                lid = _mapped(ctx.loc_map, struct.unpack_from(e + "I", body)[0], "location", ctx, off, rtype)
                p = 4
            elif L == expect:
                lid = ctx.default_location
                if lid is None:
                    raise _bad(f, off, rtype, "event without a location id in a file that defines several "
                                              "locations")
                p = 0
            else:
                raise _bad(f, off, rtype, f"body of {L} bytes; expected {expect} (or {expect + 4} with a "
                                          f"location id) for {metc} counters")
            (t,) = struct.unpack_from(e + "d", body, p)
            if corr is not None:
                t = corr(t)
            p += 8
            attrs = pending_attr.pop(lid, None) or pending_attr.pop(None, None) or {}
            self._event(ctx, off, rtype, body, p, t, lid, stack[lid], attrs, metc)

    def _event(self, ctx, off, rtype, body, p, t, lid, stack, attrs, metc) -> None:
        f, e = ctx.f, ctx.f.endian
        rows = self.rows[lid]
        rank = self.location_rank(lid)
        metv = struct.unpack_from(e + f"{metc}Q", body, p + (4 if rtype in (R.ENTER, R.ENTER_CS) else 0)) \
            if metc else ()

        def counters():
            for i, v in enumerate(metv):
                rows.append(Row([t, EventType.COUNTER, 0, i, 0, 0, v, 0]))

        if rtype in (R.ENTER, R.ENTER_CS):
            (x,) = struct.unpack_from(e + "I", body, p)
            cs = NO_ID
            if rtype == R.ENTER_CS:
                cs = _mapped(ctx.callsite_map, x, "call site", ctx, off, rtype)
                site = self.defs.callsites.get(cs)
                if site is None:
                    raise _bad(f, off, rtype, f"call site {cs} is not defined")
                rid = site[2]
            else:
                rid = _mapped(ctx.region_map, x, "region", ctx, off, rtype)
            if rid not in self.asm.regions:
                raise _bad(f, off, rtype, f"region {rid} is not defined")
            stack.append(rid)
            rows.append(Row([t, EventType.ENTER, 0, rid, cs, NO_ID, NO_ID, 0]))
            counters()
        elif rtype in (R.EXIT, R.OMP_COLLEXIT, R.MPI_COLLEXIT, R.COLLEXIT, R.MPI_WINEXIT, R.MPI_WINCOLLEXIT):
            if not stack:
                raise _bad(f, off, rtype, f"exit at time {t!r} with no open region on location {lid}")
            rid = stack.pop()
            if ATTR_REGION in attrs and attrs[ATTR_REGION] != rid:
                self.warn("exit-region", f"{f.path}: byte offset {off}: exit names region "
                                         f"{attrs[ATTR_REGION]} but region {rid} is open")
            if rtype == R.OMP_COLLEXIT:
                rows.append(Row([t, EventType.OMP_COLLEXIT, 0, rid, NO_ID, 0, 0, 0]))
            elif rtype in (R.MPI_COLLEXIT, R.COLLEXIT):
                root, cid, sent, recvd = struct.unpack_from(e + "IIII", body, p + 8 * metc)
                cid = _mapped(ctx.comm_map, cid, "communicator", ctx, off, rtype)
                if root != ELG_NO_ID:
                    root = self.partner(ctx, root, cid, rank, off, rtype)
                rows.append(Row([t, EventType.MPI_COLLEXIT, 0, rid, self.our_comm(cid, rank), root, sent, recvd]))
            else:
                rows.append(Row([t, EventType.EXIT, 0, rid, 0, 0, 0, 0]))
            counters()
        elif rtype == R.MPI_SEND:
            dest, cid, tag, sent = struct.unpack_from(e + "IIII", body, p)
            cid = _mapped(ctx.comm_map, cid, "communicator", ctx, off, rtype)
            dest = self.partner(ctx, dest, cid, rank, off, rtype)
            req = attrs.get(ATTR_REQUEST, 0)
            rows.append(Row([t, EventType.MPI_SEND, 0, dest, self.our_comm(cid, rank), tag, sent, req]))
        elif rtype == R.MPI_RECV:
            src, cid, tag = struct.unpack_from(e + "III", body, p)
            cid = _mapped(ctx.comm_map, cid, "communicator", ctx, off, rtype)
            src = self.partner(ctx, src, cid, rank, off, rtype)
            flags = 0
            anyness = attrs.get(ATTR_ANYNESS, 0)
            if anyness & 1:
                flags |= RecvFlag.ANY_SOURCE
            if anyness & 2:
                flags |= RecvFlag.ANY_TAG
            nbytes = attrs.get(ATTR_BYTES, -1)  # -1: filled from the matching send later
            req = attrs.get(ATTR_REQUEST, 0)
            rows.append(Row([t, EventType.MPI_RECV, int(flags), src, self.our_comm(cid, rank), tag, nbytes, req]))
        elif rtype == R.MPI_SEND_COMPLETE:
            (req,) = struct.unpack_from(e + "I", body, p)
            rows.append(Row([t, EventType.MPI_SEND_COMPLETE, 0, 0, 0, 0, 0, req]))
        elif rtype == R.MPI_RECV_REQUEST:
            (req,) = struct.unpack_from(e + "I", body, p)
            # EPIK does not record the posted source/tag of a receive request
            rows.append(Row([t, EventType.MPI_RECV_REQUEST, 0, ANY, NO_ID, ANY, 0, req]))
        elif rtype == R.MPI_CANCELLED:
            (req,) = struct.unpack_from(e + "I", body, p)
            rows.append(Row([t, EventType.MPI_REQUEST_CANCELLED, 0, 0, 0, 0, 0, req]))
        elif rtype == R.MPI_REQUEST_TESTED:
            pass  # an unsuccessful test changes nothing in the analysis
        elif rtype in (R.OMP_FORK, R.OMP_JOIN):
            rows.append(Row([t, EventType.OMP_FORK if rtype == R.OMP_FORK else EventType.OMP_JOIN,
                              0, NO_ID, 0, 0, 0, 0]))
        elif rtype in (R.OMP_ALOCK, R.OMP_RLOCK, R.ALOCK, R.RLOCK):
            (lk,) = struct.unpack_from(e + "I", body, p)
            acquire = rtype in (R.OMP_ALOCK, R.ALOCK)
            gl = self.lock_id(rank, lk, stack)
            rows.append(Row([t, EventType.OMP_ACQUIRE_LOCK if acquire else EventType.OMP_RELEASE_LOCK,
                              0, gl, 0, 0, 0, 0]))
        elif rtype in (R.LOG_OFF, R.ENTER_TRACING):
            name = "PAUSING" if rtype == R.LOG_OFF else "TRACING"
            rid = self.asm.region_id(name, file="EPIK")
            stack.append(rid)
            rows.append(Row([t, EventType.ENTER, 0, rid, NO_ID, NO_ID, NO_ID, 0]))
            counters()
        elif rtype in (R.LOG_ON, R.EXIT_TRACING):
            rid = stack.pop() if stack else self.asm.region_id("TRACING", file="EPIK")
            rows.append(Row([t, EventType.EXIT, 0, rid, 0, 0, 0, 0]))
            counters()

    def partner(self, ctx: _FileContext, x: int, cid: int, rank, off, rtype) -> int:
        """Global rank of a partner id as stored in this file."""
        if ctx.merged:
            return self.location_rank(x)
        if self.version < 1008:
            return x  # before 1.8 per-rank traces stored global ranks
        ranks = self.comm_ranks(cid, rank)
        if ranks is None:
            self.warn(f"comm-{cid}", f"{ctx.f.path}: communicator {cid} is not defined; its ranks are taken "
                                     f"as global ranks (first at byte offset {off})")
            return x
        if x >= len(ranks):
            raise _bad(ctx.f, off, rtype, f"rank {x} is outside communicator {cid} of size {len(ranks)}")
        return ranks[x]

    def lock_id(self, rank: int, lk: int, stack: list[int]) -> int:
        key = (rank, lk)
        if key not in self._locks:
            gl = len(self._locks)
            self._locks[key] = gl
            kind, name = LockKind.OMP_LOCK, f"lock {lk}"
            if stack:
                top = self.asm.regions[stack[-1]]
                if top.role == Role.OMP_CRITICAL:
                    kind, name = LockKind.OMP_CRITICAL, top.name
                elif top.role == Role.OMP_LOCK_API and "nest" in top.name.lower():
                    kind = LockKind.OMP_NEST_LOCK
            self.asm.locks[gl] = (int(kind), f"{name} (rank {rank})" if kind != LockKind.OMP_CRITICAL else name)
        return self._locks[key]

    # -- whole-trace resolution ------------------------------------------------
    def finish(self) -> TraceAssembly:
        a, d = self.asm, self.defs
        # our locations: dense ids ordered by (rank, thread)
        lids = sorted(self.rows, key=lambda lid: (self.location_rank(lid), d.locations.get(lid, (0, 0, 0, lid))[3]))
        ours = {lid: i for i, lid in enumerate(lids)}
        for lid, i in ours.items():
            _m, _n, pid, tid = d.locations.get(lid, (0, 0, lid, 0))
            name = d.threads.get((pid, tid), "") or f"rank {pid} thread {tid}"
            a.locations[i] = ForeignLocation(pid, tid, name)
            a.process_names.setdefault(pid, f"rank {pid}")
        # locations defined but without events still belong to the system tree
        for lid, (_m, _n, pid, tid) in sorted(d.locations.items(), key=lambda kv: (kv[1][2], kv[1][3])):
            if lid not in ours:
                i = len(ours)
                ours[lid] = i
                a.locations[i] = ForeignLocation(pid, tid, d.threads.get((pid, tid), "") or f"rank {pid} thread {tid}")
                self.rows.setdefault(lid, [])
        rank_thread = {lid: (d.locations.get(lid, (0, 0, lid, 0))[2], d.locations.get(lid, (0, 0, lid, 0))[3])
                       for lid in self.rows}
        rs = EventRows(self.rows, rank_thread, a)
        rs.resolve_teams()
        rs.resolve_lock_orders()
        rs.resolve_receive_bytes()
        t_min = min((r[0][0] for r in self.rows.values() if r), default=0.0)
        a.attributes["epilog.version"] = f"{self.version // 1000}.{self.version % 1000}"
        a.attributes["epilog.time_origin_seconds"] = repr(t_min)
        for lid, ev in rs.arrays(t_min, TICKS_PER_SECOND).items():
            a.events[ours[lid]] = ev
        return a

# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------
def is_epik_archive(path: str) -> bool:
    return os.path.isdir(path) and (os.path.isfile(os.path.join(path, "epik.esd"))
                                    or os.path.isfile(os.path.join(path, "epik.elg")))


def read_merged(path: str) -> TraceAssembly:
    """A single EPILOG file: a merged trace (global location ids) or a one-process trace."""
    f = EpilogFile.open(str(path))
    defs, first = read_definitions(f)
    imp = _Importer(str(path), defs, f.version)
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
    ctx = _FileContext(f, merged=True, rank=None, default_location=default, offsets=offsets)
    imp.read_events(ctx, first)
    return imp.finish()


def read_archive(path: str) -> TraceAssembly:
    """An EPIK experiment archive: ``epik.esd`` + ``epik.map`` + ``ELG/NNNNN``."""
    path = str(path)
    esd = os.path.join(path, "epik.esd")
    elg_dir = os.path.join(path, "ELG")
    if not os.path.isfile(esd):
        if os.path.isfile(os.path.join(path, "epik.elg")):
            return read_merged(os.path.join(path, "epik.elg"))
        raise EpilogFormatError(f"{path}: not an EPIK archive (no epik.esd)")
    if not os.path.isdir(elg_dir):
        if os.path.isfile(os.path.join(path, "epik.elg")):
            return read_merged(os.path.join(path, "epik.elg"))
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
            imp = _Importer(path, defs, f.version)
            if not os.path.isfile(map_path):
                imp.warn("nomap", f"{path}: no epik.map; local ids are taken as global ids")
        sec = defs.sections.get(rank)
        loc_map = sec.idmaps.get(R.LOCATION) if sec else None
        if loc_map is not None and len(loc_map):
            default = int(loc_map[0])
        else:
            own = sorted((t, lid) for lid, (_m, _n, p, t) in defs.locations.items() if p == rank)
            default = own[0][1] if own else None
        _, first = read_definitions(f)
        ctx = _FileContext(
            f, merged=False, rank=rank, default_location=default, loc_map=loc_map,
            region_map=sec.idmaps.get(R.REGION) if sec else None,
            comm_map=sec.idmaps.get(R.MPI_COMM) if sec else None,
            callsite_map=sec.idmaps.get(R.CALL_SITE) if sec else None,
            offsets=sec.offsets if sec else [],
        )
        imp.read_events(ctx, first)
    return imp.finish()


def read(path: str | os.PathLike) -> TraceAssembly:
    """An EPILOG trace (merged file) or EPIK archive (directory) as a TraceAssembly."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return read_archive(path)
    return read_merged(path)


def open_epilog(path: str | os.PathLike):
    """An EPILOG trace or EPIK archive as a :class:`tracefmt` Trace."""
    return read(path).to_trace()
