"""On-disk layout of the native trace format (``.elg``, format version 2.3).

This module is the single source of truth for every number the format uses:
magic bytes, header and block layouts, definition and event record codes,
region paradigms and roles, and the numpy dtype of an event record.  The C
runtime mirrors it in ``runtime/include/elg_format.h``; ``docs/format.md``
explains it in prose.  Nothing here reads or writes files.

Overview of a file::

    file header (64 bytes)
    block*            each: block header (32 bytes) + payload + 0-7 pad bytes
    index block       kind INDEX, the footer: one entry per block before it
    trailer (16 bytes) u64 offset of the index block's header, magic b"ELGINDEX"

Every multi-byte number is in the byte order named by the header (the writers
here always write little-endian; readers accept both).
"""

from __future__ import annotations

import enum
import struct

import numpy as np

# --------------------------------------------------------------------------
# File header
# --------------------------------------------------------------------------
#: PNG-style magic: the high bit and the CR-LF / Ctrl-Z / LF bytes catch
#: 7-bit transfers and text-mode line-ending conversions.  Distinct from
#: EPILOG 1.x's ``b"EPILOG\0"`` so readers can tell the two apart.
MAGIC = b"\x89ELG\r\n\x1a\n"
VERSION_MAJOR = 2
VERSION_MINOR = 3  # 2.1: OpenMP task and thread (pthread) events, their roles and the PTHREAD paradigm; 2.2: MPI_FILE_IO;
# 2.3: MPI one-sided communication (WINDOW definitions, MPI_RMA_PUT / _GET / _ATOMIC / _SYNC events)
FILE_HEADER_SIZE = 64
CREATOR_SIZE = 44
HEADER_CRC_OFFSET = 60  # u32 CRC-32 of header bytes 0..59

BYTE_ORDER_LITTLE = 1  # same codes as EPILOG 1.x
BYTE_ORDER_BIG = 2

#: header flags
FLAG_FINISHED = 0x01  # the writer reached its normal end (finalize); absent after a crash

# magic(8s) byte_order(B) flags(B) major(H) minor(H) header_size(H) creator(44s) header_crc32(I)
# header_crc32 is the CRC-32 of bytes 0..59, so a damaged creator or flag is caught too.
# The struct is built per byte order because byte_order itself is one byte.
FILE_HEADER_FMT = "8sBBHHH44sI"


def file_header_struct(byte_order: int) -> struct.Struct:
    return struct.Struct(("<" if byte_order == BYTE_ORDER_LITTLE else ">") + FILE_HEADER_FMT)


# --------------------------------------------------------------------------
# Blocks
# --------------------------------------------------------------------------
BLOCK_MAGIC = b"ELGB"
BLOCK_HEADER_SIZE = 32
BLOCK_ALIGN = 8  # payloads are padded with zero bytes so the next block header is 8-aligned

# magic(4s) kind(H) reserved(H) location(I) payload_crc32(I) payload_length(Q) count(I) header_crc32(I)
# header_crc32 is the CRC-32 (zlib / IEEE 802.3) of the first 28 bytes.
BLOCK_HEADER_FMT = "4sHHIIQII"


class BlockKind(enum.IntEnum):
    DEFINITIONS = 1  # payload: definition records; location = NO_ID
    EVENTS = 2  # payload: count fixed-size event records of one location
    INDEX = 3  # payload: count index entries; always the last block


# Index entry: kind(H) reserved(H) location(I) offset of block header(Q)
#              payload_length(Q) count(Q) first_time(Q) last_time(Q)  -> 48 bytes
INDEX_ENTRY_FMT = "HHIQQQQQ"
INDEX_ENTRY_SIZE = 48

TRAILER_MAGIC = b"ELGINDEX"
TRAILER_SIZE = 16  # u64 offset of the INDEX block header, then TRAILER_MAGIC

# --------------------------------------------------------------------------
# Sentinels
# --------------------------------------------------------------------------
NO_ID = 0xFFFFFFFF  # absent id, line, rank or root
ANY = 0xFFFFFFFE  # MPI_ANY_SOURCE / MPI_ANY_TAG in MPI_RECV_REQUEST

# --------------------------------------------------------------------------
# Definition records (payload of a DEFINITIONS block)
# --------------------------------------------------------------------------
# Each record: type(H) reserved(H) body_length(I) then body_length bytes.
# There is no upper limit on a body's length other than the block's.
DEF_RECORD_HEADER_FMT = "HHI"
DEF_RECORD_HEADER_SIZE = 8


