/* xt.h - the internal interface of the tracing runtime (not installed).
 *
 * Every source file is one subsystem; each uses the others only through the functions and the
 * few global variables declared here (MPI layer: mpi_internal.h on top of this one).
 *   core.c       start-up (xt_init), configuration (xt_cfg), process facts (xt_proc), public C API
 *   process.c    launcher helpers and fork children (not traced), per-process output paths, warnings
 *   clock.c      time source (rdtsc / CLOCK_MONOTONIC) and its calibration
 *   buffer.c     per-thread event buffers, their flushes, reading a thread's events back
 *   spool.c      the spool file: full buffers (and the definitions they need) as an unfinished .elg on disk
 *   defs.c       region definitions (named and by code address), communicators, TRACING/PAUSING
 *   locks.c      lock definitions and the hand-over between holders (acquisition orders)
 *   serialize.c  this process's definitions as one byte string for the writer
 *   shutdown.c   closing open regions, writing the local trace, at-exit, _exit and crash (signal) paths
 *   writer.c     unify the definitions of all processes and write the .elg file
 *   sigsafe.c    memory and messages usable on the crash path
 *   resolve.c    addr2line name resolution and the EXPERT_FILTER filter
 *   ompt.c, tasks.c, pomp.c, pomp_fortran.c, cyg.c, unwind.c, papi.c, pthreads.c   the event sources
 *   mpi*.c       the PMPI layer (built once per MPI flavour; see mpi_internal.h) */
#ifndef XT_H
#define XT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "elg_format.h"

#define XT_HIDDEN __attribute__((visibility("hidden")))
#define XT_LIKELY(x) __builtin_expect(!!(x), 1)
#define XT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define XT_MAX_THREADS 1024
#define XT_STACK_MAX 256
#define XT_MAX_METRICS 8 /* hardware counters recorded at once (papi.c) */
#define XT_HELD_LOCKS 16 /* locks one thread holds at a time that are tracked with their order */

