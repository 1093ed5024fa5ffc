"""A tiny OTF2 archive writer for tests: every byte written by hand, in either byte order.

It writes what the native reader must handle and the generator never produces:
big-endian chunks, several chunks per file, mapping tables (dense and sparse)
and clock offsets in local definitions, attribute lists, long records (0xFF
length), record types the reader does not know, OTF2's undefined values.
The archive is a 2-rank x 2-thread hybrid run; ``write_archive`` returns the
anchor path.  The otf2 package reads these archives (the tests check that).
"""

from __future__ import annotations

import struct
from pathlib import Path

LITTLE, BIG = 0x42, 0x23
CHUNK = 256 * 1024  # OTF2's smallest chunk size
UNDEF32 = 0xFFFFFFFF

# OTF2 record type codes used here
E_ENTER, E_LEAVE, E_SEND, E_ISEND, E_ISEND_COMPLETE, E_IRECV_REQUEST, E_RECV, E_IRECV = range(12, 20)
E_COLL_BEGIN, E_COLL_END, E_METRIC = 22, 23, 31
E_THREAD_FORK, E_THREAD_JOIN, E_TEAM_BEGIN, E_TEAM_END, E_ACQUIRE, E_RELEASE = range(53, 59)
E_PROGRAM_BEGIN = 83
SINGLETONS = {E_ENTER, E_LEAVE, E_ISEND_COMPLETE, E_IRECV_REQUEST, 20, 21, 24, 28, 29, 30}


class Enc:
    def __init__(self, big: bool):
        self.big = big
        self.order = "big" if big else "little"

    def full(self, v: int, n: int = 8) -> bytes:
        return (v & ((1 << (8 * n)) - 1)).to_bytes(n, self.order)

    def comp(self, v: int, width: int = 8) -> bytes:
        v &= (1 << (8 * width)) - 1
        if v == 0:
            return b"\0"
        if v == (1 << (8 * width)) - 1:
            return b"\xff"
        n = (v.bit_length() + 7) // 8
        return bytes([n]) + v.to_bytes(n, self.order)

    def u32(self, v: int) -> bytes:
        return self.comp(v, 4)

    def record(self, rtype: int, body: bytes) -> bytes:
        if len(body) < 255:
            return bytes([rtype, len(body)]) + body
        return bytes([rtype, 0xFF]) + self.full(len(body)) + body

    def header(self, first: int, last: int, chunked: bool = True) -> bytes:
        h = bytes([3, BIG if self.big else LITTLE])
        return h + (self.full(first) + self.full(last) if chunked else b"")


def chunked_file(enc: Enc, items: list[tuple[int, bytes]], chunk_size: int = CHUNK) -> bytes:
    """Chunks of (time or None, record bytes) items; an event's time is written when it changes and at the
    start of every chunk.  Records that do not fit start a new chunk (the previous one padded with 0)."""
    chunks: list[bytearray] = []
    counts: list[tuple[int, int]] = []
    cur = None
    last_time = None
    n = first = 0
    for time, rec in items:
        stamp = enc.full(time) if time is not None else b""
        need = len(rec) + (9 if time is not None else 0) + 1
        if cur is None or len(cur) + need > chunk_size:
            if cur is not None:
                counts.append((first, n))
            cur = bytearray(enc.header(0, 0))
            chunks.append(cur)
            first = n + 1
            last_time = None
        if time is not None and time != last_time:
            cur += b"\x05" + stamp
            last_time = time
        cur += rec
        if time is not None and rec[0] != 6:
            n += 1
    counts.append((first, n))
    out = bytearray()
    for i, (c, (f, last)) in enumerate(zip(chunks, counts)):
        c[2:18] = enc.full(f) + enc.full(last)
        if i + 1 < len(chunks):
            out += c + b"\0" * (chunk_size - len(c))
        else:
            out += c + b"\x02\x01"
    return bytes(out)