class DefType(enum.IntEnum):
    STRING = 1  # id(I) + UTF-8 bytes (body_length - 4 of them, no NUL)
    SOURCE_FILE = 2  # id(I) name(I: string id)
    REGION = 3  # id(I) name(I) file(I) begin_line(I) end_line(I) paradigm(B) role(B) reserved(H)
    CALLSITE = 4  # id(I) file(I) line(I) region_entered(I)
    MACHINE = 5  # id(I) name(I)
    NODE = 6  # id(I) machine(I) name(I)
    PROCESS = 7  # id(I: MPI rank in MPI_COMM_WORLD, 0 for non-MPI) node(I) name(I)
    LOCATION = 8  # id(I: global, dense 0..L-1) process(I) thread(I: number within process) name(I)
    GROUP = 9  # id(I) count(I) ranks(count x I: global ranks, in group order)
    COMM = 10  # id(I) group(I) name(I) parent(I: comm it was derived from, or NO_ID)
    LOCK = 11  # id(I) kind(B) reserved(3x) name(I)
    CLOCK = 12  # process(I) reserved(I) ticks_per_second(d) origin(Q: tick that is local time 0)
    OFFSET = 13  # process(I) reserved(I) local_time(d: seconds) offset(d: seconds to add)
    METRIC = 14  # id(I) name(I) unit(I) dtype(B) mode(B) reserved(H)
    ATTRIBUTE = 15  # key(I: string id) value(I: string id); free-form facts about the run
    WINDOW = 16  # id(I) comm(I: the communicator it was created over) name(I: string id or NO_ID) (2.3)


#: struct formats of the fixed-size bodies (byte-order prefix added by the codec)
DEF_BODY_FMT = {
    DefType.SOURCE_FILE: "II",
    DefType.REGION: "IIIIIBBH",
    DefType.CALLSITE: "IIII",
    DefType.MACHINE: "II",
    DefType.NODE: "III",
    DefType.PROCESS: "III",
    DefType.LOCATION: "IIII",
    DefType.COMM: "IIII",
    DefType.LOCK: "IB3xI",
    DefType.CLOCK: "IIdQ",
    DefType.OFFSET: "IIdd",
    DefType.METRIC: "IIIBBH",
    DefType.ATTRIBUTE: "II",
    DefType.WINDOW: "III",
}
# STRING and GROUP have variable-length bodies, described above.


class Paradigm(enum.IntEnum):
    UNKNOWN = 0
    USER = 1  # user-defined regions (API, POMP user regions)
    COMPILER = 2  # functions from -finstrument-functions or stack unwinding
    MPI = 3
    OPENMP = 4
    MEASUREMENT = 5  # the measurement system itself (buffer flush, pause)
    PTHREAD = 6  # POSIX threads (2.1)


class Role(enum.IntEnum):
    FUNCTION = 0
    USER_REGION = 1
    LOOP = 2
    # MPI
    MPI_POINT2POINT = 10  # send, recv, wait, test, probe, request handling
    MPI_COLL_BARRIER = 11
    MPI_COLL_ONE2ALL = 12  # Bcast, Scatter(v)
    MPI_COLL_ALL2ONE = 13  # Reduce, Gather(v)
    MPI_COLL_ALL2ALL = 14  # Allreduce, Allgather(v), Alltoall(v/w), Reduce_scatter(_block)
    MPI_COLL_OTHER = 15  # Scan, Exscan
    MPI_INIT_FINALIZE = 16  # Init, Init_thread, Finalize
    MPI_FILE_IO = 17
    MPI_RMA = 18
    MPI_OTHER = 19  # communicator and group management, everything else
    # OpenMP
    OMP_PARALLEL = 30
    OMP_LOOP = 31
    OMP_SECTIONS = 32
    OMP_SECTION = 33
    OMP_SINGLE = 34
    OMP_SINGLE_BODY = 35  # the thread that executes a single's block
    OMP_MASTER = 36  # master / masked
    OMP_WORKSHARE = 37
    OMP_CRITICAL = 38  # the whole critical construct, wait included
    OMP_CRITICAL_BODY = 39  # the protected block, after the lock is acquired
    OMP_ATOMIC = 40
    OMP_BARRIER = 41  # explicit barrier
    OMP_IMPLICIT_BARRIER = 42  # implicit barrier at the end of parallel / loop / sections / single
    OMP_FLUSH = 43
    OMP_ORDERED = 44
    OMP_ORDERED_BODY = 45
    OMP_LOCK_API = 46  # omp_set_lock, omp_unset_lock, omp_test_lock, the nest variants, init/destroy
    OMP_TASK = 47  # an explicit task's execution (each fragment of it: OMP_TASK_BEGIN .. OMP_TASK_END)
    OMP_TASKWAIT = 48
    OMP_TASKGROUP = 49  # a taskgroup construct (2.1); the wait at its end is a region of role OMP_TASKWAIT
    # measurement
    MEASUREMENT_FLUSH = 60  # a full buffer written to disk: overhead ("TRACING")
    MEASUREMENT_PAUSE = 61
    # threads (2.1): POSIX threads API calls
    THREAD_CREATE = 70  # pthread_create
    THREAD_JOIN = 71  # pthread_join (waiting for a thread to end)
    THREAD_MANAGEMENT = 72  # pthread_exit, pthread_detach, pthread_cancel, ...
    THREAD_MUTEX = 73  # pthread_mutex_lock / trylock / timedlock / unlock
    THREAD_CONDITION = 74  # pthread_cond_wait / timedwait / signal / broadcast


