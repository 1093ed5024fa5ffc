"""The event part of the native OTF2 reader: every location's event file through the numba kernel.

``decode_events(defs)`` returns each location's event columns (those of our
reader, ``column_memory.new_columns``: ``otf2_kernels.decode_location``
writes them in place, nothing is copied afterwards) and runs the fix-ups
that need several locations: team ids and sizes per process, lock kinds,
ticks from the archive's global offset and their seconds.  Each location
is read on its own; a missing or damaged file becomes one line in
``problems`` and the events decoded before the damage are kept.  The kernel
releases the GIL, so locations are decoded on ``jobs`` threads.
"""

from __future__ import annotations

import mmap
import os
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .column_memory import new_columns
from .otf2_defs import CHUNK_HEADER_SIZE, Otf2Error, clock_intervals, read_local_defs
from . import otf2_kernels as K
from .layout import NO_ID, RMA_GROUP_SYNCS, EventType

_RMA_SYNC = int(EventType.MPI_RMA_SYNC)
_GROUP_SYNCS = np.array([int(k) for k in RMA_GROUP_SYNCS], np.uint32)

#: the otf2 package's class name of each event record type (for the "skipped" lines)
RECORD_NAMES = dict(enumerate((
    "BufferFlush MeasurementOnOff Enter Leave MpiSend MpiIsend MpiIsendComplete MpiIrecvRequest MpiRecv MpiIrecv "
    "MpiRequestTest MpiRequestCancelled MpiCollectiveBegin MpiCollectiveEnd OmpFork OmpJoin OmpAcquireLock "
    "OmpReleaseLock OmpTaskCreate OmpTaskSwitch OmpTaskComplete Metric ParameterString ParameterInt "
    "ParameterUnsignedInt RmaWinCreate RmaWinDestroy RmaCollectiveBegin RmaCollectiveEnd RmaGroupSync "
    "RmaRequestLock RmaAcquireLock RmaTryLock RmaReleaseLock RmaSync RmaWaitChange RmaPut RmaGet RmaAtomic "
    "RmaOpCompleteBlocking RmaOpCompleteNonBlocking RmaOpTest RmaOpCompleteRemote ThreadFork ThreadJoin "
    "ThreadTeamBegin ThreadTeamEnd ThreadAcquireLock ThreadReleaseLock ThreadTaskCreate ThreadTaskSwitch "
    "ThreadTaskComplete ThreadCreate ThreadBegin ThreadWait ThreadEnd CallingContextEnter CallingContextLeave "
    "CallingContextSample IoCreateHandle IoDestroyHandle IoDuplicateHandle IoSeek IoChangeStatusFlags "
    "IoDeleteFile IoOperationBegin IoOperationTest IoOperationIssued IoOperationComplete IoOperationCancelled "
    "IoAcquireLock IoReleaseLock IoTryLock ProgramBegin ProgramEnd NonBlockingCollectiveRequest "
    "NonBlockingCollectiveComplete CommCreate CommDestroy MpiProbe MpiMrecv MpiImrecvRequest MpiImrecv").split(),
    start=10))
#: records translated into events, and records with nothing the analysis uses: not "skipped"
USED_RECORDS = frozenset(
    "Enter Leave MpiSend MpiIsend MpiRecv MpiIrecv MpiIrecvRequest MpiIsendComplete MpiRequestCancelled "
    "MpiCollectiveEnd ThreadFork OmpFork ThreadJoin OmpJoin ThreadTeamBegin ThreadTeamEnd ThreadAcquireLock "
    "ThreadReleaseLock OmpAcquireLock OmpReleaseLock ProgramBegin ProgramEnd MpiCollectiveBegin MpiRequestTest "
    "ThreadBegin ThreadEnd ThreadCreate ThreadWait CallingContextEnter CallingContextLeave CallingContextSample "
    "RmaWinCreate RmaWinDestroy RmaCollectiveBegin RmaCollectiveEnd RmaGroupSync RmaRequestLock RmaAcquireLock "
    "RmaTryLock RmaReleaseLock RmaSync RmaWaitChange RmaPut RmaGet RmaAtomic RmaOpCompleteBlocking "
    "RmaOpCompleteNonBlocking RmaOpTest RmaOpCompleteRemote".split())
