"""In-memory definitions of a trace and their encoding as definition records.

Names are held as Python strings; references between definitions (a
region's file, a node's machine, a comm's group) are ids.  String ids are an
encoding detail: the writer interns every name, the reader resolves them.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

from . import layout, names
from .layout import NO_ID, DefType, LockKind, MetricDtype, MetricMode, Paradigm, Role


#: tick rates a reader accepts (ticks per second): slower than 1 Hz or faster than 1 fs is no clock
TICK_RATE_LIMITS = (1.0, 1e15)
#: the largest clock offset a reader accepts (seconds, about 31 years); larger ones are damage
OFFSET_LIMIT = 1e9
#: the largest change of offset per second of local time a reader accepts: beyond it corrected time
#: would run backwards (slope below -1) or at more than twice the speed
OFFSET_SLOPE_LIMIT = 1.0


def _enum_or_int(enum_cls, value: int):
    """Known codes become enum members; unknown ones (a newer minor version) stay ints."""
    try:
        return enum_cls(value)
    except ValueError:
        return int(value)


@dataclass(frozen=True)
class Region:
    id: int
    name: str
    file: int = NO_ID  # id in Definitions.files
    begin_line: int = NO_ID
    end_line: int = NO_ID
    paradigm: Paradigm = Paradigm.USER
    role: Role = Role.FUNCTION


@dataclass(frozen=True)
class Callsite:
    id: int
    file: int
    line: int
    region_entered: int


@dataclass(frozen=True)
class Machine:
    id: int
    name: str


@dataclass(frozen=True)
class Node:
    id: int
    machine: int
    name: str


@dataclass(frozen=True)
class Process:
    id: int  # MPI rank in MPI_COMM_WORLD (0 for non-MPI programs)
    node: int
    name: str


@dataclass(frozen=True)
class Location:
    id: int  # global location id, dense 0..L-1
    process: int
    thread: int  # thread number within the process
    name: str


@dataclass(frozen=True)
class Comm:
    id: int
    group: int
    name: str
    parent: int = NO_ID
    ranks: tuple[int, ...] = ()  # the group's global ranks, filled in by the reader


@dataclass(frozen=True)
class Window:
    """An MPI one-sided communication window (format 2.3), created collectively over ``comm``."""

    id: int
    comm: int
    name: str = ""


@dataclass(frozen=True)
class Lock:
    id: int
    kind: LockKind
    name: str


@dataclass(frozen=True)
class Clock:
    process: int
    ticks_per_second: float = 1e9
    origin: int = 0  # the tick that is local time 0


@dataclass(frozen=True)
class Offset:
    local_time: float  # seconds on the process's local clock
    offset: float  # seconds to add there to get global time


@dataclass(frozen=True)
class Metric:
    id: int
    name: str
    unit: str = ""
    dtype: MetricDtype = MetricDtype.UINT64
    mode: MetricMode = MetricMode.ACCUMULATED


@dataclass
class Definitions:
    """Every definition of a trace, each kind a dict keyed by id."""

    strings: dict[int, str] = field(default_factory=dict)
    files: dict[int, str] = field(default_factory=dict)
    regions: dict[int, Region] = field(default_factory=dict)
    callsites: dict[int, Callsite] = field(default_factory=dict)
    machines: dict[int, Machine] = field(default_factory=dict)
    nodes: dict[int, Node] = field(default_factory=dict)
    processes: dict[int, Process] = field(default_factory=dict)
    locations: dict[int, Location] = field(default_factory=dict)
    groups: dict[int, tuple[int, ...]] = field(default_factory=dict)
    comms: dict[int, Comm] = field(default_factory=dict)
    locks: dict[int, Lock] = field(default_factory=dict)
    windows: dict[int, Window] = field(default_factory=dict)  # MPI RMA windows (2.3)
    clocks: dict[int, Clock] = field(default_factory=dict)
    offsets: dict[int, list[Offset]] = field(default_factory=dict)
    metrics: dict[int, Metric] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)
    #: values the reader could not compute with and replaced or dropped (a tick rate of 1e-300, a NaN clock
    #: offset), one line each; the events are all there, so these are not ``trace.problems`` (damage) but
    #: what ``tracefmt.plausible`` reports first
    repairs: list[str] = field(default_factory=list)

    def region_id(self, name: str) -> int:
        """Id of the first region with this name (KeyError if none)."""
        for r in self.regions.values():
            if r.name == name:
                return r.id
        raise KeyError(f"no region named {name!r}")

    def location_id(self, rank: int, thread: int = 0) -> int:
        """Global location id of thread `thread` of process `rank` (KeyError if none)."""
        for loc in self.locations.values():
            if loc.process == rank and loc.thread == thread:
                return loc.id
        raise KeyError(f"no location for rank {rank} thread {thread}")

    def clock(self, process: int) -> Clock:
        """The process's clock; the format's default (1e9 ticks/s, origin 0) if undefined."""
        return self.clocks.get(process) or Clock(process)


# --------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------


def _prefix(byte_order: int) -> str:
    return "<" if byte_order == layout.BYTE_ORDER_LITTLE else ">"


class StringTable:
    """Interns strings to ids for a writer; ids stay stable across blocks."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.used: set[int] = set()
        self.pending: list[tuple[int, str]] = []  # defined but not yet written
        self._next = 0

    def seed(self, strings: dict[int, str]) -> None:
        """Keep the ids a trace already uses (round trips keep string ids)."""
        for sid, s in sorted(strings.items()):
            if s not in self.ids and sid not in self.used:
                self.ids[s] = sid
                self.used.add(sid)
                self.pending.append((sid, s))

    def __call__(self, s: str) -> int:
        sid = self.ids.get(s)
        if sid is None:
            while self._next in self.used:
                self._next += 1
            sid = self._next
            self.ids[s] = sid
            self.used.add(sid)
            self.pending.append((sid, s))
        return sid