def _strings(enc: Enc, names: list[str]) -> list[bytes]:
    return [enc.record(10, enc.u32(i) + s.encode() + b"\0") for i, s in enumerate(names)]


def global_defs(enc: Enc) -> tuple[bytes, int]:
    S = ["", "machine", "node0", "MPI Rank 0", "MPI Rank 1", "Master thread", "OMP thread 1", "main", "MPI_Send",
         "MPI_Recv", "MPI_Allreduce", "MPI_Isend", "MPI_Wait", "MPI_Irecv", "!$omp parallel @t.c:10",
         "!$omp implicit barrier @t.c:20", "!$omp critical @t.c:15", "MPI", "t.c", "MPI_COMM_WORLD",
         "MPI_COMM_SELF", "work", "pid", "cycles", "#"]
    ix = {s: i for i, s in enumerate(S)}
    recs = [enc.record(5, enc.comp(1_000_000_000) + enc.comp(5_000) + enc.comp(10**9))]
    recs += _strings(enc, S)
    recs.append(enc.record(12, enc.u32(0) + enc.u32(ix["machine"]) + enc.u32(0) + enc.u32(UNDEF32)))
    recs.append(enc.record(12, enc.u32(1) + enc.u32(ix["node0"]) + enc.u32(0) + enc.u32(0)))
    for r in (0, 1):
        recs.append(enc.record(13, enc.u32(r) + enc.u32(ix[f"MPI Rank {r}"]) + b"\x01" + enc.u32(1)))
    for r in (0, 1):
        for t in (0, 1):
            name = "Master thread" if t == 0 else "OMP thread 1"
            recs.append(enc.record(14, enc.comp((t << 32) | r) + enc.u32(ix[name]) + b"\x01" + enc.comp(0)
                                   + enc.u32(r)))
    regions = [("main", 2, 1, "t.c"), ("MPI_Send", 4, 28, "MPI"), ("MPI_Recv", 4, 28, "MPI"),
               ("MPI_Allreduce", 4, 25, "MPI"), ("MPI_Isend", 4, 28, "MPI"), ("MPI_Wait", 4, 1, "MPI"),
               ("MPI_Irecv", 4, 28, "MPI"), ("!$omp parallel @t.c:10", 3, 5, "t.c"),
               ("!$omp implicit barrier @t.c:20", 3, 16, "t.c"), ("!$omp critical @t.c:15", 3, 12, "t.c"),
               ("work", 1, 1, "t.c")]
    for rid, (name, par, role, src) in enumerate(regions):
        body = (enc.u32(rid) + enc.u32(ix[name]) + enc.u32(0) + b"\0" + enc.u32(ix[src]) + enc.u32(10 + rid)
                + enc.u32(0) + enc.u32(ix[name]) + bytes([role, par]) + enc.u32(0))
        recs.append(enc.record(15, body))

    def group(ref, name, gtype, par, members):
        body = enc.u32(ref) + enc.u32(name) + b"\0" + enc.u32(len(members))
        body += b"".join(enc.comp(m) for m in members) + bytes([gtype, par]) + enc.u32(0)
        return enc.record(18, body)

    recs.append(group(0, 0, 4, 4, [0, 1]))  # MPI COMM_LOCATIONS: the master threads
    recs.append(group(1, 0, 4, 3, [0, 1 << 32, 1, (1 << 32) | 1]))  # OpenMP COMM_LOCATIONS
    recs.append(group(2, 0, 5, 4, [0, 1]))  # world
    recs.append(group(3, 0, 6, 4, []))  # self
    recs.append(group(4, 0, 5, 3, [0, 1]))  # team of rank 0
    recs.append(group(5, 0, 5, 3, [2, 3]))  # team of rank 1
    for ref, name, grp in ((0, ix["MPI_COMM_WORLD"], 2), (1, ix["MPI_COMM_SELF"], 3), (2, 0, 4), (3, 0, 5)):
        recs.append(enc.record(22, enc.u32(ref) + enc.u32(name) + enc.u32(grp) + enc.u32(UNDEF32)))
    recs.append(enc.record(11, enc.u32(0) + enc.u32(ix["pid"]) + b"\x04" + enc.u32(0)))  # attribute 0: UINT64
    recs.append(enc.record(19, enc.u32(0) + enc.u32(ix["cycles"]) + enc.u32(0) + b"\x00\x00\x04\x00"
                           + enc.comp(0) + enc.u32(ix["#"])))  # metric member: PAPI-like counter
    recs.append(enc.record(20, enc.u32(0) + b"\x01" + enc.u32(0) + b"\x00\x00"))  # metric class of it
    recs.append(enc.record(99, b"future definition record"))
    return enc.header(1, 0) + b"".join(recs) + b"\x02\x01", len(recs)


