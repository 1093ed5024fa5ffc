/*
 * elg_format.h - byte layout of the .elg trace format (version 2.1) for the C runtime.
 *
 * tracefmt/layout.py is the source of truth; this header mirrors it number for number.
 * If the two ever disagree, layout.py wins and this file is the bug; tests/runtime/test_format_header.py
 * compares every constant, enum and the event record with layout.py.
 * The runtime always writes little-endian files.
 */
#ifndef ELG_FORMAT_H
#define ELG_FORMAT_H

#include <stdint.h>

#define ELG_MAGIC "\x89" "ELG\r\n\x1a\n" /* 8 bytes */
#define ELG_VERSION_MAJOR 2
#define ELG_VERSION_MINOR 3
#define ELG_FILE_HEADER_SIZE 64
#define ELG_CREATOR_SIZE 44
#define ELG_HEADER_CRC_OFFSET 60 /* u32 CRC-32 of header bytes 0..59 */
#define ELG_BYTE_ORDER_LITTLE 1
#define ELG_BYTE_ORDER_BIG 2
#define ELG_FLAG_FINISHED 0x01

#define ELG_BLOCK_MAGIC "ELGB"
#define ELG_BLOCK_HEADER_SIZE 32
#define ELG_BLOCK_ALIGN 8
enum elg_block_kind { ELG_BLOCK_DEFINITIONS = 1, ELG_BLOCK_EVENTS = 2, ELG_BLOCK_INDEX = 3 };

#define ELG_INDEX_ENTRY_SIZE 48
#define ELG_TRAILER_MAGIC "ELGINDEX"
#define ELG_TRAILER_SIZE 16

#define ELG_NO_ID 0xFFFFFFFFu
#define ELG_ANY 0xFFFFFFFEu

#define ELG_DEF_RECORD_HEADER_SIZE 8
enum elg_def_type {
    ELG_DEF_STRING = 1,
    ELG_DEF_SOURCE_FILE = 2,
    ELG_DEF_REGION = 3,
    ELG_DEF_CALLSITE = 4,
    ELG_DEF_MACHINE = 5,
    ELG_DEF_NODE = 6,
    ELG_DEF_PROCESS = 7,
    ELG_DEF_LOCATION = 8,
    ELG_DEF_GROUP = 9,
    ELG_DEF_COMM = 10,
    ELG_DEF_LOCK = 11,
    ELG_DEF_CLOCK = 12,
    ELG_DEF_OFFSET = 13,
    ELG_DEF_METRIC = 14,
    ELG_DEF_ATTRIBUTE = 15,
    ELG_DEF_WINDOW = 16, /* 2.3: id, comm, name (an MPI one-sided window) */
};

enum elg_paradigm {
    ELG_PARADIGM_UNKNOWN = 0,
    ELG_PARADIGM_USER = 1,
    ELG_PARADIGM_COMPILER = 2,
    ELG_PARADIGM_MPI = 3,
    ELG_PARADIGM_OPENMP = 4,
    ELG_PARADIGM_MEASUREMENT = 5,
    ELG_PARADIGM_PTHREAD = 6,
};