class LockKind(enum.IntEnum):
    OMP_LOCK = 1
    OMP_NEST_LOCK = 2
    OMP_CRITICAL = 3  # one lock per critical name ("" for the unnamed critical)
    OMP_ORDERED = 4
    OMP_ATOMIC = 5
    USER = 6
    PTHREAD_MUTEX = 7  # a pthread_mutex_t (also handed over by condition waits) (2.1)


class MetricDtype(enum.IntEnum):
    UINT64 = 0
    DOUBLE = 1  # value stored as the bits of an IEEE double


class MetricMode(enum.IntEnum):
    ACCUMULATED = 0  # a counter: the difference between two readings is the count
    ABSOLUTE = 1  # a sampled value


# --------------------------------------------------------------------------
# Event records (payload of an EVENTS block)
# --------------------------------------------------------------------------
EVENT_RECORD_SIZE = 40


def event_dtype(byte_order: int = BYTE_ORDER_LITTLE) -> np.dtype:
    """The structured dtype of one 40-byte event record in the given byte order."""
    e = "<" if byte_order == BYTE_ORDER_LITTLE else ">"
    return np.dtype(
        [
            ("time", e + "u8"),  # ticks of the location's process clock
            ("type", "u1"),
            ("flags", "u1"),
            ("reserved", e + "u2"),
            ("a", e + "u4"),
            ("b", e + "u4"),
            ("c", e + "u4"),
            ("d", e + "u8"),
            ("e", e + "u8"),
        ]
    )


EVENT_DTYPE = event_dtype(BYTE_ORDER_LITTLE)
assert EVENT_DTYPE.itemsize == EVENT_RECORD_SIZE