# a location's local ids -> global ids (rank 1's master uses other local ids than the global ones)
REGION_MAP = [10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]  # dense: local i -> global REGION_MAP[i]
COMM_MAP = {7: 0, 1000: 3}  # sparse: local 7 -> world, local 1000 -> team of rank 1


def local_defs(enc: Enc, mapped: bool, offsets: list[tuple[int, int]]) -> bytes:
    recs = []
    if mapped:
        body = b"\x03" + enc.comp(len(REGION_MAP)) + b"\0" + b"".join(enc.comp(g) for g in REGION_MAP)
        recs.append(enc.record(5, body))
        body = b"\x06" + enc.comp(len(COMM_MAP)) + b"\x01"
        body += b"".join(enc.comp(k) + enc.comp(v) for k, v in COMM_MAP.items())
        recs.append(enc.record(5, body))
    for t, off in offsets:
        recs.append(enc.record(6, enc.full(t) + enc.comp(off) + struct.pack(">d" if enc.big else "<d", 0.0)))
    return enc.header(1, 0) + b"".join(recs) + b"\x02\x01"


def events(enc: Enc, rank: int, thread: int, iterations: int) -> list[tuple[int, bytes]]:
    """One location's records: `iterations` rounds of a parallel region with a critical section; the master
    also exchanges messages (blocking and non-blocking) and reduces."""
    mapped = rank == 1 and thread == 0
    reg = {g: REGION_MAP.index(g) for g in range(len(REGION_MAP))} if mapped else {g: g for g in range(11)}
    world = 7 if mapped else 0
    team = (1000 if mapped else 3) if rank == 1 else 2
    E = []
    t = 1_000_000 + 7 * rank + 3 * thread

    def ev(rtype, body):
        nonlocal t
        t += 100
        if rtype in SINGLETONS:
            E.append((t, bytes([rtype]) + body))
        else:
            E.append((t, enc.record(rtype, body)))

    def enter(g):
        ev(E_ENTER, enc.u32(reg[g]))

    def leave(g):
        ev(E_LEAVE, enc.u32(reg[g]))

    if thread == 0:
        ev(E_PROGRAM_BEGIN, enc.u32(7) + enc.u32(0))
        enter(0)
    for it in range(iterations):
        # each iteration starts at a fixed time; the workers after their master's fork
        t = max(t, 1_000_000 + 5_000 * (it + 1) + 7 * rank + (250 + 3 * thread if thread else 0))
        if thread == 0:
            ev(E_THREAD_FORK, b"\x03" + enc.u32(2))
        E.append((t + 100, enc.record(6, enc.u32(1) + enc.u32(0) + b"\x04" + enc.comp(4242))))  # attributes
        ev(E_TEAM_BEGIN, enc.u32(team))
        enter(7)
        enter(10)
        leave(10)
        enter(9)
        ev(E_ACQUIRE, b"\x03" + enc.u32(5) + enc.u32(2 * it + thread + 1))
        ev(E_RELEASE, b"\x03" + enc.u32(5) + enc.u32(2 * it + thread + 1))
        leave(9)
        enter(8)
        t += 50 * (1 - thread) + 10 * rank
        leave(8)
        leave(7)
        ev(E_TEAM_END, enc.u32(team))
        if thread == 0:
            ev(E_THREAD_JOIN, b"\x03")
            peer = 1 - rank
            enter(1)
            ev(E_SEND, enc.u32(peer) + enc.u32(world) + enc.u32(42) + enc.comp(8192))
            leave(1)
            enter(2)
            ev(E_RECV, enc.u32(peer) + enc.u32(world) + enc.u32(42) + enc.comp(8192))
            leave(2)
            enter(4)
            ev(E_ISEND, enc.u32(peer) + enc.u32(world) + enc.u32(7) + enc.comp(16) + enc.comp(it + 1))
            leave(4)
            enter(6)
            ev(E_IRECV_REQUEST, enc.comp(100 + it))
            leave(6)
            enter(5)
            ev(E_ISEND_COMPLETE, enc.comp(it + 1))
            ev(E_IRECV, enc.u32(peer) + enc.u32(world) + enc.u32(7) + enc.comp(16) + enc.comp(100 + it))
            leave(5)
            enter(3)
            ev(E_COLL_BEGIN, b"")
            ev(E_COLL_END, b"\x0b" + enc.u32(world) + enc.u32(UNDEF32) + enc.comp(8) + enc.comp(8))
            leave(3)
            ev(E_METRIC, enc.u32(0) + b"\x01\x04" + enc.comp(123456))
            ev(200, b"unknown record type")
            ev(201, bytes(300))  # a long record of an unknown type (0xFF length)
    if thread == 0:
        leave(0)
    return E