/* ---------------------------------------------------------------- clock */
extern XT_HIDDEN int xt_use_tsc;
static inline uint64_t xt_now(void)
{
    if (XT_LIKELY(xt_use_tsc)) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
XT_HIDDEN double xt_mono_seconds(void);
/* calibration (clock.c): start at xt_init, stop when recording stops (later calls keep the first) */
XT_HIDDEN void xt_clock_start(void);
XT_HIDDEN void xt_clock_stop(void);
XT_HIDDEN double xt_ticks_per_second(void);
XT_HIDDEN uint64_t xt_tick0(void); /* the tick at local time 0 */
XT_HIDDEN double xt_mono0(void);   /* CLOCK_MONOTONIC seconds at local time 0 */

/* ---------------------------------------------------------------- threads */
typedef struct xt_frame {
    uint32_t region;
    uint32_t team; /* team id for OpenMP barriers (closed by OMP_COLLEXIT), else NO_ID */
} xt_frame;

typedef struct xt_thread {
    elg_event *buf;
    uint32_t n;    /* records in buf */
    uint32_t size; /* records buf holds, not counting the 2 slots reserved for a flush's TRACING pair */
    uint32_t cap;  /* the fast path's limit: size, or 0 while a flush's TRACING pair waits (buffer.c) */
    /* the last flush's TRACING region, written before the first record stamped after it began */
    int flush_pending;
    uint64_t flush_enter, flush_exit;
    uint64_t spool_last_time; /* time of the last record in the spool */
    uint32_t thread_num;
    uint64_t spooled;      /* number of events in the spool file (spool.c) */
    struct xt_spool_block {
        uint64_t offset, first; /* an EVENTS block's payload in the spool, and its first event's index */
    } *blocks;
    uint32_t n_blocks, cap_blocks;
    int depth;             /* region nesting depth (may exceed XT_STACK_MAX; then not tracked) */
    xt_frame stack[XT_STACK_MAX];
    int in_mpi;            /* inside an MPI wrapper: nested MPI calls are not recorded */
    /* OpenMP: a work-sharing end held back until we know whether an implicit barrier follows */
    uint32_t held_exit_region;
    uint64_t held_exit_time;
    void *omp; /* per-thread OpenMP state (ompt.c) */
    void *tasks; /* per-thread OpenMP task state (tasks.c) */
    void *pthr;  /* per-thread POSIX threads state (pthreads.c) */
    /* a created thread's start routine, entered by pthreads.c: -finstrument-functions' enter and exit of the
     * same function at the bottom of the stack are that one call, not a second one (cyg.c) */
    uint32_t root_region; /* ELG_NO_ID if none */
    int root_merged;      /* the instrumented enter was merged: its exit is too */
    /* locks this thread holds, innermost last: the release record needs the acquisition's order */
    struct {
        uint32_t lock;
        uint64_t order;
    } held_locks[XT_HELD_LOCKS];
    int n_held_locks; /* may exceed XT_HELD_LOCKS; then the extra ones are not tracked */
    int n_frames;     /* EXPERT_UNWIND: program frames open on the region stack (unwind.c) */
    void *unwind;     /* per-thread stack-walk state (unwind.c) */
    /* hardware counters (papi.c): the thread's last reading, repeated for events recorded on its
       behalf by another thread (regions closed at the end of the run) */
    uint64_t last_counters[XT_MAX_METRICS];
    int has_counters; /* last_counters holds a reading */
} xt_thread;

extern XT_HIDDEN _Thread_local xt_thread *xt_tls __attribute__((tls_model("initial-exec")));
extern XT_HIDDEN atomic_int xt_recording; /* 0 before init, after finalize and while paused */

XT_HIDDEN xt_thread *xt_thread_attach(void);
/* a thread the program created (pthreads.c): the location of a thread that has ended if there is one (its
 * buffer and event stream continue), else a new one; xt_thread_release gives it back when the thread ends
 * (after that, nothing more is recorded on that OS thread) */
XT_HIDDEN xt_thread *xt_thread_attach_pooled(void);
XT_HIDDEN void xt_thread_release(xt_thread *t);
XT_HIDDEN int xt_thread_count(void);
XT_HIDDEN xt_thread *xt_thread_get(int i);
/* the slow path of xt_record: room for one record stamped `time` (flush a full buffer; place a
 * pending TRACING pair before this record if the record was stamped after the flush began) */
XT_HIDDEN void xt_buffer_make_room(xt_thread *t, uint64_t time);
/* write a pending TRACING pair now (at the end of the run: nothing stamped later will follow) */
XT_HIDDEN void xt_buffer_settle(xt_thread *t);
XT_HIDDEN void xt_flush_held_exit(xt_thread *t);

static inline xt_thread *xt_self(void)
{
    xt_thread *t = xt_tls;
    if (XT_UNLIKELY(!t)) t = xt_thread_attach();
    return t;
}

/* The time of the thread's last record (0 if it has none): the floor for anything it stamps later. */
static inline uint64_t xt_last_time(const xt_thread *t)
{
    return t->n ? t->buf[t->n - 1].time : t->spool_last_time;
}

/* Append one record.  The record is complete before n moves, so a signal handler
 * on this thread never sees a half-written event.  Records are appended in the order of the calls;
 * a flush never reorders them (see xt_buffer_make_room). */
static inline void xt_record(xt_thread *t, uint64_t time, uint8_t type, uint8_t flags, uint32_t a, uint32_t b,
                             uint32_t c, uint64_t d, uint64_t e)
{
    if (XT_UNLIKELY(t->n >= t->cap)) xt_buffer_make_room(t, time);
    elg_event *ev = &t->buf[t->n];
    ev->time = time;
    ev->type = type;
    ev->flags = flags;
    ev->reserved = 0;
    ev->a = a;
    ev->b = b;
    ev->c = c;
    ev->d = d;
    ev->e = e;
    __atomic_store_n(&t->n, t->n + 1, __ATOMIC_RELEASE);
}

/* hardware counters (papi.c): set when EXPERT_METRICS is active; records one COUNTER per metric
 * right after each ENTER / EXIT, with its time */
extern XT_HIDDEN void (*xt_counter_hook)(xt_thread *t, uint64_t time);
XT_HIDDEN uint32_t xt_metric_count(void);
/* COUNTER records with the thread's last reading (for exits stamped at its last event's time) */
XT_HIDDEN void xt_counters_repeat(xt_thread *t, uint64_t time);
XT_HIDDEN const char *xt_metric_name(uint32_t i);
XT_HIDDEN void xt_metrics_init(void); /* EXPERT_METRICS: set up once, before the first event */

static inline void xt_flush_held_exit_counted(xt_thread *t)
{
    xt_flush_held_exit(t);
    /* the reading is taken now, a little after the held EXIT's time */
    if (XT_UNLIKELY(xt_counter_hook != NULL)) xt_counter_hook(t, t->held_exit_time);
}

/* call-path frames from stack walks (unwind.c), on when EXPERT_UNWIND is set: before an ENTER,
 * xt_unwind_sync records the program frames that changed since the thread's last event; before an
 * EXIT, xt_unwind_close_top closes frames that sit on top of the region being left */
extern XT_HIDDEN int xt_unwinding;
XT_HIDDEN void xt_unwind_sync(xt_thread *t, uint64_t time);
XT_HIDDEN void xt_unwind_close_top(xt_thread *t, uint64_t time);
XT_HIDDEN const char *xt_unwind_method(void);
/* the code at pc belongs to this library, an MPI or OpenMP runtime, libc or another system library (the
 * C++ library too unless cxx_is_program); not cached (unwind.c) */
XT_HIDDEN int xt_system_code(const void *pc, int cxx_is_program);
/* forget the program frames a location's previous thread saw (a pooled location's next thread) */
XT_HIDDEN void xt_unwind_forget(xt_thread *t);
static inline void xt_unwind_point(xt_thread *t, uint64_t time)
{
    if (XT_UNLIKELY(xt_unwinding)) xt_unwind_sync(t, time);
}

/* ENTER and its counters, pushed on the region stack; nothing else (xt_enter is the usual entry) */
static inline void xt_push(xt_thread *t, uint64_t time, uint32_t region, uint32_t team, uint32_t thread_num)
{
    xt_record(t, time, ELG_ENTER, 0, region, ELG_NO_ID, team, thread_num == ELG_NO_ID ? ELG_NO_ID : thread_num, 0);
    if (XT_UNLIKELY(xt_counter_hook != NULL)) xt_counter_hook(t, time);
    if (XT_LIKELY(t->depth < XT_STACK_MAX)) {
        t->stack[t->depth].region = region;
        t->stack[t->depth].team = ELG_NO_ID;
    }
    t->depth++;
}

/* an EXIT-like record (EXIT, OMP/MPI_COLLEXIT) and its counters, popped off the region stack */
static inline void xt_pop(xt_thread *t, uint64_t time, uint8_t type, uint32_t region, uint32_t b, uint32_t c,
                          uint64_t d, uint64_t e)
{
    xt_record(t, time, type, 0, region, b, c, d, e);
    if (XT_UNLIKELY(xt_counter_hook != NULL)) xt_counter_hook(t, time);
    if (t->depth > 0) t->depth--;
}

static inline void xt_enter(xt_thread *t, uint64_t time, uint32_t region, uint32_t team, uint32_t thread_num)
{
    if (XT_UNLIKELY(t->held_exit_region != ELG_NO_ID)) xt_flush_held_exit_counted(t);
    xt_unwind_point(t, time);
    xt_push(t, time, region, team, thread_num);
}

static inline void xt_leave(xt_thread *t, uint64_t time, uint8_t type, uint32_t region, uint32_t b, uint32_t c,
                            uint64_t d, uint64_t e)
{
    if (XT_UNLIKELY(t->held_exit_region != ELG_NO_ID)) xt_flush_held_exit_counted(t);
    if (XT_UNLIKELY(t->n_frames)) xt_unwind_close_top(t, time);
    xt_pop(t, time, type, region, b, c, d, e);
}

static inline void xt_exit(xt_thread *t, uint64_t time, uint32_t region)
{
    xt_leave(t, time, ELG_EXIT, region, 0, 0, 0, 0);
}

/* ---------------------------------------------------------------- definitions (defs.c, locks.c) */
typedef struct xt_region {
    char *name, *file;
    uint32_t line, end_line;
    uint8_t paradigm, role;
    /* deferred naming from a code address */
    uintptr_t addr;
    int addr_kind;
    const char *label;
} xt_region;

XT_HIDDEN uint32_t xt_region_define(const char *name, const char *file, uint32_t line, uint8_t paradigm,
                                    uint8_t role);
/* a named region with a source range (POMP descriptors): the end line of the first definition is kept */
XT_HIDDEN uint32_t xt_region_define_range(const char *name, const char *file, uint32_t line, uint32_t end_line,
                                          uint8_t paradigm, uint8_t role);
XT_HIDDEN uint32_t xt_region_count(void);
XT_HIDDEN const xt_region *xt_region_at(uint32_t i);
/* Regions named after a code address; the name is resolved at the end of the run.
 * kind distinguishes several regions at one address (e.g. a loop and its barrier). */
enum xt_addr_kind {
    XT_ADDR_FUNCTION = 1, /* compiler instrumentation: name = function at addr */
    XT_ADDR_OMP = 2,      /* OpenMP construct: name = label + " @file:line" of addr */
};
XT_HIDDEN uint32_t xt_region_by_addr(uintptr_t addr, uint32_t subkind, int kind, const char *label, uint8_t paradigm,
                                     uint8_t role);
XT_HIDDEN uint32_t xt_lock_id(uintptr_t key, uint8_t kind, const char *name);
/* the lock's id if it is defined already, else ELG_NO_ID (no name needed: cheap on hot paths) */
XT_HIDDEN uint32_t xt_lock_find(uintptr_t key, uint8_t kind);
XT_HIDDEN uint32_t xt_lock_count(void);
XT_HIDDEN const char *xt_lock_name(uint32_t i, uint8_t *kind);
/* Lock hand-over (locks.c).  Call xt_lock_acquire once the lock is held and xt_lock_release around
 * its release (before or after the real unlock); both return the acquisition's order (1, 2, ... per
 * lock) and may move *now so that a release is never stamped after the next holder's acquisition.
 * Use the returned order and the adjusted time for the lock record and the regions around it. */
XT_HIDDEN uint64_t xt_lock_acquire(xt_thread *t, uint32_t lock, uint64_t *now);
XT_HIDDEN uint64_t xt_lock_release(xt_thread *t, uint32_t lock, uint64_t *now);
XT_HIDDEN uint32_t xt_region_tracing(void);
XT_HIDDEN uint32_t xt_region_pausing(void);
XT_HIDDEN uint32_t xt_region_program(void); /* the program root region (thread 0, start to end) */
XT_HIDDEN void xt_define_measurement_regions(void); /* TRACING and PAUSING, at start-up */

/* Lock-free tables keyed by address (regions in defs.c, locks in locks.c): open addressing, keys
 * published with release stores, 0 = empty slot. */
#define XT_ADDR_TABLE_BITS 16
#define XT_ADDR_TABLE_SIZE (1u << XT_ADDR_TABLE_BITS)
typedef struct {
    _Atomic uint64_t key;
    uint32_t value;
} xt_addr_slot;

static inline uint64_t xt_addr_hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return key;
}

