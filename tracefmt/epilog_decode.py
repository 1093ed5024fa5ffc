"""One EPILOG event file through the numba kernels: id tables in, event columns out.

``FileTables`` turns what an :class:`tracefmt.epilog.EpilogImporter` knows
(global definitions, our location order, MPI_COMM_SELF per process) and what
one file's context says (its rank's id maps from ``epik.map``, merged or
per-rank, byte order) into the plain arrays ``epilog_kernels.count_rows``
and ``fill_rows`` take.  ``decode_file`` runs the counting and filling passes, words
its error codes as one line naming the file, record type and byte offset,
turns skipped records into trace notes, numbers the file's locks, and hands
each location's rows to :class:`EventColumns`.
"""

from __future__ import annotations

import numpy as np

from . import epilog_kernels as K
from .layout import EVENT_DTYPE
from .epilog_records import (
    ELG_BIG_ENDIAN,
    EVENT_FIXED,
    RECORD_NAMES,
    RMA_CODES,
    DEF_CODES,
    EpilogFormatError,
    R,
    SparseIdMap,
    bad_record,
)

#: what the kernel does with each record type
ACTION = np.zeros(256, np.int64)
for _code in DEF_CODES:
    ACTION[_code] = K.A_DEF
for _code in RMA_CODES:
    ACTION[_code] = K.A_SKIP
for _code, _act in {
    R.ENTER: K.A_ENTER, R.ENTER_CS: K.A_ENTER_CS, R.EXIT: K.A_EXIT, R.MPI_WINEXIT: K.A_EXIT,
    R.MPI_WINCOLLEXIT: K.A_EXIT, R.OMP_COLLEXIT: K.A_OMP_COLLEXIT, R.MPI_COLLEXIT: K.A_MPI_COLLEXIT,
    R.COLLEXIT: K.A_MPI_COLLEXIT, R.MPI_SEND: K.A_SEND, R.MPI_RECV: K.A_RECV,
    R.MPI_SEND_COMPLETE: K.A_SEND_COMPLETE, R.MPI_RECV_REQUEST: K.A_RECV_REQUEST,
    R.MPI_CANCELLED: K.A_CANCELLED, R.MPI_REQUEST_TESTED: K.A_TESTED, R.OMP_FORK: K.A_FORK,
    R.OMP_JOIN: K.A_JOIN, R.OMP_ALOCK: K.A_ALOCK, R.ALOCK: K.A_ALOCK, R.OMP_RLOCK: K.A_RLOCK,
    R.RLOCK: K.A_RLOCK, R.LOG_OFF: K.A_PAUSE, R.ENTER_TRACING: K.A_TRACE, R.LOG_ON: K.A_RESUME,
    R.EXIT_TRACING: K.A_RESUME, R.ATTR_UI1: K.A_ATTR1, R.ATTR_UI4: K.A_ATTR4,
}.items():
    ACTION[_code] = _act
#: the lock records (fill_rows lists their rows)
LOCK_CODES = np.flatnonzero((ACTION == K.A_ALOCK) | (ACTION == K.A_RLOCK))
FIXED = np.zeros(256, np.int64)
HAS_METRICS = np.zeros(256, np.bool_)
for _code, (_fixed, _hasm) in EVENT_FIXED.items():
    FIXED[_code], HAS_METRICS[_code] = _fixed, _hasm

_FIELDS = ("type", "flags", "a", "b", "c", "d", "e")


def seconds(ev: np.ndarray) -> np.ndarray:
    """The time field of decoded rows, which holds float64 seconds until ``epilog_columns`` makes ticks."""
    return ev["time"].view(np.float64)


def kernel_columns(ev: np.ndarray) -> list[np.ndarray]:
    """The fields of an EVENT_DTYPE array in the order fill_rows takes them (time as float64)."""
    return [seconds(ev)] + [ev[name] for name in _FIELDS]