def write_archive(root: Path, big: bool = False, iterations: int = 3, chunk_size: int = CHUNK) -> Path:
    """The archive under `root`; returns the anchor file's path."""
    enc = Enc(big)
    root.mkdir(parents=True, exist_ok=True)
    (root / "traces").mkdir(exist_ok=True)
    defs, n_defs = global_defs(enc)
    anchor = enc.header(0, 0, chunked=False) + b"OTF2\0" + bytes([3, 2, 3, 0, 0])
    anchor += enc.full(chunk_size) + enc.full(4 * CHUNK) + b"\x01\x01" + enc.full(4) + enc.full(n_defs)
    anchor += b"machine\0test writer\0\0" + enc.full(0, 4) + enc.full(12345) + enc.full(0, 4) * 2 + b"\x02"
    (root / "traces.otf2").write_bytes(anchor)
    (root / "traces.def").write_bytes(defs)
    for r in (0, 1):
        for t in (0, 1):
            loc = (t << 32) | r
            offsets = [(1_000_000, 0), (1_000_000 + 10**7, 2_000)] if r == 1 else []
            (root / "traces" / f"{loc}.def").write_bytes(local_defs(enc, r == 1 and t == 0, offsets))
            (root / "traces" / f"{loc}.evt").write_bytes(chunked_file(enc, events(enc, r, t, iterations),
                                                                       chunk_size))
    return root / "traces.otf2"