MAX_PROBLEMS = 64  # event-level problems kept per location; the rest are counted
MAX_LOCKS = 1 << 16  # distinct locks whose first use is recorded per location
MAX_REQUESTS = 1 << 16  # live non-blocking requests per location (more are reported as never posted)
MAX_DEPTH = 1 << 20  # region nesting depth (deeper is reported as damage)

_DAMAGE = {
    K.TRUNCATED: "the file ends without its end-of-file mark (truncated?)",
    K.BAD_CHUNK: "damaged chunk header",
    K.BAD_RECORD: "damaged event record",
    K.BAD_RANK: "rank {value} outside the record's communicator",
    K.FULL: "more events than the chunk headers announce",
    K.BAD_REGION: "Enter or Leave of undefined region {value}",
    K.TOO_DEEP: f"regions nested deeper than {MAX_DEPTH}",
    K.BAD_CONTEXT: "calling-context event of undefined calling context {value}",
}
#: a calling-context event may leave and enter many frames: rows beyond the file-size bound grow the columns
#: by doubling, up to this many rows per byte of the event file (a frame change per event, 60 frames deep)
MAX_ROWS_PER_BYTE = 8


def _capacity(buf: np.ndarray, chunk_size: int) -> int:
    """Events the chunk headers announce (each chunk: first and last event number), checked against the
    chunk's bytes (an event takes at least 2); where a header is implausible, the bound from the file size."""
    size = len(buf)
    bound = size // 2 + 1
    total = 0
    for start in range(0, size, chunk_size):
        if start + CHUNK_HEADER_SIZE > size or buf[start] != 3 or buf[start + 1] not in (0x42, 0x23):
            return bound
        order = "big" if buf[start + 1] == 0x23 else "little"
        first = int.from_bytes(buf[start + 2:start + 10].tobytes(), order)
        last = int.from_bytes(buf[start + 10:start + 18].tobytes(), order)
        count = last - first + 1
        if not 0 <= count <= min(chunk_size, size - start) // 2:
            return bound
        total += count
    return total