def encode_definitions(defs: Definitions, strings: StringTable, byte_order: int) -> tuple[bytes, int]:
    """Definition records of `defs` as one block payload; returns (payload, record count)."""
    p = _prefix(byte_order)
    head = struct.Struct(p + layout.DEF_RECORD_HEADER_FMT)
    body_structs = {t: struct.Struct(p + f) for t, f in layout.DEF_BODY_FMT.items()}
    out: list[bytes] = []

    def rec(t: DefType, body: bytes) -> None:
        out.append(head.pack(int(t), 0, len(body)))
        out.append(body)

    def fixed(t: DefType, *values) -> None:
        rec(t, body_structs[t].pack(*values))

    S = strings
    strings.seed(defs.strings)
    body: list[tuple[DefType, tuple]] = []
    for fid, name in sorted(defs.files.items()):
        body.append((DefType.SOURCE_FILE, (fid, S(name))))
    for m in sorted(defs.machines.values(), key=lambda x: x.id):
        body.append((DefType.MACHINE, (m.id, S(m.name))))
    for n in sorted(defs.nodes.values(), key=lambda x: x.id):
        body.append((DefType.NODE, (n.id, n.machine, S(n.name))))
    for pr in sorted(defs.processes.values(), key=lambda x: x.id):
        body.append((DefType.PROCESS, (pr.id, pr.node, S(pr.name))))
    for loc in sorted(defs.locations.values(), key=lambda x: x.id):
        body.append((DefType.LOCATION, (loc.id, loc.process, loc.thread, S(loc.name))))
    for r in sorted(defs.regions.values(), key=lambda x: x.id):
        body.append(
            (DefType.REGION, (r.id, S(r.name), r.file, r.begin_line, r.end_line, int(r.paradigm), int(r.role), 0))
        )
    for c in sorted(defs.callsites.values(), key=lambda x: x.id):
        body.append((DefType.CALLSITE, (c.id, c.file, c.line, c.region_entered)))
    for c in sorted(defs.comms.values(), key=lambda x: x.id):
        if c.group not in defs.groups:
            raise ValueError(f"communicator {c.id} ({c.name!r}) refers to undefined group {c.group}")
        body.append((DefType.COMM, (c.id, c.group, S(c.name), c.parent)))
    for lk in sorted(defs.locks.values(), key=lambda x: x.id):
        body.append((DefType.LOCK, (lk.id, int(lk.kind), S(lk.name))))
    for w in sorted(defs.windows.values(), key=lambda x: x.id):
        body.append((DefType.WINDOW, (w.id, w.comm, S(w.name) if w.name else NO_ID)))
    for proc, ck in sorted(defs.clocks.items()):
        body.append((DefType.CLOCK, (proc, 0, float(ck.ticks_per_second), int(ck.origin))))
    for proc, offs in sorted(defs.offsets.items()):
        for o in offs:
            body.append((DefType.OFFSET, (proc, 0, float(o.local_time), float(o.offset))))
    for m in sorted(defs.metrics.values(), key=lambda x: x.id):
        body.append((DefType.METRIC, (m.id, S(m.name), S(m.unit), int(m.dtype), int(m.mode), 0)))
    for k, v in defs.attributes.items():
        body.append((DefType.ATTRIBUTE, (S(k), S(v))))

    # strings first, so a reader meets every string before its use
    for sid, s in strings.pending:
        rec(DefType.STRING, struct.pack(p + "I", sid) + names.encode(s))
    n = len(strings.pending)
    strings.pending = []
    for gid, ranks in sorted(defs.groups.items()):
        rec(DefType.GROUP, struct.pack(p + "II", gid, len(ranks)) + struct.pack(p + f"{len(ranks)}I", *ranks))
        n += 1
    for t, values in body:
        fixed(t, *values)
    return b"".join(out), n + len(body)