/* a communicator as it is defined locally: members as global ranks */
typedef struct xt_comm_def {
    uint32_t leader, seq; /* globally unique creation key: (lowest global rank, its creation count) */
    uint32_t parent;      /* local comm id of the parent or NO_ID */
    uint32_t size;
    uint32_t *members;
    char name[48];
} xt_comm_def;
XT_HIDDEN uint32_t xt_comm_define(uint32_t leader, uint32_t seq, uint32_t parent, uint32_t size,
                                  const uint32_t *members, const char *name);
XT_HIDDEN uint32_t xt_comm_count(void);
XT_HIDDEN const xt_comm_def *xt_comm_at(uint32_t i);

/* an MPI one-sided window as it is defined locally (format 2.3): the communicator it was created over
 * (local comm id, NO_ID when unknown) and its creation count on that communicator, which together name the
 * same window on every process of the communicator (the writer unifies windows by them) */
typedef struct xt_win_def {
    uint32_t comm, seq;
} xt_win_def;
XT_HIDDEN uint32_t xt_win_define(uint32_t comm, uint32_t seq);
XT_HIDDEN uint32_t xt_win_count(void);
XT_HIDDEN const xt_win_def *xt_win_at(uint32_t i);
/* a group of processes named by an RMA synchronisation (Win_post/Win_start): global ranks in group order.
 * Local ids are XT_RMA_GROUP_BASE + index (apart from the communicators' groups, whose ids in the spool
 * file are the communicator ids); the same members give the same id. */