class _Location:
    """One location's decoding: inputs, the kernel call, its results."""

    def __init__(self, defs, i: int, ref: int):
        self.defs, self.i, self.ref = defs, i, ref
        self.evt = defs.anchor.location_file(ref, "evt")
        self.problems: list[str] = []
        self.columns = new_columns(0)
        self.counts = np.zeros(256, np.int64)
        self.locks: list[tuple[int, int, int]] = []  # (lock id, first time, stack-top region)
        self.absent = ""  # why the location has no events at all (its file missing or unreadable)

    def run(self) -> "_Location":
        try:
            self._run()
        except Otf2Error as exc:
            self.problems.append(f"{exc}; location {self._name()} has no events")
            self.absent = str(exc)
        return self

    def _name(self) -> str:
        rank, tid = self.defs.rank_thread[self.ref]
        return f"{self.ref} (rank {rank}, thread {tid})"

    def _run(self) -> None:
        d = self.defs
        local = None
        dfile = d.anchor.location_file(self.ref, "def")
        if os.path.isfile(dfile):
            local = read_local_defs(dfile, d.anchor.def_chunk_size)
        if not os.path.isfile(self.evt):
            raise Otf2Error("event file missing", path=self.evt)
        intervals = clock_intervals([])
        if local is not None:
            try:
                intervals = clock_intervals(local.clock_offsets)
            except ValueError as exc:
                self.problems.append(f"{dfile}: {exc}; times of this location are not corrected")
        tb = d.location_tables(self.ref, local)
        try:
            with open(self.evt, "rb") as f:
                if os.fstat(f.fileno()).st_size == 0:
                    raise Otf2Error("empty event file", path=self.evt, offset=0)
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    buf = np.frombuffer(mm, np.uint8)
                    try:
                        self._decode(buf, tb, intervals)
                    finally:
                        del buf
        except OSError as exc:
            raise Otf2Error(f"cannot read: {exc.strerror or exc}", path=self.evt) from None

    def _decode(self, buf, tb: dict, intervals) -> None:
        cs = self.defs.anchor.event_chunk_size
        cap = _capacity(buf, cs)
        bound = len(buf) // 2 + 1
        ccs = self.defs.cc_depth
        ccstack, path = np.empty(int(ccs.max()) + 1, np.int64), np.empty(int(ccs.max()) + 1, np.int64)
        while True:
            cols = new_columns(cap)  # the kernel writes every field of its rows but the seconds (rebase_times)
            probs = np.zeros((MAX_PROBLEMS, 3), np.int64)
            locks = np.zeros((min(MAX_LOCKS, cap + 1), 3), np.int64)
            st = np.zeros(8, np.int64)
            self.counts[:] = 0
            n, status, pos = K.decode_location(
                buf, cs, *tb["reg"], self.defs.region_flags, *tb["comm"], tb["comm_cid"], self.defs.comm_kind,
                self.defs.comm_off, self.defs.comm_size, self.defs.comm_ranks, *tb["cc"], self.defs.cc_region,
                self.defs.cc_parent, ccs, *tb["win"], self.defs.win_comm, self.defs.win_id, *tb["grp"],
                self.defs.region_rma, tb["team_pos"], tb["rank"],
                tb["tid"], *intervals, cols["ticks"], cols["type"], cols["flags"], cols["a"], cols["b"],
                cols["c"], cols["d"], cols["e"], self.counts, probs, locks, np.zeros((MAX_REQUESTS, 2), np.uint64),
                np.empty(MAX_DEPTH, np.int64), ccstack, path, st)
            if status == K.FULL and cap < bound:
                cap = bound  # the headers undercount: the bound from the file size
                continue
            if status == K.FULL and self.counts[K.CALLING_CONTEXT_ENTER:K.CALLING_CONTEXT_SAMPLE + 1].any() \
                    and cap < MAX_ROWS_PER_BYTE * len(buf):
                cap = min(2 * cap, MAX_ROWS_PER_BYTE * len(buf))  # calling contexts: more frames than records
                continue
            break
        nprob, nlock, value = int(st[K.S_NPROB]), int(st[K.S_NLOCK]), int(st[K.S_VALUE])
        # (rows past n were never touched: not resident, whatever the capacity was)
        self.columns = {name: col[:n] for name, col in cols.items()}
        if status != K.OK:
            what = _DAMAGE.get(status, f"decoding status {status}").format(value=value)
            self.problems.append(f"{self.evt} (byte {pos}): {what}; the {n} events before it are kept, "
                                 f"the rest of location {self._name()} is lost")
        for kind, t, v in probs[:min(nprob, MAX_PROBLEMS)].tolist():
            where = self.defs.where(self.ref, t)
            if kind == K.PROBLEM_UNPOSTED_IRECV:
                self.problems.append(f"{where}: MpiIrecv of request {v & 0xFFFFFFFFFFFFFFFF} that was never posted")
            else:
                j = v
                name = repr(self.defs.comm_names[j]) if j >= 0 else "None"
                self.problems.append(f"{where}: communicator {name} is not an MPI communicator")
        if nprob > MAX_PROBLEMS:
            self.problems.append(f"{self.evt}: {nprob - MAX_PROBLEMS} more such problems")
        self.locks = [tuple(row) for row in locks[:min(nlock, len(locks))].tolist()]


