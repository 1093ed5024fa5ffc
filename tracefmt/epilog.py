"""Reader for genuine EPILOG 1.x traces (KOJAK, Scalasca 1.x / EPIK), format versions 1.0-1.9.

Two inputs are accepted:

* a merged trace (``epik.elg`` or any ``*.elg`` written by ``elg_merge``/KOJAK):
  one EPILOG file with global definitions followed by events that carry
  global location ids;
* an EPIK experiment archive ``epik_<title>/`` with unified definitions
  ``epik.esd``, per-rank id maps and clock offsets ``epik.map`` and one trace
  per rank ``ELG/NNNNN`` (gzip-compressed or not).

Records and definitions are parsed by :mod:`tracefmt.epilog_records`; this
module reads the events.  The result is a
:class:`tracefmt.foreign.TraceAssembly` in our terms:

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

import os
import struct
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from .epilog_records import (  # noqa: F401  (EpilogFormatError, R: part of this module's interface)
    ATTR_ANYNESS,
    ATTR_BYTES,
    ATTR_REGION,
    ATTR_REQUEST,
    DEF_CODES,
    ELG_NO_ID,
    EVENT_FIXED,
    GROUP_SELF,
    GROUP_WORLD,
    RMA_CODES,
    TICKS_PER_SECOND,
    EpilogDefinitions,
    EpilogFile,
    EpilogFormatError,
    R,
    RecordStream,
    bad_record,
    classify_region,
    read_definitions,
)
from .foreign import EventRows, ForeignLocation, ForeignRegion, Row, TraceAssembly
from .layout import (
    ANY,
    NO_ID,
    EventType,
    LockKind,
    MetricDtype,
    MetricMode,
    RecvFlag,
    Role,
)

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
    events_read: int = 0  # event records (types 100 and up) met, for the NUM_EVENTS check


#: the largest event time (seconds, corrected) read: about 2096 on EPIK's wall clock; its ticks fit int64
TIME_LIMIT = 4e9


def _mapped(table: np.ndarray | None, local: int, what: str, ctx: _FileContext, off: int, rtype: int) -> int:
    if table is None or local == ELG_NO_ID:
        return local
    if local >= len(table):
        raise bad_record(ctx.f, off, rtype, f"local {what} id {local} is not in this rank's id map (size {len(table)})")
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
        for off, rtype, body in RecordStream(f, start):
            if rtype in DEF_CODES:
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
                    raise bad_record(f, off, rtype, f"attribute record of {L} bytes (expected {base} or {base + 4})")
                atype = body[body_at]
                val = body[body_at + 1] if rtype == R.ATTR_UI1 else struct.unpack_from(e + "I", body, body_at + 1)[0]
                if lid is not None:
                    lid = _mapped(ctx.loc_map, lid, "location", ctx, off, rtype)
                pending_attr.setdefault(lid, {})[atype] = val
                continue
            if rtype < 100:
                self.warn(f"unknown-{rtype}", f"{f.path}: unknown record type {rtype} at byte offset {off} skipped")
                continue
            ctx.events_read += 1
            if rtype in RMA_CODES:
                self.warn("rma", f"{f.path}: one-sided communication (RMA) records are not analysed; "
                                 f"first at byte offset {off}")
                continue
            spec = EVENT_FIXED.get(rtype)
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
                    raise bad_record(f, off, rtype, "event without a location id in a file that defines several "
                                              "locations")
                p = 0
            else:
                raise bad_record(f, off, rtype, f"body of {L} bytes; expected {expect} (or {expect + 4} with a "
                                          f"location id) for {metc} counters")
            (t,) = struct.unpack_from(e + "d", body, p)
            if corr is not None:
                t = corr(t)
            if not -TIME_LIMIT <= t <= TIME_LIMIT:  # also NaN: nanosecond ticks of it must fit 64 bits
                raise bad_record(f, off, rtype, f"time {t} s is not a finite time within {TIME_LIMIT:g} s")
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
                    raise bad_record(f, off, rtype, f"call site {cs} is not defined")
                rid = site[2]
            else:
                rid = _mapped(ctx.region_map, x, "region", ctx, off, rtype)
            if rid not in self.asm.regions:
                raise bad_record(f, off, rtype, f"region {rid} is not defined")
            stack.append(rid)
            rows.append(Row([t, EventType.ENTER, 0, rid, cs, NO_ID, NO_ID, 0]))
            counters()
        elif rtype in (R.EXIT, R.OMP_COLLEXIT, R.MPI_COLLEXIT, R.COLLEXIT, R.MPI_WINEXIT, R.MPI_WINCOLLEXIT):
            if not stack:
                raise bad_record(f, off, rtype, f"exit at time {t!r} with no open region on location {lid}")
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
            raise bad_record(ctx.f, off, rtype, f"rank {x} is outside communicator {cid} of size {len(ranks)}")
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
    if defs.num_events and ctx.events_read < defs.num_events:  # 0 is the dummy of a file never patched
        imp.warn("truncated", f"{path}: truncated: {ctx.events_read} of the {defs.num_events} event records "
                              f"its NUM_EVENTS record announces")
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