#define XT_RMA_GROUP_BASE 0x40000000u
XT_HIDDEN uint32_t xt_rma_group_define(uint32_t size, const uint32_t *members);
XT_HIDDEN uint32_t xt_rma_group_count(void);
XT_HIDDEN const uint32_t *xt_rma_group_at(uint32_t i, uint32_t *size);

/* ---------------------------------------------------------------- process facts */
typedef struct xt_process_info {
    uint32_t rank;     /* MPI rank in COMM_WORLD, 0 without MPI */
    uint32_t size;     /* number of processes */
    int mpi_active;    /* MPI_Init was called and MPI_Finalize not yet finished */
    double offset_time[2], offset_value[2]; /* clock offsets to rank 0 at init and finalize (seconds) */
    int n_offsets;
    char mpi_library[64];
    /* process.c */
    int untraced;                 /* a helper process of an MPI launcher, or a fork child: records nothing */
    int descendant;               /* started by the traced program (EXPERT_RUN_PID is another process) */
    int launch_rank, launch_size; /* as given by an MPI launcher's environment, -1 if none */
    uint32_t root_records;        /* records of the program root region (ENTER, EXIT, their counters) */
} xt_process_info;
extern XT_HIDDEN xt_process_info xt_proc;

/* configuration */
typedef struct xt_config {
    char output[4096];
    size_t buffer_events;
    int record_mpi, record_omp, record_user, record_compiler, record_pthread;
    int thread_reuse; /* EXPERT_THREAD_REUSE: a created thread takes the location of one that has ended */
    int resolve_names;
    int verbose;
    char filter_file[4096];
    char tmpdir[1024]; /* where spool files go ($TMPDIR or /tmp) */
} xt_config;
extern XT_HIDDEN xt_config xt_cfg;
/* an integer environment variable with an optional k/M/G suffix; dflt if unset or malformed */
XT_HIDDEN long xt_env_long(const char *name, long dflt);