enum elg_role {
    ELG_ROLE_FUNCTION = 0,
    ELG_ROLE_USER_REGION = 1,
    ELG_ROLE_LOOP = 2,
    ELG_ROLE_MPI_POINT2POINT = 10,
    ELG_ROLE_MPI_COLL_BARRIER = 11,
    ELG_ROLE_MPI_COLL_ONE2ALL = 12,
    ELG_ROLE_MPI_COLL_ALL2ONE = 13,
    ELG_ROLE_MPI_COLL_ALL2ALL = 14,
    ELG_ROLE_MPI_COLL_OTHER = 15,
    ELG_ROLE_MPI_INIT_FINALIZE = 16,
    ELG_ROLE_MPI_FILE_IO = 17,
    ELG_ROLE_MPI_RMA = 18,
    ELG_ROLE_MPI_OTHER = 19,
    ELG_ROLE_OMP_PARALLEL = 30,
    ELG_ROLE_OMP_LOOP = 31,
    ELG_ROLE_OMP_SECTIONS = 32,
    ELG_ROLE_OMP_SECTION = 33,
    ELG_ROLE_OMP_SINGLE = 34,
    ELG_ROLE_OMP_SINGLE_BODY = 35,
    ELG_ROLE_OMP_MASTER = 36,
    ELG_ROLE_OMP_WORKSHARE = 37,
    ELG_ROLE_OMP_CRITICAL = 38,
    ELG_ROLE_OMP_CRITICAL_BODY = 39,
    ELG_ROLE_OMP_ATOMIC = 40,
    ELG_ROLE_OMP_BARRIER = 41,
    ELG_ROLE_OMP_IMPLICIT_BARRIER = 42,
    ELG_ROLE_OMP_FLUSH = 43,
    ELG_ROLE_OMP_ORDERED = 44,
    ELG_ROLE_OMP_ORDERED_BODY = 45,
    ELG_ROLE_OMP_LOCK_API = 46,
    ELG_ROLE_OMP_TASK = 47,
    ELG_ROLE_OMP_TASKWAIT = 48,
    ELG_ROLE_OMP_TASKGROUP = 49,
    ELG_ROLE_MEASUREMENT_FLUSH = 60,
    ELG_ROLE_MEASUREMENT_PAUSE = 61,
    ELG_ROLE_THREAD_CREATE = 70,
    ELG_ROLE_THREAD_JOIN = 71,
    ELG_ROLE_THREAD_MANAGEMENT = 72,
    ELG_ROLE_THREAD_MUTEX = 73,
    ELG_ROLE_THREAD_CONDITION = 74,
};

enum elg_lock_kind {
    ELG_LOCK_OMP_LOCK = 1,
    ELG_LOCK_OMP_NEST_LOCK = 2,
    ELG_LOCK_OMP_CRITICAL = 3,
    ELG_LOCK_OMP_ORDERED = 4,
    ELG_LOCK_OMP_ATOMIC = 5,
    ELG_LOCK_USER = 6,
    ELG_LOCK_PTHREAD_MUTEX = 7,
};

#define ELG_EVENT_RECORD_SIZE 40
enum elg_event_type {
    ELG_ENTER = 1,
    ELG_EXIT = 2,
    ELG_MPI_SEND = 3,
    ELG_MPI_RECV = 4,
    ELG_MPI_SEND_COMPLETE = 5,
    ELG_MPI_RECV_REQUEST = 6,
    ELG_MPI_REQUEST_CANCELLED = 7,
    ELG_MPI_COLLEXIT = 8,
    ELG_OMP_FORK = 10,
    ELG_OMP_JOIN = 11,
    ELG_OMP_COLLEXIT = 12,
    ELG_OMP_ACQUIRE_LOCK = 13,
    ELG_OMP_RELEASE_LOCK = 14,
    ELG_COUNTER = 20,
    ELG_OMP_TASK_CREATE = 15,     /* a task region, c dependences, d task id, e parent task id (0: implicit) */
    ELG_OMP_TASK_BEGIN = 16,      /* after ENTER(task region): a task region, c elg_task_switch, d task id */
    ELG_OMP_TASK_END = 17,        /* before EXIT(task region): a task region, c elg_task_switch, d task id */
    ELG_OMP_TASK_DEPENDENCE = 18, /* d predecessor task id, e successor task id */
    ELG_THREAD_CREATE = 21,       /* d thread id (unique per process, from 1) */
    ELG_THREAD_BEGIN = 22,
    ELG_THREAD_END = 23,
    ELG_THREAD_JOIN = 24,
    ELG_MPI_FILE_IO = 25,         /* 2.2: d bytes asked to read or write; flags elg_file_io_flag */
    /* 2.3: MPI one-sided communication, inside the call that made them; a window, b global target rank */
    ELG_MPI_RMA_PUT = 26,         /* d bytes sent; flags elg_rma_flag */
    ELG_MPI_RMA_GET = 27,         /* d bytes received; flags elg_rma_flag */
    ELG_MPI_RMA_ATOMIC = 28,      /* c elg_rma_atomic, d bytes sent, e bytes received; flags elg_rma_flag */
    ELG_MPI_RMA_SYNC = 29,        /* b group, target rank or NO_ID, c elg_rma_sync; flags elg_rma_sync_flag */
};