class EventType(enum.IntEnum):
    """Event codes and the meaning of the generic fields a, b, c, d, e.

    ======================  ===========  ========  ============  =============  ============
    type                    a            b         c             d              e
    ======================  ===========  ========  ============  =============  ============
    ENTER                   region       callsite  team id [1]   thread num [1] 0
    EXIT                    region       0         0             0              0
    MPI_SEND                dest rank    comm      tag           bytes          request [2]
    MPI_RECV                source rank  comm      tag           bytes          request [2]
    MPI_SEND_COMPLETE       0            0         0             0              request
    MPI_RECV_REQUEST        source|ANY   comm      tag|ANY       0              request
    MPI_REQUEST_CANCELLED   0            0         0             0              request
    MPI_COLLEXIT            region       comm      root|NO_ID    bytes sent     bytes received
    OMP_FORK                team id      0         team size     0              0
    OMP_JOIN                team id      0         team size     0              0
    OMP_COLLEXIT            region       team id   0             0              0
    OMP_ACQUIRE_LOCK        lock         0         0             order [3]      0
    OMP_RELEASE_LOCK        lock         0         0             order [3]      0
    COUNTER                 metric       0         0             value          0
    OMP_TASK_CREATE [4]     task region  0         dependences   task id        parent task
    OMP_TASK_BEGIN [4]      task region  0         TaskSwitch    task id        0
    OMP_TASK_END [4]        task region  0         TaskSwitch    task id        0
    OMP_TASK_DEPENDENCE     0            0         0             predecessor    successor
    THREAD_CREATE [5]       0            0         0             thread id      0
    THREAD_BEGIN [5]        0            0         0             thread id      0
    THREAD_END [5]          0            0         0             thread id      0
    THREAD_JOIN [5]         0            0         0             thread id      0
    MPI_FILE_IO [6]         0            0         0             bytes          0
    MPI_RMA_PUT [7]         window       target    0             bytes sent     0
    MPI_RMA_GET [7]         window       target    0             bytes rcvd     0
    MPI_RMA_ATOMIC [7]      window       target    RmaAtomic     bytes sent     bytes rcvd
    MPI_RMA_SYNC [7]        window       see [7]   RmaSync       0              0
    ======================  ===========  ========  ============  =============  ============

    [1] only on ENTER of a region whose role is OMP_PARALLEL; NO_ID otherwise.
        Team ids are unique within a process; thread num is the thread's
        number inside that team (0 = the team's master).
    [2] 0 for blocking calls; otherwise the request id (unique per location
        while the request is live) that ties the post to its completion.
    [3] acquisition order of that lock, counted from 1 in the order the
        lock was acquired by any thread of the process.
    [4] (2.1) task ids are unique within a process and never 0; parent 0 is
        an implicit task.  flags of OMP_TASK_CREATE: TaskFlag.  Each piece
        of a task's execution is ENTER(task region), OMP_TASK_BEGIN, ...,
        OMP_TASK_END, EXIT(task region), all on one location.
    [5] (2.1) thread ids (one per pthread_create) are unique within a
        process and never 0.  THREAD_BEGIN is the first and THREAD_END the
        last event of a created thread's lifetime on its location; a location
        may hold several lifetimes one after another.
    [6] (2.2) one MPI file read or write, inside the MPI_File_* call that
        did it: the bytes it asked to transfer (count x type size); flags:
        FileIoFlag (read or write, collective, non-blocking).
    [7] (2.3) MPI one-sided communication, inside the MPI call that did it
        (between its ENTER and EXIT; analyses use the call's times): a window
        (WINDOW definition), the target as a global rank; flags of the
        transfers: RmaFlag; of MPI_RMA_SYNC: RmaSyncFlag.  b of MPI_RMA_SYNC
        is a GROUP id (POST, START, COMPLETE, WAIT, TEST), a target rank
        (LOCK, UNLOCK, FLUSH) or NO_ID (see RmaSync).

    Ranks (dest, source, root) are global ranks (MPI_COMM_WORLD), never
    communicator-local ones.  Every EXIT, MPI_COLLEXIT and OMP_COLLEXIT
    names the region it leaves.  COUNTER records apply to the event just
    before them and carry the same time.
    """

    ENTER = 1
    EXIT = 2
    MPI_SEND = 3
    MPI_RECV = 4
    MPI_SEND_COMPLETE = 5
    MPI_RECV_REQUEST = 6
    MPI_REQUEST_CANCELLED = 7
    MPI_COLLEXIT = 8
    OMP_FORK = 10
    OMP_JOIN = 11
    OMP_COLLEXIT = 12
    OMP_ACQUIRE_LOCK = 13
    OMP_RELEASE_LOCK = 14
    COUNTER = 20
    # 2.1: OpenMP tasks
    OMP_TASK_CREATE = 15
    OMP_TASK_BEGIN = 16
    OMP_TASK_END = 17
    OMP_TASK_DEPENDENCE = 18
    # 2.1: threads created by the program (POSIX threads)
    THREAD_CREATE = 21
    THREAD_BEGIN = 22
    THREAD_END = 23
    THREAD_JOIN = 24
    # 2.2: MPI file I/O
    MPI_FILE_IO = 25
    # 2.3: MPI one-sided communication
    MPI_RMA_PUT = 26
    MPI_RMA_GET = 27
    MPI_RMA_ATOMIC = 28
    MPI_RMA_SYNC = 29


#: event types that close a region (EXIT and the collective exits)
EXIT_TYPES = (EventType.EXIT, EventType.MPI_COLLEXIT, EventType.OMP_COLLEXIT)


class TaskFlag(enum.IntFlag):
    """flags of OMP_TASK_CREATE (2.1)"""

    UNDEFERRED = 0x01  # executed at once by the creating thread (if(0), included)
    UNTIED = 0x02
    FINAL = 0x04
    MERGEABLE = 0x08
    MERGED = 0x10  # its data environment is the creator's (no own execution fragment may follow)


class TaskSwitch(enum.IntEnum):
    """``c`` of OMP_TASK_BEGIN and OMP_TASK_END (2.1): why the fragment begins or ends"""

    START = 0  # BEGIN: the task's first fragment
    RESUME = 1  # BEGIN: a later fragment (an untied task's next part, after a yield)
    COMPLETE = 2  # END: the task is done
    SUSPEND = 3  # END: it continues in a later fragment (possibly on another location)
    CANCEL = 4  # END: cancelled; the task is done
    DETACH = 5  # END: its body is done; an allow-completion event completes it later