# --------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------


class RawDefinitions:
    """Definition records as read, before string ids are resolved.

    Several DEFINITIONS blocks feed one instance; `resolve` runs once all are read.
    """

    def __init__(self) -> None:
        self.strings: dict[int, str] = {}
        self.records: list[tuple[DefType, tuple]] = []
        self.groups: dict[int, tuple[int, ...]] = {}


def decode_definitions(payload, count: int, byte_order: int, raw: RawDefinitions, where) -> None:
    """Parse one DEFINITIONS payload into `raw`.

    `where(msg, rel_offset)` builds the TraceFormatError for a problem at a
    byte offset relative to the payload start.
    """
    p = _prefix(byte_order)
    head = struct.Struct(p + layout.DEF_RECORD_HEADER_FMT)
    body_structs = {t: struct.Struct(p + f) for t, f in layout.DEF_BODY_FMT.items()}
    u32 = struct.Struct(p + "I")
    pos, end, n = 0, len(payload), 0
    while pos < end:
        if pos + head.size > end:
            raise where(f"definition record {n} header runs past the block end", pos)
        t, _reserved, length = head.unpack_from(payload, pos)
        body_at = pos + head.size
        if length > end - body_at:
            raise where(f"definition record {n} (type {t}) claims {length} body bytes, only {end - body_at} left", pos)
        body = payload[body_at : body_at + length]
        if t == DefType.STRING:
            if length < 4:
                raise where(f"STRING record {n} is too short ({length} bytes)", pos)
            (sid,) = u32.unpack_from(body, 0)
            raw.strings[sid] = names.decode(body[4:])  # bytes that are not UTF-8 survive (tracefmt.names)
        elif t == DefType.GROUP:
            if length < 8:
                raise where(f"GROUP record {n} is too short ({length} bytes)", pos)
            gid, k = struct.unpack_from(p + "II", body, 0)
            if 8 + 4 * k > length:
                raise where(f"GROUP record {n} (id {gid}) claims {k} ranks but has room for {(length - 8) // 4}", pos)
            raw.groups[gid] = struct.unpack_from(p + f"{k}I", body, 8)
        elif t in body_structs:
            s = body_structs[t]
            if length < s.size:
                raise where(f"{DefType(t).name} record {n} is too short ({length} bytes, need {s.size})", pos)
            raw.records.append((DefType(t), s.unpack_from(body, 0)))
        # unknown record types (a newer minor version) are skipped: the length makes that safe
        pos = body_at + length
        n += 1
    if n != count:
        raise where(f"block header announces {count} definition records, payload holds {n}", 0)


