"""EPILOG 1.x files as records: header, byte order, record codes and the definition records.

The first half of the EPILOG reader (:mod:`tracefmt.epilog` is the second:
events and the entry points): it opens a file (gunzipped if EPIK compressed
it), iterates its records with one step of look-ahead for continuation
records, and parses the definition records of EPILOG 1.0-1.9 (strings,
system tree, regions, metrics, communicators and groups, call sites, MAP
sections with id maps and clock offsets) into :class:`EpilogDefinitions`.
Every error names the file, the record type and its byte offset.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from .foreign import classify_name, mpi_role
from .layout import Paradigm, Role

from . import names
from .errors import TraceFormatError
from .inflate import InflateError, gzip_cap, inflate

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
    MPI_PUT_1TS = 112
    MPI_PUT_1TE = 113
    MPI_GET_1TS = 114
    MPI_GET_1TE = 115
    MPI_GET_1TO = 116
    MPI_WINEXIT = 117
    MPI_WINCOLLEXIT = 118
    MPI_WIN_LOCK = 119
    MPI_WIN_UNLOCK = 120
    MPI_PUT_1TE_REMOTE = 121
    MPI_GET_1TS_REMOTE = 122
    PUT_1TS = 123
    PUT_1TE = 124
    GET_1TS = 125
    GET_1TE = 126
    PUT_1TE_REMOTE = 127
    GET_1TS_REMOTE = 128
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


#: record code -> its name in elg_defs.h (for messages and notes)
RECORD_NAMES = {v: k for k, v in vars(R).items() if k.isupper()}

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
EVENT_FIXED = {
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
RMA_CODES = set(range(112, 129)) - {117, 118}


# --------------------------------------------------------------------------
# Files and records
# --------------------------------------------------------------------------
#: an EPILOG stream inflates to at most GZIP_RATIO times its gzip size, plus GZIP_FLOOR: every event
#: record carries an 8-byte time that differs from the last one (real EPIK files deflate 3-6 times);
#: definitions compress better, but a definitions file of more than a few MiB is not one a run writes
GZIP_RATIO = 16
GZIP_FLOOR = 4 << 20


def load_bytes(path: str) -> bytes:
    """The content of an EPILOG file, gunzipped if it is a gzip stream (as EPIK writes them)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise EpilogFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if data[:2] == GZIP_MAGIC:
        try:
            data = inflate(data, gzip_cap(len(data), GZIP_RATIO, GZIP_FLOOR))
        except InflateError as exc:
            raise EpilogFormatError(f"{path}: {'gzip stream' if exc.bomb else 'damaged gzip stream'}: {exc}") from None
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


class RecordStream:
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


def bad_record(f: EpilogFile, off: int, rtype: int, what: str) -> EpilogFormatError:
    return EpilogFormatError(f"{f.path}: record type {rtype} at byte offset {off}: {what}")


# --------------------------------------------------------------------------
# Definitions
# --------------------------------------------------------------------------
class SparseIdMap:
    """A sparse id map (IDMAP mode 1: local, global pairs) indexed like the dense table it stands for.

    Local ids listed map to their global ids; unlisted ones below the largest
    listed id map to themselves.  Only the pairs are stored, so a local id of
    4e9 costs one entry, not a table of 4e9.
    """

    def __init__(self, flat: list[int]):
        self._map = dict(zip(flat[0::2], flat[1::2]))
        self._len = max(self._map) + 1 if self._map else 0

    def __len__(self) -> int:
        return self._len

    def keys(self) -> list[int]:
        """The local ids listed (the others below the largest map to themselves)."""
        return sorted(self._map)

    def __getitem__(self, local: int) -> int:
        local = int(local)
        if not 0 <= local < self._len:
            raise IndexError(local)
        return self._map.get(local, local)


@dataclass
class MapSection:
    """One rank's part of ``epik.map``."""

    rank: int
    offset: int = -1  # byte offset of its MAP_SECTION record in epik.map
    idmaps: dict[int, np.ndarray | SparseIdMap] = field(default_factory=dict)  # def-record code -> local->global
    offsets: list[tuple[float, float]] = field(default_factory=list)
    event_types: tuple[int, ...] = ()  # EVENT_TYPES / EVENT_COUNTS: the rank's event statistics
    event_counts: tuple[int, ...] = ()


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
    groups: dict[int, tuple[int, tuple[int, ...] | range]] = field(default_factory=dict)  # gid -> (mode, ranks)
    comm_refs: dict[int, int] = field(default_factory=dict)  # cid -> gid
    callsites: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    offsets: list[tuple[float, float]] = field(default_factory=list)
    sections: dict[int, MapSection] = field(default_factory=dict)
    num_events: int | None = None
    callpaths: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # cpid -> (rid, parent, order)
    topologies: dict[int, tuple] = field(default_factory=dict)  # topid -> (cid, dims, periodic, name, dim names)
    coords: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)  # (topid, lid) -> coordinates
    windows: dict[int, int] = field(default_factory=dict)  # RMA window -> comm
    comm_dist: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)  # cid -> (root, lcid, lrank, size)
    map_offsets: dict[int, int] = field(default_factory=dict)  # rank -> byte offset of its epik.map section
    map_offset_problem: str = ""  # set by the archive reader when they miss the sections (a note)
    # raw (name id, file id, descr id) are resolved to strings lazily; these keep the ids
    _region_ids: dict[int, tuple[int, int, int, int, int, int]] = field(default_factory=dict)

    def string(self, sid: int) -> str:
        if sid == ELG_NO_ID:
            return ""
        return self.strings.get(sid, f"<string {sid}>")