enum elg_task_flag {
    ELG_TASK_UNDEFERRED = 0x01,
    ELG_TASK_UNTIED = 0x02,
    ELG_TASK_FINAL = 0x04,
    ELG_TASK_MERGEABLE = 0x08,
    ELG_TASK_MERGED = 0x10,
};
enum elg_task_switch {
    ELG_TASK_SWITCH_START = 0,
    ELG_TASK_SWITCH_RESUME = 1,
    ELG_TASK_SWITCH_COMPLETE = 2,
    ELG_TASK_SWITCH_SUSPEND = 3,
    ELG_TASK_SWITCH_CANCEL = 4,
    ELG_TASK_SWITCH_DETACH = 5,
};
enum elg_send_flag { ELG_SEND_SYNCHRONOUS = 0x01, ELG_SEND_BUFFERED = 0x02, ELG_SEND_READY = 0x04 };
enum elg_file_io_flag { ELG_FILE_IO_READ = 0x01, ELG_FILE_IO_WRITE = 0x02, ELG_FILE_IO_COLLECTIVE = 0x04,
                        ELG_FILE_IO_NONBLOCKING = 0x08 };
enum elg_recv_flag { ELG_RECV_ANY_SOURCE = 0x01, ELG_RECV_ANY_TAG = 0x02 };
enum elg_rma_flag { ELG_RMA_NONBLOCKING = 0x01 };
enum elg_rma_atomic {
    ELG_RMA_ATOMIC_ACCUMULATE = 0,
    ELG_RMA_ATOMIC_GET_ACCUMULATE = 1,
    ELG_RMA_ATOMIC_FETCH_AND_OP = 2,
    ELG_RMA_ATOMIC_COMPARE_AND_SWAP = 3,
};
enum elg_rma_sync {
    ELG_RMA_SYNC_CREATE = 1,
    ELG_RMA_SYNC_FREE = 2,
    ELG_RMA_SYNC_FENCE = 3,
    ELG_RMA_SYNC_POST = 4,
    ELG_RMA_SYNC_START = 5,
    ELG_RMA_SYNC_COMPLETE = 6,
    ELG_RMA_SYNC_WAIT = 7,
    ELG_RMA_SYNC_TEST = 8,
    ELG_RMA_SYNC_LOCK = 9,
    ELG_RMA_SYNC_UNLOCK = 10,
    ELG_RMA_SYNC_LOCK_ALL = 11,
    ELG_RMA_SYNC_UNLOCK_ALL = 12,
    ELG_RMA_SYNC_FLUSH = 13,
    ELG_RMA_SYNC_SYNC = 14,
};
enum elg_rma_sync_flag { ELG_RMA_SYNC_EXCLUSIVE = 0x01, ELG_RMA_SYNC_LOCAL = 0x02 };

/* One event record exactly as stored on disk (little-endian host assumed). */
typedef struct elg_event {
    uint64_t time; /* ticks of the process clock */
    uint8_t type;
    uint8_t flags;
    uint16_t reserved;
    uint32_t a, b, c;
    uint64_t d, e;
} elg_event;

_Static_assert(sizeof(elg_event) == ELG_EVENT_RECORD_SIZE, "event record must be 40 bytes");

#endif