# ---------------------------------------------------------------------------------------------
# calling contexts (Score-P 2+ with unwinding or sampling): one process, one thread
# ---------------------------------------------------------------------------------------------
E_CC_ENTER, E_CC_LEAVE, E_CC_SAMPLE = 66, 67, 68
CC_REGIONS = ["main", "foo", "bar", "baz"]
#: global calling-context refs -> (region index, parent ref or None): main/foo/bar and main/baz/bar
CALLING_CONTEXTS = {10: (0, None), 11: (1, 10), 12: (2, 11), 13: (3, 10), 14: (2, 13)}
CC_LOCAL = [12, 10, 14, 11, 13]  # the location's dense mapping table: local i -> global CC_LOCAL[i]
#: (time in us, record, global calling context, unwind distance): the walk the test knows the visits of
CC_EVENTS = [(100, E_CC_ENTER, 10, 2),      # enter main
             (200, E_CC_SAMPLE, 12, 3),     # main/foo/bar sampled: foo and bar new, main made progress
             (300, E_CC_SAMPLE, 12, 1),     # the same frames, bar made progress
             (400, E_CC_SAMPLE, 14, 3),     # main/baz/bar: foo and its bar left, baz and a bar entered
             (450, E_CC_SAMPLE, 14, 0),     # nothing changed
             (500, E_CC_SAMPLE, 14, 2),     # bar left and entered again (a new visit)
             (600, E_CC_SAMPLE, 10, 1),     # back in main: bar and baz left
             (700, E_CC_ENTER, 11, 2),      # an instrumented foo entered
             (800, E_CC_LEAVE, 11, None),   # and left
             (900, E_CC_LEAVE, 10, None)]   # main left


def calling_context_defs(enc: Enc) -> tuple[bytes, int]:
    S = ["", "machine", "node0", "Process", "Master thread", "cc.c", "cycles sampler"] + CC_REGIONS
    ix = {s: i for i, s in enumerate(S)}
    recs = [enc.record(5, enc.comp(1_000_000_000) + enc.comp(0) + enc.comp(10**6))]
    recs += _strings(enc, S)
    recs.append(enc.record(12, enc.u32(0) + enc.u32(ix["machine"]) + enc.u32(0) + enc.u32(UNDEF32)))
    recs.append(enc.record(13, enc.u32(0) + enc.u32(ix["Process"]) + b"\x01" + enc.u32(0)))
    recs.append(enc.record(14, enc.comp(0) + enc.u32(ix["Master thread"]) + b"\x01" + enc.comp(0) + enc.u32(0)))
    for rid, name in enumerate(CC_REGIONS):
        body = (enc.u32(rid) + enc.u32(ix[name]) + enc.u32(0) + b"\0" + enc.u32(ix["cc.c"]) + enc.u32(10 * rid)
                + enc.u32(0) + enc.u32(ix[name]) + bytes([1, 2]) + enc.u32(0))  # FUNCTION, COMPILER
        recs.append(enc.record(15, body))
    recs.append(enc.record(36, enc.u32(0) + enc.u32(ix["cycles sampler"]) + b"\x01\x01" + enc.comp(0)
                           + enc.comp(1000)))  # an interrupt generator (not read)
    for ref, (region, parent) in CALLING_CONTEXTS.items():
        recs.append(enc.record(34, enc.u32(ref) + enc.u32(region) + enc.u32(UNDEF32)
                               + enc.u32(UNDEF32 if parent is None else parent)))
    return enc.header(1, 0) + b"".join(recs) + b"\x02\x01", len(recs)


def calling_context_events(enc: Enc) -> list[tuple[int, bytes]]:
    E = []
    local = {g: i for i, g in enumerate(CC_LOCAL)}
    for us, rtype, cc, unwind in CC_EVENTS:
        body = enc.u32(local[cc])
        if rtype != E_CC_LEAVE:
            body += enc.u32(unwind)
        if rtype == E_CC_SAMPLE:
            body += enc.u32(0)  # the interrupt generator
        E.append((us * 1000, enc.record(rtype, body)))
    return E