def decode_events(defs, jobs: int | None = None) -> dict[int, dict[str, np.ndarray]]:
    """Decode every location of `defs` (an otf2_native._Definitions): {our location id: its columns}; problems,
    notes and locks go into ``defs.asm``, {our location id: why} of locations without any events (their file
    missing or unreadable) into ``defs.absent``."""
    a = defs.asm
    work = [_Location(defs, i, ref) for i, ref in enumerate(defs.order)]
    jobs = jobs or min(len(work), os.cpu_count() or 1, 8)
    if jobs > 1 and len(work) > 1:
        first = work[0].run()  # compiles / loads the kernel once, not in every thread
        with ThreadPoolExecutor(jobs) as pool:
            done = [first] + list(pool.map(lambda w: w.run(), work[1:]))
    else:
        done = [w.run() for w in work]
    counts = np.zeros(256, np.int64)
    first_lock: dict[int, tuple[int, int, int]] = {}
    for w in done:
        a.problems.extend(w.problems)
        counts += w.counts
        for lk, t, top in w.locks:
            if lk not in first_lock or (t, w.i) < first_lock[lk][:2]:
                first_lock[lk] = (t, w.i, top)
    for lk, (_t, _i, top) in sorted(first_lock.items()):
        a.locks[lk] = defs.lock_kind(lk, top)
    for t in np.flatnonzero(counts):
        name = RECORD_NAMES.get(int(t), f"type-{int(t)}")
        if name not in USED_RECORDS:
            defs.skipped[name] += int(counts[t])
    for what, n in sorted(defs.skipped.items()):
        a.notes.append(f"{defs.anchor.path}: {n} {what} record(s) skipped (not analysed)")
    defs.absent = {w.i: w.absent for w in done if w.absent}
    events = [w.columns for w in done]
    _rma_groups(defs, events)
    _resolve_teams(defs, events)
    out = {}
    origin, rate = np.uint64(defs.origin & 0xFFFFFFFFFFFFFFFF), float(defs.timer_resolution)
    for w, ev in zip(done, events):
        bad = K.rebase_times(ev["ticks"], ev["time"], origin, rate)
        if bad >= 0:
            rk, th = defs.rank_thread[w.ref]
            a.problems.append(f"rank {rk} thread {th}: event {bad + 1} is earlier than event {bad}; "
                              f"times kept as recorded")
        out[w.i] = ev
    a.attributes["otf2.timer_resolution"] = repr(defs.timer_resolution)
    a.attributes["otf2.global_offset"] = str(defs.origin)
    return out


def _rma_groups(defs, events: list) -> None:
    """The groups of RMA synchronisations: the kernel wrote the index of the archive's group definition, our
    definitions get (and the rows take) our group id of its members."""
    rows = []
    for ev in events:
        sel = (ev["type"] == _RMA_SYNC) & np.isin(ev["c"], _GROUP_SYNCS) & (ev["b"] != NO_ID)
        rows.append(np.flatnonzero(sel))
    used = np.unique(np.concatenate([ev["b"][r] for ev, r in zip(events, rows)] + [np.zeros(0, np.uint32)]))
    if len(used) == 0:
        return
    ids = defs.rma_group_ids(used.tolist())
    table = np.array([ids[int(i)] for i in used], np.uint32)
    for ev, r in zip(events, rows):
        if len(r):
            ev["b"][r] = table[np.searchsorted(used, ev["b"][r])]


def _resolve_teams(defs, events: list[np.ndarray]) -> None:
    """Team ids numbered per process from the master's FORKs, thread numbers, team sizes
    (foreign.EventRows.resolve_teams on columns)."""
    by_rank: dict[int, list] = defaultdict(list)
    for i, ref in enumerate(defs.order):
        rank, tid = defs.rank_thread[ref]
        by_rank[rank].append((tid, i))
    # thread numbers are positions in a team's group or thread ids: this many bits hold them all
    words = max([len(m) for m in defs.team_members.values()] + [len(v) for v in by_rank.values()] + [1]) // 64 + 1
    stack = np.empty(MAX_DEPTH, np.int64)
    for rank, locs in by_rank.items():
        locs.sort()
        master = events[locs[0][1]]
        forks = K.number_forks(master["type"], master["a"])
        fork_times = np.ascontiguousarray(master["ticks"][forks])
        members = np.zeros(len(forks) * words, np.uint64)  # (bounded: events x the archive's locations / 64)
        fits = True
        early = []
        for tid, i in locs:
            ev = events[i]
            t_early, ok = K.resolve_thread_teams(ev["type"], ev["ticks"], ev["a"], ev["b"], ev["c"], ev["d"],
                                                 defs.region_flags, fork_times, tid, stack, members, words)
            fits &= ok
            if t_early >= 0:
                early.append(t_early)
        if early:
            defs.asm.problems.append(f"rank {rank}: parallel region entered at {int(early[0])!r} before any "
                                     f"FORK; its team is left undefined")
        if not fits:
            defs.asm.problems.append(f"rank {rank}: thread numbers beyond the archive's threads; team sizes "
                                     f"count only the others")
        K.set_team_sizes(master["type"], master["a"], master["c"], members, words, len(locs))