/* ---------------------------------------------------------------- finalisation */
/* Close regions still open on every thread and stop recording (shutdown.c). */
XT_HIDDEN void xt_stop_recording(void);
XT_HIDDEN int xt_is_stopped(void);
/* at-exit and crash-signal handlers (shutdown.c), installed by xt_init */
XT_HIDDEN void xt_install_exit_paths(void);
/* local definitions serialised for the writer (serialize.c) */
XT_HIDDEN void *xt_serialize_local(size_t *len);
/* Read events of thread `thread` of this process, from `first`, at most `max`; returns count. */
XT_HIDDEN uint64_t xt_local_events(int thread, uint64_t first, elg_event *out, uint64_t max);
XT_HIDDEN uint64_t xt_local_event_count(int thread);

/* How the writer gets a process's events (local, or over MPI on rank 0). */
typedef uint64_t (*xt_fetch_fn)(void *ctx, int proc, int thread, elg_event *out, uint64_t max);
XT_HIDDEN int xt_write_trace(const char *path, int nprocs, void *const *serialized, const size_t *lens,
                             xt_fetch_fn fetch, void *ctx, int finished);
XT_HIDDEN void xt_write_local_trace(const char *path, int finished);
/* .elg pieces shared by the writer and the spool (writer.c): the file header (FINISHED flag), a block
 * header with its checksums, and the command line for the `command` attribute */
XT_HIDDEN void xt_elg_file_header(unsigned char hdr[ELG_FILE_HEADER_SIZE], int finished);
XT_HIDDEN void xt_elg_block_header(unsigned char h[ELG_BLOCK_HEADER_SIZE], uint16_t kind, uint32_t location,
                                   const void *payload, uint64_t len, uint32_t count);
XT_HIDDEN void xt_command_line(char *out, size_t n);
XT_HIDDEN void xt_crc_init(void); /* at start-up: pick the CRC-32 implementation */
XT_HIDDEN int xt_path_replaceable(const char *path); /* absent or a regular file: may be renamed over */
/* the spool file (spool.c): a full buffer's events go there as one EVENTS block, after the definitions
 * made since the last block, so that the file is a readable unfinished trace at every moment; returns
 * 1 if they were written.  xt_spool_read reads a thread's spooled events back.  A trace written to the
 * spool's own path replaces it (xt_spool_replaced); xt_spool_detach removes it once its events are in
 * a trace elsewhere (the MPI merge) */
XT_HIDDEN int xt_spool_append(xt_thread *t, const elg_event *ev, uint32_t n);
XT_HIDDEN uint64_t xt_spool_read(const xt_thread *t, uint64_t first, elg_event *out, uint64_t max);
XT_HIDDEN void xt_spool_replaced(const char *path);
XT_HIDDEN void xt_spool_detach(void);
/* the path of the trace this process writes on its own (process.c): the output, or the output with
 * ".<rank>" (one of several MPI processes) or ".<pid>" (started by the traced program) before ".elg" */