def write_calling_context_archive(root: Path, big: bool = False, events: list | None = None) -> Path:
    """A one-thread archive whose events are calling-context records (``events``: (time, record bytes),
    default ``calling_context_events``); returns the anchor file's path."""
    enc = Enc(big)
    root.mkdir(parents=True, exist_ok=True)
    (root / "traces").mkdir(exist_ok=True)
    defs, n_defs = calling_context_defs(enc)
    anchor = enc.header(0, 0, chunked=False) + b"OTF2\0" + bytes([3, 2, 3, 0, 0])
    anchor += enc.full(CHUNK) + enc.full(4 * CHUNK) + b"\x01\x01" + enc.full(1) + enc.full(n_defs)
    anchor += b"machine\0test writer\0\0" + enc.full(0, 4) + enc.full(0) + enc.full(0, 4) * 2 + b"\x02"
    (root / "traces.otf2").write_bytes(anchor)
    (root / "traces.def").write_bytes(defs)
    mapping = enc.record(5, b"\x0a" + enc.comp(len(CC_LOCAL)) + b"\0" + b"".join(enc.comp(g) for g in CC_LOCAL))
    (root / "traces" / "0.def").write_bytes(enc.header(1, 0) + mapping + b"\x02\x01")
    evs = calling_context_events(enc) if events is None else events
    (root / "traces" / "0.evt").write_bytes(chunked_file(enc, evs))
    return root / "traces.otf2"


# ---------------------------------------------------------------------------------------------
# one-sided communication (RMA) as Score-P writes it: two ranks, one thread each
# ---------------------------------------------------------------------------------------------
E_WIN_CREATE, E_WIN_DESTROY, E_RMA_COLL_BEGIN, E_RMA_COLL_END, E_GROUP_SYNC = range(35, 40)
E_REQUEST_LOCK, E_ACQUIRE_LOCK, E_TRY_LOCK, E_RELEASE_LOCK, E_RMA_SYNC = range(40, 45)
E_RMA_PUT, E_RMA_ATOMIC, E_OP_COMPLETE_BLOCKING, E_OP_COMPLETE_REMOTE = 46, 48, 49, 52
RMA_REGIONS = ["main", "MPI_Win_create", "MPI_Win_allocate", "MPI_Win_post", "MPI_Win_test", "MPI_Win_wait",
               "MPI_Win_start", "MPI_Put", "MPI_Win_complete", "MPI_Win_fence", "MPI_Win_lock",
               "MPI_Fetch_and_op", "MPI_Win_flush_local", "MPI_Win_unlock", "MPI_Win_free"]
#: global RmaWin refs (both over MPI_COMM_WORLD) and the groups rank 0 posts to / rank 1 starts on
WIN_A, WIN_B, GROUP_ONE, GROUP_ZERO = 5, 9, 3, 4
#: rank 1's local ids: windows through a sparse table, groups through a dense one
RMA_WIN_MAP = {0: WIN_A, 1: WIN_B}
RMA_GROUP_MAP = [GROUP_ZERO]


def rma_defs(enc: Enc) -> tuple[bytes, int]:
    S = ["", "machine", "node0", "MPI Rank 0", "MPI Rank 1", "Master thread", "MPI", "t.c", "MPI_COMM_WORLD",
         "win A", "win B"] + RMA_REGIONS
    ix = {s: i for i, s in enumerate(S)}
    recs = [enc.record(5, enc.comp(1_000_000_000) + enc.comp(0) + enc.comp(10**6))]
    recs += _strings(enc, S)
    recs.append(enc.record(12, enc.u32(0) + enc.u32(ix["machine"]) + enc.u32(0) + enc.u32(UNDEF32)))
    for r in (0, 1):
        recs.append(enc.record(13, enc.u32(r) + enc.u32(ix[f"MPI Rank {r}"]) + b"\x01" + enc.u32(0)))
        recs.append(enc.record(14, enc.comp(r) + enc.u32(ix["Master thread"]) + b"\x01" + enc.comp(0) + enc.u32(r)))
    for rid, name in enumerate(RMA_REGIONS):  # main: FUNCTION of USER; the rest RMA (29) of MPI (4)
        role, par, src = (1, 1, "t.c") if rid == 0 else (29, 4, "MPI")
        body = (enc.u32(rid) + enc.u32(ix[name]) + enc.u32(0) + b"\0" + enc.u32(ix[src]) + enc.u32(0)
                + enc.u32(0) + enc.u32(ix[name]) + bytes([role, par]) + enc.u32(0))
        recs.append(enc.record(15, body))

    def group(ref, gtype, members):
        body = enc.u32(ref) + enc.u32(0) + b"\0" + enc.u32(len(members))
        return enc.record(18, body + b"".join(enc.comp(m) for m in members) + bytes([gtype, 4]) + enc.u32(0))

    recs.append(group(0, 4, [0, 1]))  # MPI COMM_LOCATIONS
    recs.append(group(2, 5, [0, 1]))  # world
    recs.append(group(GROUP_ONE, 5, [1]))
    recs.append(group(GROUP_ZERO, 5, [0]))
    recs.append(enc.record(22, enc.u32(0) + enc.u32(ix["MPI_COMM_WORLD"]) + enc.u32(2) + enc.u32(UNDEF32)))
    for ref, name in ((WIN_A, "win A"), (WIN_B, "win B")):  # (OTF2 3.0's type and flags after the comm)
        recs.append(enc.record(24, enc.u32(ref) + enc.u32(ix[name]) + enc.u32(0) + b"\x00" + enc.u32(0)))
    return enc.header(1, 0) + b"".join(recs) + b"\x02\x01", len(recs)