class SendFlag(enum.IntFlag):
    """flags of MPI_SEND"""

    SYNCHRONOUS = 0x01  # MPI_Ssend / MPI_Issend
    BUFFERED = 0x02  # MPI_Bsend / MPI_Ibsend
    READY = 0x04  # MPI_Rsend / MPI_Irsend


class FileIoFlag(enum.IntFlag):
    """flags of MPI_FILE_IO (2.2)"""

    READ = 0x01
    WRITE = 0x02
    COLLECTIVE = 0x04  # MPI_File_read_all, _write_at_all, _read_ordered, ... (every process of the file's group)
    NONBLOCKING = 0x08  # MPI_File_iread, ... (bytes counted when posted)


class RmaFlag(enum.IntFlag):
    """flags of MPI_RMA_PUT, MPI_RMA_GET and MPI_RMA_ATOMIC (2.3)"""

    NONBLOCKING = 0x01  # MPI_Rput, MPI_Rget, MPI_Raccumulate, MPI_Rget_accumulate (bytes counted when posted)


class RmaAtomic(enum.IntEnum):
    """``c`` of MPI_RMA_ATOMIC (2.3): which accumulating operation"""

    ACCUMULATE = 0  # MPI_Accumulate, MPI_Raccumulate: d = bytes sent
    GET_ACCUMULATE = 1  # MPI_Get_accumulate, MPI_Rget_accumulate: d sent (0 for MPI_NO_OP), e received
    FETCH_AND_OP = 2  # MPI_Fetch_and_op: d = e = type size (d = 0 for MPI_NO_OP)
    COMPARE_AND_SWAP = 3  # MPI_Compare_and_swap: d = 2 x type size (origin and compare), e = type size


class RmaSync(enum.IntEnum):
    """``c`` of MPI_RMA_SYNC (2.3): which window synchronisation, and what ``b`` holds"""

    CREATE = 1  # MPI_Win_create / _allocate / _allocate_shared / _create_dynamic (collective); b NO_ID
    FREE = 2  # MPI_Win_free (collective); b NO_ID
    FENCE = 3  # MPI_Win_fence (collective); b NO_ID
    POST = 4  # MPI_Win_post: an exposure epoch begins; b = group of the origins
    START = 5  # MPI_Win_start: an access epoch begins; b = group of the targets
    COMPLETE = 6  # MPI_Win_complete: the access epoch ends; b = group of its START
    WAIT = 7  # MPI_Win_wait: the exposure epoch ends; b = group of its POST
    TEST = 8  # MPI_Win_test that returned true (ends the exposure epoch); b = group of its POST
    LOCK = 9  # MPI_Win_lock; b = target rank; flag EXCLUSIVE for MPI_LOCK_EXCLUSIVE
    UNLOCK = 10  # MPI_Win_unlock; b = target rank
    LOCK_ALL = 11  # MPI_Win_lock_all (a shared lock on every process of the window); b NO_ID
    UNLOCK_ALL = 12  # MPI_Win_unlock_all; b NO_ID
    FLUSH = 13  # MPI_Win_flush (b = target) / _flush_all (b NO_ID); flag LOCAL for the _local forms
    SYNC = 14  # MPI_Win_sync; b NO_ID


#: RmaSync kinds that are collective over the window's communicator
RMA_COLLECTIVE_SYNCS = (RmaSync.CREATE, RmaSync.FREE, RmaSync.FENCE)
#: RmaSync kinds whose b is a GROUP id
RMA_GROUP_SYNCS = (RmaSync.POST, RmaSync.START, RmaSync.COMPLETE, RmaSync.WAIT, RmaSync.TEST)


class RmaSyncFlag(enum.IntFlag):
    """flags of MPI_RMA_SYNC (2.3)"""

    EXCLUSIVE = 0x01  # LOCK with MPI_LOCK_EXCLUSIVE (absent: shared)
    LOCAL = 0x02  # FLUSH from MPI_Win_flush_local / _flush_local_all


class RecvFlag(enum.IntFlag):
    """flags of MPI_RECV"""

    ANY_SOURCE = 0x01  # posted with MPI_ANY_SOURCE; a holds the actual source
    ANY_TAG = 0x02  # posted with MPI_ANY_TAG; c holds the actual tag