def resolve(raw: RawDefinitions, problems: list[str]) -> Definitions:
    """Turn raw records into a :class:`Definitions`; dangling string ids become problems."""
    d = Definitions(strings=dict(raw.strings), groups=dict(raw.groups))

    def S(sid: int, what: str) -> str:
        if sid == NO_ID:
            return ""
        s = raw.strings.get(sid)
        if s is None:
            problems.append(f"{what} refers to undefined string {sid}")
            return f"<string {sid}>"
        return s

    comms = []
    for t, v in raw.records:
        if t == DefType.SOURCE_FILE:
            d.files[v[0]] = S(v[1], f"source file {v[0]}")
        elif t == DefType.REGION:
            rid, name, fid, bl, el, par, role, _ = v
            d.regions[rid] = Region(
                rid, S(name, f"region {rid}"), fid, bl, el, _enum_or_int(Paradigm, par), _enum_or_int(Role, role)
            )
        elif t == DefType.CALLSITE:
            d.callsites[v[0]] = Callsite(*v)
        elif t == DefType.MACHINE:
            d.machines[v[0]] = Machine(v[0], S(v[1], f"machine {v[0]}"))
        elif t == DefType.NODE:
            d.nodes[v[0]] = Node(v[0], v[1], S(v[2], f"node {v[0]}"))
        elif t == DefType.PROCESS:
            d.processes[v[0]] = Process(v[0], v[1], S(v[2], f"process {v[0]}"))
        elif t == DefType.LOCATION:
            d.locations[v[0]] = Location(v[0], v[1], v[2], S(v[3], f"location {v[0]}"))
        elif t == DefType.COMM:
            comms.append(v)
        elif t == DefType.LOCK:
            d.locks[v[0]] = Lock(v[0], _enum_or_int(LockKind, v[1]), S(v[2], f"lock {v[0]}"))
        elif t == DefType.WINDOW:
            d.windows[v[0]] = Window(v[0], v[1], S(v[2], f"window {v[0]}"))
        elif t == DefType.CLOCK:
            proc, _, tps, origin = v
            if not TICK_RATE_LIMITS[0] <= tps <= TICK_RATE_LIMITS[1]:  # also rejects NaN
                d.repairs.append(f"clock of process {proc} has a tick rate of {tps} per second, outside "
                                f"{TICK_RATE_LIMITS[0]:g}..{TICK_RATE_LIMITS[1]:g}; using 1e9")
                tps = 1e9
            d.clocks[proc] = Clock(proc, tps, origin)
        elif t == DefType.OFFSET:
            if not (math.isfinite(v[2]) and math.isfinite(v[3]) and abs(v[3]) <= OFFSET_LIMIT):
                d.repairs.append(f"clock offset of process {v[0]} ({v[3]} s at local time {v[2]} s) is not a "
                                f"finite time within {OFFSET_LIMIT:g} s; ignored")
                continue
            d.offsets.setdefault(v[0], []).append(Offset(v[2], v[3]))
        elif t == DefType.METRIC:
            mid, name, unit, dt, mode, _ = v
            d.metrics[mid] = Metric(
                mid,
                S(name, f"metric {mid}"),
                S(unit, f"metric {mid}"),
                _enum_or_int(MetricDtype, dt),
                _enum_or_int(MetricMode, mode),
            )
        elif t == DefType.ATTRIBUTE:
            d.attributes[S(v[0], "attribute key")] = S(v[1], "attribute value")
    for cid, gid, name, parent in comms:
        ranks = raw.groups.get(gid)
        if ranks is None:
            problems.append(f"communicator {cid} refers to undefined group {gid}")
            ranks = ()
        d.comms[cid] = Comm(cid, gid, S(name, f"communicator {cid}"), parent, tuple(ranks))
    for proc, offs in list(d.offsets.items()):
        offs.sort(key=lambda o: o.local_time)
        slope = max_offset_slope(offs)
        if not slope <= OFFSET_SLOPE_LIMIT:
            d.repairs.append(f"clock offsets of process {proc} change by {slope:.3g} s per second between two "
                            f"measurements (more than {OFFSET_SLOPE_LIMIT:g}: time would run backwards or twice "
                            f"as fast); ignored")
            del d.offsets[proc]
    return d


def max_offset_slope(offsets: list[Offset]) -> float:
    """The largest |change of offset / change of local time| between measurements at distinct local
    times (sorted; measurements at one instant are averaged by ``tracefmt.clock``); 0 with fewer than two."""
    span: dict[float, tuple[float, float]] = {}  # local time -> (smallest, largest) offset measured then
    for o in offsets:
        lo, hi = span.get(o.local_time, (o.offset, o.offset))
        span[o.local_time] = (min(lo, o.offset), max(hi, o.offset))
    worst = 0.0
    times = sorted(span)
    for t1, t2 in zip(times, times[1:]):
        (lo1, hi1), (lo2, hi2) = span[t1], span[t2]
        worst = max(worst, max(hi2 - lo1, hi1 - lo2) / (t2 - t1))
    return worst