def rma_events(enc: Enc, rank: int) -> list[tuple[int, bytes]]:
    """Rank 0: create A, allocate B, post to {1}, a test that finds the epoch open, wait, fence on B, free B
    and A.  Rank 1 (mapped ids): the same collectives, start on {0}, a 40-byte put to rank 0, complete, an
    exclusive lock on rank 0 of B (a failed try, a request, then the acquire), a fetch-and-op, a local
    flush, the unlock.  Times are microseconds."""
    E = []
    reg = {name: i for i, name in enumerate(RMA_REGIONS)}
    win = {WIN_A: WIN_A, WIN_B: WIN_B} if rank == 0 else {g: k for k, g in RMA_WIN_MAP.items()}
    grp = {GROUP_ONE: GROUP_ONE} if rank == 0 else {GROUP_ZERO: 0}
    u = enc.u32

    def ev(us, rtype, body=b""):
        E.append((us * 1000, bytes([rtype]) + body if rtype in SINGLETONS else enc.record(rtype, body)))

    def coll(t0, t1, name, op, level, w):
        ev(t0, E_ENTER, u(reg[name]))
        ev(t0, E_RMA_COLL_BEGIN)
        if op in (17, 19, 21):
            ev(t1, E_WIN_CREATE, u(win[w]))
        elif op in (18, 20, 22):
            ev(t1, E_WIN_DESTROY, u(win[w]))
        ev(t1, E_RMA_COLL_END, bytes([op]) + u(level) + u(win[w]) + u(UNDEF32) + enc.comp(0) + enc.comp(0))
        ev(t1, E_LEAVE, u(reg[name]))

    def call(t0, t1, name, *records):
        ev(t0, E_ENTER, u(reg[name]))
        for t, rtype, body in records:
            ev(t, rtype, body)
        ev(t1, E_LEAVE, u(reg[name]))

    ev(1000, E_ENTER, u(reg["main"]))
    coll(1100, 1200, "MPI_Win_create", 17, 1, WIN_A)  # CREATE_HANDLE
    coll(1300, 1400, "MPI_Win_allocate", 21 if rank == 0 else 19, 1, WIN_B)  # CREATE_HANDLE_AND_ALLOCATE, ALLOCATE
    a = u(win[WIN_A])
    if rank == 0:
        g = u(grp[GROUP_ONE])
        call(1500, 1600, "MPI_Win_post", (1600, E_GROUP_SYNC, u(1) + a + g))
        call(1700, 1750, "MPI_Win_test", (1750, E_GROUP_SYNC, u(0) + a + g))  # level NONE: still open
        call(1800, 2500, "MPI_Win_wait", (2500, E_GROUP_SYNC, u(3) + a + g))
    else:
        g = u(grp[GROUP_ZERO])
        call(1500, 1650, "MPI_Win_start", (1650, E_GROUP_SYNC, u(1) + a + g))
        call(1700, 1720, "MPI_Put", (1710, E_RMA_PUT, a + u(0) + enc.comp(40) + enc.comp(1)))
        call(1800, 2400, "MPI_Win_complete", (2400, E_OP_COMPLETE_REMOTE, a + enc.comp(1)),
             (2400, E_GROUP_SYNC, u(3) + a + g))
    coll(2600, 2700, "MPI_Win_fence", 0, 3, WIN_B)  # BARRIER
    if rank == 1:
        bw = u(win[WIN_B])
        call(2740, 2790, "MPI_Win_lock", (2750, E_TRY_LOCK, bw + u(0) + enc.comp(0) + b"\x00"),
             (2760, E_REQUEST_LOCK, bw + u(0) + enc.comp(0) + b"\x00"),
             (2780, E_ACQUIRE_LOCK, bw + u(0) + enc.comp(0) + b"\x00"))
        call(2800, 2820, "MPI_Fetch_and_op",
             (2810, E_RMA_ATOMIC, bw + u(0) + b"\x07" + enc.comp(8) + enc.comp(8) + enc.comp(2)),
             (2815, E_OP_COMPLETE_BLOCKING, bw + enc.comp(2)))
        call(2830, 2840, "MPI_Win_flush_local", (2835, E_RMA_SYNC, bw + u(0) + b"\x00"))
        call(2845, 2860, "MPI_Win_unlock", (2850, E_RELEASE_LOCK, bw + u(0) + enc.comp(0)))
        call(2870, 2880, "MPI_Put", (2875, E_RMA_PUT, u(77) + u(0) + enc.comp(4) + enc.comp(3)))  # no window 77
    coll(2900, 2950, "MPI_Win_free", 22 if rank == 0 else 20, 1, WIN_B)  # DESTROY_HANDLE_AND_DEALLOCATE, DEALLOCATE
    coll(3000, 3100, "MPI_Win_free", 18, 1, WIN_A)  # DESTROY_HANDLE
    ev(4000, E_LEAVE, u(reg["main"]))
    return E