DEF_CODES = set(range(1, 31))


def _read_string_chars(chunks: list[bytes]) -> str:
    raw = b"".join(chunks)
    nul = raw.find(b"\0")
    if nul >= 0:
        raw = raw[:nul]
    return names.decode(raw)  # lossless: bytes that are not UTF-8 survive (tracefmt.names)


def parse_definition(stream: RecordStream, off: int, rtype: int, body: bytes, d: EpilogDefinitions,
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
                    raise bad_record(f, off, rtype, f"string {sid} announces {cntc} continuation records, fewer follow")
                chunks.append(c[2])
            d.strings[sid] = _read_string_chars(chunks)
        elif rtype == R.STRING_CNT:
            raise bad_record(f, off, rtype, "string continuation without a preceding STRING record")
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
            metid, metnid, metdid, dtype, mode = struct.unpack_from(e + "IIIBB", body)  # + interval (unused)
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
                    raise bad_record(f, off, rtype, f"communicator {cid}: {grpc} bit-vector bytes announced, "
                                              f"{len(bits)} present and no continuation follows")
                bits.extend(c[2])
            ranks = tuple(r for r in range(8 * grpc) if bits[r // 8] & (1 << (r % 8)))
            d.comm_bits[cid] = (mode, ranks)
        elif rtype == R.MPI_GROUP:
            gid, mode, grpc = struct.unpack_from(e + "IBI", body)
            if mode & GROUP_WORLD:  # WORLD: the identity over grpc ranks, no list written (nor read by EPIK)
                if grpc > 1 << 24:
                    raise bad_record(f, off, rtype, f"group {gid}: WORLD of {grpc} ranks")
                d.groups[gid] = (mode, range(grpc))  # lazy: the importer checks the size first
            else:
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
            section = d.sections.setdefault(rank, MapSection(rank, off))
        elif rtype == R.IDMAP:
            etype, mode, count = struct.unpack_from(e + "BBI", body)
            n_vals = count if mode == 0 else 2 * count
            vals = _collect_u4(stream, body[6:], n_vals, R.IDMAP_CNT, f, off, rtype, f"id map of type {etype}")
            if mode == 0:
                table = np.asarray(vals, dtype=np.int64)
            else:
                table = SparseIdMap(vals)
            if section is None:
                raise bad_record(f, off, rtype, "id map outside a MAP_SECTION")
            section.idmaps[etype] = table
        elif rtype == R.CALL_PATH:
            cpid, rid, ppid, order = struct.unpack_from(e + "IIIQ", body)
            d.callpaths[cpid] = (rid, ppid, order)
        elif rtype == R.CART_TOPOLOGY:
            topid, cid, ndims = struct.unpack_from(e + "IIB", body)
            dims = struct.unpack_from(e + f"{ndims}I", body, 9)
            periodic = tuple(bool(x) for x in body[9 + 4 * ndims : 9 + 5 * ndims])
            if len(periodic) != ndims:
                raise struct.error
            name, dim_names = ELG_NO_ID, (ELG_NO_ID,) * ndims
            if f.version >= 1009:  # a name and dimension names since EPILOG 1.9
                name, *dim_names = struct.unpack_from(e + f"I{ndims}I", body, 9 + 5 * ndims)
            d.topologies[topid] = (cid, tuple(dims), periodic, name, tuple(dim_names))
        elif rtype == R.CART_COORDS:
            topid, lid, ndims = struct.unpack_from(e + "IIB", body)
            d.coords[(topid, lid)] = struct.unpack_from(e + f"{ndims}I", body, 9)
        elif rtype == R.MPI_WIN:
            wid, cid = struct.unpack_from(e + "II", body)
            d.windows[wid] = cid
        elif rtype == R.MPI_COMM_DIST:
            cid, root, lcid, lrank, size = struct.unpack_from(e + "IIIII", body)
            d.comm_dist[cid] = (root, lcid, lrank, size)
        elif rtype == R.MAP_OFFSET:
            rank, moff = struct.unpack_from(e + "II", body)
            d.map_offsets[rank] = moff
        elif rtype in (R.EVENT_TYPES, R.EVENT_COUNTS):
            (ntypes,) = struct.unpack_from(e + "I", body)
            vals = struct.unpack_from(e + (f"{ntypes}B" if rtype == R.EVENT_TYPES else f"{ntypes}I"), body, 4)
            if section is not None:
                if rtype == R.EVENT_TYPES:
                    section.event_types = vals
                else:
                    section.event_counts = vals
        elif rtype in (R.MPI_COMM_CNT, R.MPI_GROUP_CNT, R.IDMAP_CNT):
            raise bad_record(f, off, rtype, "continuation record without the record it continues")
        # LAST_DEF marks the end of a merged trace's definitions; nothing to keep
    except struct.error:
        raise bad_record(f, off, rtype, f"body of {len(body)} bytes is too short for this record type") from None
    return section


def _collect_u4(stream, head: bytes, n: int, cont_type: int, f, off, rtype, what) -> list[int]:
    e = f.endian
    if 4 * n > len(f.data) - off:  # checked before anything is collected: the file cannot hold them
        raise bad_record(f, off, rtype, f"{what}: {n} entries announced, the file has room for "
                                        f"{(len(f.data) - off) // 4}")
    raw = bytearray(head)
    while len(raw) < 4 * n:
        c = stream.continuation(cont_type)
        if c is None:
            raise bad_record(f, off, rtype, f"{what}: {n} entries announced, {len(raw) // 4} present")
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
    stream = RecordStream(f)
    section = None
    first_event = len(f.data)
    for off, rtype, body in stream:
        if rtype in DEF_CODES:
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