def _pairs(mapping: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys and their values, as epilog_kernels.lookup takes them."""
    keys = np.array(sorted(mapping), np.int64)
    return keys, np.array([mapping[k] for k in keys.tolist()], np.int64)


def _compose(idmap, resolve) -> dict[int, int]:
    """local id -> resolve(global id) through an id map (identity when None is given: resolve's own keys)."""
    if idmap is None:
        return dict(resolve)
    if isinstance(idmap, SparseIdMap):
        items = [(k, idmap[k]) for k in idmap.keys()]
    else:
        items = enumerate(np.asarray(idmap).tolist())
    return {int(local): resolve.get(int(g), -1) for local, g in items}


class FileTables:
    """The kernels' lookup tables for one file.

    The kernels number the file's locations 0..n-1 (slots: ``slot_loc`` holds our location of each, in
    our order), so that what they allocate per location, and the Python that sizes it, is as large as
    the file's own locations: a rank's file of an archive with thousands of locations has its threads."""

    def __init__(self, imp, ctx):
        d = imp.defs
        own = imp.loc_index
        ours = {k: v for k, v in _compose(ctx.loc_map, own).items() if v >= 0}
        default = own.get(ctx.default_location, -1) if ctx.default_location is not None else -1
        slots = sorted(set(ours.values()) | ({default} if default >= 0 else set()))
        slot_of = {loc: j for j, loc in enumerate(slots)}
        self.slot_loc = np.array(slots, np.int64)
        self.loc_rank = imp.loc_rank[self.slot_loc]
        self.loc_keys, self.loc_vals = _pairs({k: slot_of[v] for k, v in ours.items()})
        self.default_loc = slot_of.get(default, -1)
        regions = {rid: rid for rid in imp.asm.regions}
        self.reg_keys, self.reg_vals = _pairs({k: v for k, v in _compose(ctx.region_map, regions).items() if v >= 0})
        sites = {cs: (erid if erid in imp.asm.regions else -1) for cs, (_f, _l, erid, _r) in d.callsites.items()}
        self.cs_keys, self.cs_vals = _pairs({k: v for k, v in _compose(ctx.callsite_map, {c: c for c in sites})
                                             .items() if v >= 0})
        self.site_keys, self.site_rids = _pairs({k: v for k, v in sites.items() if v >= 0})
        self._comms(imp, ctx)

    def _comms(self, imp, ctx) -> None:
        d = imp.defs
        known = sorted(set(d.comm_refs) | set(d.comm_bits))
        self.comm_any = ctx.comm_map is None  # without a map, an undefined id is taken as it is
        glob = _compose(ctx.comm_map, {c: c for c in known}) if ctx.comm_map is not None else {c: c for c in known}
        if ctx.comm_map is not None:  # mapped to an undefined global id: keep that id
            gl = ctx.comm_map
            for local in glob:
                if glob[local] < 0:
                    glob[local] = int(gl[local])
        slots: dict[int, int] = {}
        kind, cid, ptr, ranks, self_col = [], [], [0], [], []
        self_cols: dict[int, int] = {}
        for g in sorted(set(glob.values())):
            slots[g] = len(kind)
            col = -1
            if imp.is_self(g) and ctx.merged:
                kind.append(K.COMM_SELF)
                col = self_cols.setdefault(g, len(self_cols))
                cid.append(g)
            elif imp.is_self(g):
                kind.append(K.COMM_RANKS)
                cid.append(imp.our_comm(g, ctx.rank))
                ranks.append(ctx.rank)
            else:
                members = imp.comm_ranks(g)
                kind.append(K.COMM_UNKNOWN if members is None else K.COMM_RANKS)
                cid.append(g)
                ranks.extend(members or ())
            ptr.append(len(ranks))
            self_col.append(col)
        self.comm_keys, self.comm_vals = _pairs({local: slots[g] for local, g in glob.items()})
        self.slot_kind = np.array(kind, np.int64)
        self.slot_cid = np.array(cid, np.int64)
        self.slot_ptr = np.array(ptr, np.int64)
        self.slot_ranks = np.array(ranks, np.int64)
        self.slot_self = np.array(self_col, np.int64)
        self.loc_self = np.zeros((len(self.loc_rank), max(1, len(self_cols))), np.int64)
        for g, col in self_cols.items():
            self.loc_self[:, col] = [imp.our_comm(g, int(r)) for r in self.loc_rank]


class EventColumns:
    """Rows of each of our locations: EVENT_DTYPE segments, one per file that holds the location's events."""

    def __init__(self):
        self.segments: dict[int, list[np.ndarray]] = {}

    def add(self, loc: int, rows: np.ndarray) -> None:
        self.segments.setdefault(loc, []).append(rows)

    def location(self, loc: int) -> np.ndarray:
        segs = self.segments.get(loc, [])
        if len(segs) == 1:
            return segs[0]
        return np.concatenate(segs) if segs else np.zeros(0, EVENT_DTYPE)


_ERRORS = {
    K.BAD_LOCATION: "location id {v} is not defined (or not in this rank's id map)",
    K.NO_LOCATION: "event without a location id in a file that defines several locations",
    K.BAD_REGION: "region {v} is not defined (or not in this rank's id map)",
    K.EMPTY_STACK: "exit with no open region on our location {v}",
    K.BAD_TIME: "time is not a finite time within {lim:g} s",
    K.BAD_COMM: "local communicator id {v} is not in this rank's id map",
    K.BAD_RANK: "rank {v} is outside communicator {v2}",
    K.BAD_CALLSITE: "call site {v} is not defined (or names no defined region)",
    K.BAD_ATTR_LENGTH: "attribute record of {v} bytes (expected {v2} or {v2p4})",
}


def _kernel_error(f, status, data) -> Exception:
    code, off = int(status[K.ST_ERROR]), int(status[K.ST_OFFSET])
    v, v2 = int(status[K.ST_VALUE]), int(status[K.ST_VALUE2])
    if code == K.TRUNCATED_HEADER:
        return EpilogFormatError(f"{f.path}: truncated record header at byte offset {off}")
    if code == K.TRUNCATED_BODY:
        return EpilogFormatError(f"{f.path}: record of type {v} at byte offset {off} claims {v2} body bytes, "
                                 f"only {len(data) - off - 2} left (truncated file)")
    rtype = int(data[off + 1])
    if code == K.BAD_LENGTH:
        m = int(status[K.ST_METC])
        return bad_record(f, off, rtype, f"body of {v} bytes; expected {v2} (or {v2 + 4} with a location id) "
                                         f"for {m} counters")
    return bad_record(f, off, rtype, _ERRORS[code].format(v=v, v2=v2, v2p4=v2 + 4, lim=K.TIME_LIMIT))


def decode_file(imp, ctx, start: int, tb: FileTables) -> int:
    """Run the kernels over one file; returns the number of event records it holds."""
    f = ctx.f
    data = np.frombuffer(f.data, np.uint8)
    n_loc = len(tb.loc_rank)  # the file's locations (FileTables.slot_loc)
    corr = imp.file_clock(ctx)
    t0, o0, slope = corr if corr is not None else (0.0, 0.0, 0.0)
    partner_mode = 2 if ctx.merged else (1 if imp.version >= 1008 else 0)
    rows = np.zeros(n_loc, np.int64)
    depth_cap = np.zeros(n_loc, np.int64)
    hist = np.zeros(256, np.int64)
    first_at = np.full(256, -1, np.int64)
    big = f.byte_order == ELG_BIG_ENDIAN

    def status_after(kernel, *args):
        status = np.full(K.N_STATUS, -1, np.int64)
        status[K.ST_ERROR] = K.OK
        kernel(*args, status)
        if status[K.ST_ERROR] != K.OK:
            if status[K.ST_ERROR] == K.EMPTY_STACK:  # the kernels say the slot
                status[K.ST_VALUE] = tb.slot_loc[status[K.ST_VALUE]]
            raise _kernel_error(f, status, data)
        return status

    metc_in = imp.metc
    status = status_after(K.count_rows, data, start, big, metc_in, ACTION, FIXED, HAS_METRICS, tb.loc_keys,
                          tb.loc_vals, tb.default_loc, rows, depth_cap, hist, first_at)
    imp.metc = int(status[K.ST_METC])
    imp.record_counts += hist
    pausing, tracing = measurement_regions(imp, hist)
    at = np.zeros(n_loc + 1, np.int64)
    np.cumsum(rows, out=at[1:])
    stack_at = np.zeros(n_loc + 1, np.int64)
    np.cumsum(depth_cap, out=stack_at[1:])
    ev = np.zeros(int(at[-1]), EVENT_DTYPE)
    lock_rows = np.zeros(int(hist[LOCK_CODES].sum()), np.int64)
    messages = np.zeros(n_loc, np.int64)
    status = status_after(K.fill_rows, data, start, big, metc_in, ACTION, FIXED, HAS_METRICS, tb.loc_keys,
                          tb.loc_vals, tb.default_loc, tb.loc_rank, tb.reg_keys, tb.reg_vals, tb.cs_keys, tb.cs_vals,
                          tb.site_keys, tb.site_rids, tb.comm_any, tb.comm_keys, tb.comm_vals, tb.slot_kind,
                          tb.slot_cid, tb.slot_ptr, tb.slot_ranks, tb.slot_self, tb.loc_self, partner_mode,
                          pausing, tracing, t0, o0, slope, corr is not None, stack_at, at[:-1].copy(),
                          *kernel_columns(ev), lock_rows, messages)
    imp.loc_messages[tb.slot_loc] += messages
    skipped_notes(imp, f, hist, first_at)
    if status[K.ST_UNDEF_COMM_AT] >= 0:
        imp.warn("undefined-comm", f"{f.path}: communicator {int(status[K.ST_UNDEF_COMM])} is not defined; its "
                                   f"ranks are taken as global ranks (first at byte offset "
                                   f"{int(status[K.ST_UNDEF_COMM_AT])})")
    if status[K.ST_MISMATCH_AT] >= 0:
        imp.warn("exit-region", f"{f.path}: byte offset {int(status[K.ST_MISMATCH_AT])}: exit names region "
                                f"{int(status[K.ST_MISMATCH_ATTR])} but region {int(status[K.ST_MISMATCH_OPEN])} "
                                f"is open")
    number_locks(imp, ev, at, tb.loc_rank, lock_rows)
    for j in np.flatnonzero(at[1:] > at[:-1]).tolist():
        imp.columns.add(int(tb.slot_loc[j]), ev[at[j]:at[j + 1]])
    return int(status[K.ST_EVENTS])


def measurement_regions(imp, hist) -> tuple[int, int]:
    """Our ids of the regions PAUSING and TRACING, defined if records LOG_OFF / ENTER_TRACING stand for
    them (LOG_ON / EXIT_TRACING leave the region open, or TRACING when none is); -1 when not needed."""
    pausing = imp.asm.region_id("PAUSING", file="EPIK") if hist[R.LOG_OFF] else -1
    need = hist[R.ENTER_TRACING] or hist[R.LOG_ON] or hist[R.EXIT_TRACING]
    tracing = imp.asm.region_id("TRACING", file="EPIK") if need else -1
    return pausing, tracing


def skipped_notes(imp, f, hist, first_at) -> None:
    """One note per record type the reader skips: RMA (the enclosing MPI calls keep their time) and types
    it does not know."""
    for code in np.flatnonzero(hist).tolist():
        act = ACTION[code]
        if act not in (K.A_SKIP, K.A_NONE):
            continue
        name = RECORD_NAMES.get(code, "unknown")
        why = ("one-sided communication (RMA) is not analysed; the time of the MPI calls around it is"
               if act == K.A_SKIP else "a record type this reader does not know")
        imp.warn(f"skip-{code}", f"{f.path}: {int(hist[code])} record(s) of type {code} ({name}) skipped, first "
                                 f"at byte offset {int(first_at[code])}: {why}", note=True)


def number_locks(imp, cols: np.ndarray, at: np.ndarray, slot_rank: np.ndarray, rows: np.ndarray) -> None:
    """Our lock ids (one per process and EPILOG lock, numbered in the order the file first uses them) in
    a of the lock records' rows (``rows``, in record order); b, which held the region open around the
    record, back to 0."""
    if not len(rows):
        return
    rank = slot_rank[np.searchsorted(at, rows, side="right") - 1]  # rows are grouped by slot
    keys = np.stack([rank, cols["a"][rows].astype(np.int64)], axis=1)
    uniq, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    ids = np.empty(len(uniq), np.int64)
    top = cols["b"][rows]
    for u in np.argsort(first).tolist():  # one call per distinct lock, in the order of first use
        ids[u] = imp.lock_id(int(uniq[u, 0]), int(uniq[u, 1]), int(top[first[u]]))
    cols["a"][rows] = ids[inverse.reshape(-1)]
    cols["b"][rows] = 0