def write_rma_archive(root: Path, big: bool = False) -> Path:
    """The two-rank RMA archive under `root`; returns the anchor file's path."""
    enc = Enc(big)
    root.mkdir(parents=True, exist_ok=True)
    (root / "traces").mkdir(exist_ok=True)
    defs, n_defs = rma_defs(enc)
    anchor = enc.header(0, 0, chunked=False) + b"OTF2\0" + bytes([3, 2, 3, 0, 0])
    anchor += enc.full(CHUNK) + enc.full(4 * CHUNK) + b"\x01\x01" + enc.full(2) + enc.full(n_defs)
    anchor += b"machine\0test writer\0\0" + enc.full(0, 4) + enc.full(0) + enc.full(0, 4) * 2 + b"\x02"
    (root / "traces.otf2").write_bytes(anchor)
    (root / "traces.def").write_bytes(defs)
    (root / "traces" / "0.def").write_bytes(enc.header(1, 0) + b"\x02\x01")
    wins = enc.record(5, b"\x08" + enc.comp(len(RMA_WIN_MAP)) + b"\x01"
                      + b"".join(enc.comp(k) + enc.comp(v) for k, v in RMA_WIN_MAP.items()))
    groups = enc.record(5, b"\x04" + enc.comp(len(RMA_GROUP_MAP)) + b"\0" + b"".join(enc.comp(g) for g in RMA_GROUP_MAP))
    (root / "traces" / "1.def").write_bytes(enc.header(1, 0) + wins + groups + b"\x02\x01")
    for r in (0, 1):
        (root / "traces" / f"{r}.evt").write_bytes(chunked_file(enc, rma_events(enc, r)))
    return root / "traces.otf2"