XT_HIDDEN void xt_own_output(char *out, size_t n);
/* the crash handlers (shutdown.c): installed at start-up, and again after MPI_Init, in front of what the
 * MPI library installed there (they chain to it) */
XT_HIDDEN void xt_install_crash_handlers(void);
XT_HIDDEN void xt_default_output(char *out, size_t n);

/* which process this is (process.c): xt_process_classify runs first in xt_init and returns 1 for a
 * process that is not traced; xt_solo_output gives the path of a trace that this process writes
 * alone (no MPI merge), or returns 0 when it writes none; xt_trace_written is told about each trace
 * written (warnings; a failed write makes the process exit with XT_EXIT_WRITE_FAILED) */
#define XT_EXIT_WRITE_FAILED 74 /* EX_IOERR */
extern XT_HIDDEN atomic_int xt_write_failed;
XT_HIDDEN int xt_process_classify(void);
XT_HIDDEN int xt_solo_output(char *out, size_t n, int crashed);
XT_HIDDEN void xt_trace_written(const char *path, int ok, int nprocs, uint64_t events, int finished);

/* hook set by the MPI layer: called first at exit/crash (returns 1 if it wrote the trace) */
extern XT_HIDDEN int (*xt_mpi_exit_hook)(int crashed);
/* hook set by the OpenMP layer: close OpenMP state before writing */
extern XT_HIDDEN void (*xt_omp_stop_hook)(void);
/* the OpenMP runtime that ran, as one line for the trace's openmp_runtime attribute (ompt.c; 0: no
 * OpenMP in this process).  Safe on the crash path: it only formats what was found earlier. */
XT_HIDDEN int xt_openmp_runtime(char *out, size_t n);
/* GCC code on libomp (gomp.c): the class of a GOMP_barrier call site from EXPERT_GOMP_BARRIERS ('e'
 * explicit, 'i' a construct's implicit barrier, 0 unknown), and the call site of the GOMP_sections_start
 * in progress on this thread (NULL if none; taken once) */
XT_HIDDEN void xt_gomp_init(void);
XT_HIDDEN int xt_gomp_barrier_kind(const void *codeptr);
XT_HIDDEN const void *xt_gomp_take_sections_site(void);
XT_HIDDEN const void *xt_gomp_take_parallel_sections_site(void); /* GOMP_parallel_sections in progress */

/* OpenMP explicit tasks (tasks.c): registers the task callbacks through OMPT's ompt_set_callback */
XT_HIDDEN void xt_ompt_tasks_register(void *set_callback);

/* set by the first POMP call (pomp.c): the OMPT callbacks (ompt.c) then record nothing */
extern XT_HIDDEN atomic_int xt_pomp_active;

XT_HIDDEN void xt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
XT_HIDDEN char *xt_resolve_addr(uintptr_t addr, int want_function, char **file, uint32_t *line);
XT_HIDDEN void xt_resolve_all(void);
XT_HIDDEN int xt_filter_excluded(uintptr_t fn);
XT_HIDDEN void xt_init(void);
XT_HIDDEN void xt_mark_written(void); /* the trace was written elsewhere (MPI merge): skip the exit path */
/* crash path (sigsafe.c): allocation that works inside a signal handler once xt_sigsafe_enter() ran */
XT_HIDDEN void xt_sigsafe_init(void);
XT_HIDDEN int xt_sigsafe_enter(void);
XT_HIDDEN void *xt_mem_alloc(size_t n);
XT_HIDDEN void *xt_mem_calloc(size_t k, size_t n);
XT_HIDDEN void *xt_mem_realloc(void *p, size_t n);
XT_HIDDEN void xt_mem_free(void *p);
XT_HIDDEN char *xt_mem_strdup(const char *s);
XT_HIDDEN void xt_sigsafe_message(const char *a, long number, const char *b);
XT_HIDDEN int xt_sigsafe_active(void); /* xt_sigsafe_enter() ran: this is the crash path */
/* definitions are read while other threads may add some (the spool): hold their lock (defs.c); on the crash
 * path it may not be had (returns 0): pass what it returned to xt_defs_unlock */
XT_HIDDEN int xt_defs_lock(void);
XT_HIDDEN void xt_defs_unlock(int locked);
#define XT_CHUNK_EVENTS (1u << 18)    /* events per EVENTS block and per transfer message (10 MiB) */

#endif
