/* core.c - start-up, configuration, clock, per-thread buffers, local definitions, shutdown paths. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expert.h"
#include "xt.h"

XT_HIDDEN int xt_use_tsc;
XT_HIDDEN _Thread_local xt_thread *xt_tls __attribute__((tls_model("initial-exec")));
XT_HIDDEN atomic_int xt_recording;
XT_HIDDEN xt_process_info xt_proc;
XT_HIDDEN xt_config xt_cfg;
XT_HIDDEN int (*xt_mpi_exit_hook)(int crashed);
XT_HIDDEN void (*xt_omp_stop_hook)(void);

static pthread_mutex_t def_lock = PTHREAD_MUTEX_INITIALIZER;
static xt_thread *threads[XT_MAX_THREADS];
static atomic_int n_threads;
static atomic_int stopped;  /* xt_stop_recording ran */
static atomic_int written;  /* a trace file was written (normal or emergency) */
static int initialised;

/* clock calibration: (tick, CLOCK_MONOTONIC seconds) at start and at stop */
static uint64_t tick0, tick1;
static double mono0, mono1;
static char tmpdir[1024];

void xt_warn(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char line[1200];
    int n = snprintf(line, sizeof line, "expert-run[%d]: %s\n", (int)getpid(), msg);
    if (n > 0) (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

double xt_mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* rdtsc only where the TSC is invariant (constant and not stopping in idle states). */
static int tsc_usable(void)
{
    const char *force = getenv("EXPERT_CLOCK");
    if (force && strcmp(force, "monotonic") == 0) return 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int constant = 0, nonstop = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0) {
            constant = strstr(line, " constant_tsc") != NULL;
            nonstop = strstr(line, " nonstop_tsc") != NULL;
            break;
        }
    }
    fclose(f);
    return constant && nonstop;
}

/* ---------------------------------------------------------------- configuration */
static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end == 'k' || *end == 'K') x <<= 10, end++;
    else if (*end == 'm' || *end == 'M') x <<= 20, end++;
    else if (*end == 'g' || *end == 'G') x <<= 30, end++;
    if (*end) {
        xt_warn("ignoring %s=%s (not a number)", name, v);
        return dflt;
    }
    return x;
}

void xt_default_output(char *out, size_t n)
{
    char exe[4096] = "trace";
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) exe[k] = 0;
    const char *base = strrchr(exe, '/');
    snprintf(out, n, "%s.elg", base ? base + 1 : exe);
}

static void read_config(void)
{
    const char *out = getenv("EXPERT_TRACE_FILE");
    if (out && *out) snprintf(xt_cfg.output, sizeof xt_cfg.output, "%s", out);
    else xt_default_output(xt_cfg.output, sizeof xt_cfg.output);
    long bytes = env_long("EXPERT_BUFFER_SIZE", 16l << 20);
    if (bytes < 64 * 1024) bytes = 64 * 1024;
    xt_cfg.buffer_events = (size_t)bytes / sizeof(elg_event);
    const char *p = getenv("EXPERT_PARADIGMS");
    if (!p || !*p) p = "mpi,omp,user,compiler";
    xt_cfg.record_mpi = strstr(p, "mpi") != NULL;
    xt_cfg.record_omp = strstr(p, "omp") != NULL;
    xt_cfg.record_user = strstr(p, "user") != NULL;
    xt_cfg.record_compiler = strstr(p, "compiler") != NULL;
    xt_cfg.resolve_names = (int)env_long("EXPERT_RESOLVE", 1);
    xt_cfg.verbose = (int)env_long("EXPERT_VERBOSE", 0);
    const char *filt = getenv("EXPERT_FILTER");
    if (filt) snprintf(xt_cfg.filter_file, sizeof xt_cfg.filter_file, "%s", filt);
    const char *td = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s", td && *td ? td : "/tmp");
}

/* ---------------------------------------------------------------- threads and buffers */
/* A trace buffer in 2 MiB pages where the kernel gives them (transparent huge pages on request):
 * the recording path then takes one page fault per 2 MiB instead of one per 4 KiB, which is most
 * of what a fresh buffer costs per event.  Buffers live until the process ends. */
#define HUGE_PAGE (2ul << 20)
static void *buffer_alloc(size_t bytes)
{
    size_t len = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    char *p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return malloc(bytes);
    char *aligned = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
    if (aligned > p) munmap(p, (size_t)(aligned - p));
    munmap(aligned + len, (size_t)(p + HUGE_PAGE - aligned));
    madvise(aligned, len, MADV_HUGEPAGE); /* advice only: without THP these stay 4 KiB pages */
    return aligned;
}

xt_thread *xt_thread_attach(void)
{
    if (!initialised) xt_init();
    int i = atomic_fetch_add(&n_threads, 1);
    if (i >= XT_MAX_THREADS) {
        atomic_fetch_sub(&n_threads, 1);
        xt_warn("more than %d threads: not recording the extra ones", XT_MAX_THREADS);
        return NULL;
    }
    xt_thread *t = calloc(1, sizeof *t);
    t->cap = (uint32_t)xt_cfg.buffer_events;
    t->buf = buffer_alloc(((size_t)t->cap + 2) * sizeof(elg_event)); /* +2: flush marker */
    if (!t->buf) {
        xt_warn("cannot allocate a %zu-byte trace buffer", (size_t)t->cap * sizeof(elg_event));
        abort();
    }
    t->thread_num = (uint32_t)i;
    t->spool_fd = -1;
    t->held_exit_region = ELG_NO_ID;
    threads[i] = t;
    xt_tls = t;
    return t;
}

int xt_thread_count(void) { return atomic_load(&n_threads); }
xt_thread *xt_thread_get(int i) { return threads[i]; }

static int write_all(int fd, const void *p, size_t len)
{
    const char *c = p;
    while (len) {
        ssize_t k = write(fd, c, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        len -= (size_t)k;
    }
    return 0;
}

/* A full buffer goes to an unlinked spool file; the time spent is recorded as region TRACING. */
void xt_buffer_flush(xt_thread *t)
{
    uint32_t tracing = xt_region_tracing();
    elg_event *ev = &t->buf[t->n];
    memset(ev, 0, sizeof *ev);
    ev->time = xt_now();
    ev->type = ELG_ENTER;
    ev->a = tracing;
    ev->b = ev->c = ELG_NO_ID;
    ev->d = ELG_NO_ID;
    t->n++;
    if (t->spool_fd < 0) {
        char path[1100];
        snprintf(path, sizeof path, "%s/expert-spool-XXXXXX", tmpdir);
        t->spool_fd = mkstemp(path);
        if (t->spool_fd < 0) {
            xt_warn("cannot create a spool file in %s (%s): dropping %u events", tmpdir, strerror(errno), t->n);
        } else {
            unlink(path);
        }
    }
    if (t->spool_fd >= 0) {
        if (write_all(t->spool_fd, t->buf, (size_t)t->n * sizeof(elg_event)) == 0) t->spooled += t->n;
        else xt_warn("writing the spool file failed (%s): dropping %u events", strerror(errno), t->n);
    }
    __atomic_store_n(&t->n, 0, __ATOMIC_RELEASE);
    ev = &t->buf[0];
    memset(ev, 0, sizeof *ev);
    ev->time = xt_now();
    ev->type = ELG_EXIT;
    ev->a = tracing;
    __atomic_store_n(&t->n, 1, __ATOMIC_RELEASE);
}

void xt_flush_held_exit(xt_thread *t)
{
    uint32_t r = t->held_exit_region;
    t->held_exit_region = ELG_NO_ID;
    xt_record(t, t->held_exit_time, ELG_EXIT, 0, r, 0, 0, 0, 0);
    if (t->depth > 0) t->depth--;
}

uint64_t xt_local_event_count(int thread)
{
    xt_thread *t = threads[thread];
    return t ? t->spooled + t->n : 0;
}

uint64_t xt_local_events(int thread, uint64_t first, elg_event *out, uint64_t max)
{
    xt_thread *t = threads[thread];
    if (!t) return 0;
    uint64_t got = 0;
    while (got < max && first + got < t->spooled) {
        uint64_t want = t->spooled - first - got;
        if (want > max - got) want = max - got;
        ssize_t k = pread(t->spool_fd, out + got, want * sizeof(elg_event), (off_t)((first + got) * sizeof(elg_event)));
        if (k <= 0) return got;
        got += (uint64_t)k / sizeof(elg_event);
    }
    uint64_t pos = first + got;
    if (pos >= t->spooled) {
        uint64_t in_mem = t->n, from = pos - t->spooled;
        if (from < in_mem) {
            uint64_t take = in_mem - from;
            if (take > max - got) take = max - got;
            memcpy(out + got, t->buf + from, take * sizeof(elg_event));
            got += take;
        }
    }
    return got;
}

/* ---------------------------------------------------------------- region definitions */
typedef struct xt_region {
    char *name, *file;
    uint32_t line, end_line;
    uint8_t paradigm, role;
    /* deferred naming from a code address */
    uintptr_t addr;
    int addr_kind;
    const char *label;
} xt_region;

static xt_region *regions;
static uint32_t n_regions, cap_regions;

static uint32_t region_add(const char *name, const char *file, uint32_t line, uint8_t paradigm, uint8_t role)
{
    if (n_regions == cap_regions) {
        cap_regions = cap_regions ? 2 * cap_regions : 256;
        regions = realloc(regions, cap_regions * sizeof *regions);
    }
    xt_region *r = &regions[n_regions];
    memset(r, 0, sizeof *r);
    r->name = strdup(name ? name : "");
    r->file = strdup(file ? file : "");
    r->line = line;
    r->end_line = ELG_NO_ID;
    r->paradigm = paradigm;
    r->role = role;
    return n_regions++;
}

uint32_t xt_region_define(const char *name, const char *file, uint32_t line, uint8_t paradigm, uint8_t role)
{
    pthread_mutex_lock(&def_lock);
    uint32_t id = ELG_NO_ID;
    for (uint32_t i = 0; i < n_regions; i++) { /* named regions are few; a scan is fine */
        xt_region *r = &regions[i];
        if (!r->addr_kind && r->line == line && r->paradigm == paradigm && r->role == role &&
            strcmp(r->name, name) == 0 && strcmp(r->file, file ? file : "") == 0) {
            id = i;
            break;
        }
    }
    if (id == ELG_NO_ID) id = region_add(name, file, line, paradigm, role);
    pthread_mutex_unlock(&def_lock);
    return id;
}

/* A named region with a source range (POMP context descriptors, pomp.c): the end line is set
 * on the first definition and kept. */
XT_HIDDEN uint32_t xt_region_define_range(const char *name, const char *file, uint32_t line, uint32_t end_line,
                                          uint8_t paradigm, uint8_t role)
{
    uint32_t id = xt_region_define(name, file, line, paradigm, role);
    pthread_mutex_lock(&def_lock);
    if (regions[id].end_line == ELG_NO_ID) regions[id].end_line = end_line;
    pthread_mutex_unlock(&def_lock);
    return id;
}

/* Lock-free lookup of address-keyed regions: open addressing, keys published with release stores. */
#define ADDR_TABLE_BITS 16
#define ADDR_TABLE_SIZE (1u << ADDR_TABLE_BITS)
typedef struct {
    _Atomic uint64_t key;
    uint32_t value;
} addr_slot;
static addr_slot addr_table[ADDR_TABLE_SIZE];
static atomic_uint addr_used;

static inline uint64_t addr_hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return key;
}

uint32_t xt_region_by_addr(uintptr_t addr, uint32_t subkind, int kind, const char *label, uint8_t paradigm,
                           uint8_t role)
{
    uint64_t key = ((uint64_t)addr << 8) | ((uint64_t)(subkind & 0x3f) << 2) | (uint64_t)kind;
    uint64_t h = addr_hash(key);
    for (uint32_t probe = 0; probe < ADDR_TABLE_SIZE; probe++) {
        addr_slot *s = &addr_table[(h + probe) & (ADDR_TABLE_SIZE - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key) return s->value;
        if (k == 0) break;
    }
    /* slow path: insert under the definition lock */
    pthread_mutex_lock(&def_lock);
    uint32_t id = ELG_NO_ID;
    for (uint32_t probe = 0; probe < ADDR_TABLE_SIZE; probe++) {
        addr_slot *s = &addr_table[(h + probe) & (ADDR_TABLE_SIZE - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key) {
            id = s->value;
            break;
        }
        if (k == 0) {
            if (atomic_load(&addr_used) > ADDR_TABLE_SIZE * 3 / 4) break; /* full: fall through to unnamed */
            if (kind == XT_ADDR_FUNCTION && xt_filter_excluded(addr)) { /* the filter: never recorded */
                s->value = ELG_NO_ID - 2;
                atomic_store_explicit(&s->key, key, memory_order_release);
                atomic_fetch_add(&addr_used, 1);
                id = ELG_NO_ID - 2;
                break;
            }
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%s@%#lx", label ? label : "", (unsigned long)addr);
            id = region_add(tmp, "", ELG_NO_ID, paradigm, role);
            regions[id].addr = addr;
            regions[id].addr_kind = kind;
            regions[id].label = label;
            s->value = id;
            atomic_store_explicit(&s->key, key, memory_order_release);
            atomic_fetch_add(&addr_used, 1);
            break;
        }
    }
    pthread_mutex_unlock(&def_lock);
    if (id == ELG_NO_ID) id = xt_region_define("UNKNOWN", "", ELG_NO_ID, ELG_PARADIGM_MEASUREMENT, ELG_ROLE_FUNCTION);
    return id;
}

static uint32_t tracing_region = ELG_NO_ID, pausing_region = ELG_NO_ID;
uint32_t xt_region_tracing(void) { return tracing_region; }
uint32_t xt_region_pausing(void) { return pausing_region; }

/* Resolve names of address-keyed regions (once, at the end). */
void xt_resolve_all(void)
{
    for (uint32_t i = 0; i < n_regions; i++) {
        xt_region *r = &regions[i];
        if (!r->addr_kind) continue;
        if (!r->addr) { /* the runtime gave no code address */
            free(r->name);
            r->name = strdup(r->label ? r->label : "UNKNOWN");
            continue;
        }
        char *file = NULL;
        uint32_t line = ELG_NO_ID;
        if (r->addr_kind == XT_ADDR_FUNCTION) {
            char *fn = xt_resolve_addr(r->addr, 1, &file, &line);
            if (fn) {
                free(r->name);
                r->name = fn;
            }
        } else {
            /* a return address: the call is in the instruction before it */
            char *fn = xt_resolve_addr(r->addr - 1, 0, &file, &line);
            free(fn);
            char name[4200];
            if (file && line != ELG_NO_ID) {
                const char *base = strrchr(file, '/');
                snprintf(name, sizeof name, "%s @%s:%u", r->label, base ? base + 1 : file, line);
            } else {
                snprintf(name, sizeof name, "%s", r->label);
            }
            free(r->name);
            r->name = strdup(name);
        }
        if (file) {
            free(r->file);
            r->file = file;
            r->line = line;
        }
    }
}

/* ---------------------------------------------------------------- locks */
/* Hand-over between holders.  OMPT reports a release only after the lock is free, so the next
 * holder's acquisition callback may run before the releasing thread's callback.  Each lock keeps a
 * small ring, indexed by acquisition order, of acquisition and release times; through it the two
 * callbacks agree on release(k) <= acquire(k+1) whichever runs first (see xt_lock_release). */
#define LOCK_RING 64     /* hand-overs a releasing thread may fall behind and still find its successor */
#define LOCK_SPINS 256   /* busy polls for a successor that is between counter and publication ... */
#define LOCK_YIELDS 1000 /* ... then polls with sched_yield (it may be descheduled on a busy machine) */
typedef struct {
    _Atomic uint64_t acq_seq, acq_time; /* acquisition acq_seq is stamped acq_time (seqlock: 0 = being written) */
    _Atomic uint64_t rel_seq, rel_time; /* the holder of acquisition rel_seq released at rel_time */
} xt_lock_slot;
typedef struct {
    uint8_t kind;
    char name[64];
    _Atomic uint64_t order; /* acquisitions so far */
    xt_lock_slot *ring;     /* LOCK_RING slots; acquisition k uses slot k % LOCK_RING */
} xt_lock;
#define MAX_LOCKS 65536
static xt_lock *locks;
static atomic_uint n_locks;
static addr_slot lock_table[ADDR_TABLE_SIZE];

uint32_t xt_lock_find(uintptr_t key0, uint8_t kind)
{
    uint64_t key = ((uint64_t)key0 << 4) | kind;
    uint64_t h = addr_hash(key);
    for (uint32_t probe = 0; probe < ADDR_TABLE_SIZE; probe++) {
        addr_slot *s = &lock_table[(h + probe) & (ADDR_TABLE_SIZE - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key) return s->value;
        if (k == 0) break;
    }
    return ELG_NO_ID;
}

uint32_t xt_lock_id(uintptr_t key0, uint8_t kind, const char *name)
{
    uint32_t found = xt_lock_find(key0, kind);
    if (found != ELG_NO_ID) return found;
    uint64_t key = ((uint64_t)key0 << 4) | kind;
    uint64_t h = addr_hash(key);
    pthread_mutex_lock(&def_lock);
    uint32_t id = ELG_NO_ID;
    for (uint32_t probe = 0; probe < ADDR_TABLE_SIZE; probe++) {
        addr_slot *s = &lock_table[(h + probe) & (ADDR_TABLE_SIZE - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key) {
            id = s->value;
            break;
        }
        if (k == 0) {
            uint32_t n = atomic_load(&n_locks);
            if (n >= MAX_LOCKS - 1) break;
            if (!locks) locks = calloc(MAX_LOCKS, sizeof *locks);
            locks[n].kind = kind;
            snprintf(locks[n].name, sizeof locks[n].name, "%s", name);
            atomic_store(&locks[n].order, 0);
            locks[n].ring = calloc(LOCK_RING, sizeof(xt_lock_slot)); /* NULL: orders only, no hand-over repair */
            atomic_store(&n_locks, n + 1);
            id = n;
            s->value = id;
            atomic_store_explicit(&s->key, key, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&def_lock);
    return id;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* The earliest time this thread may still stamp: its last event (or a held-back construct end). */
static uint64_t own_floor(const xt_thread *t)
{
    uint64_t f = t->n ? t->buf[t->n - 1].time : 0;
    if (t->held_exit_region != ELG_NO_ID && t->held_exit_time > f) f = t->held_exit_time;
    return f;
}

uint64_t xt_lock_acquire(xt_thread *t, uint32_t lock, uint64_t *now)
{
    if (lock == ELG_NO_ID) return 0;
    xt_lock *l = &locks[lock];
    /* seq_cst: pairs with the release's store of rel_seq and load of the counter (xt_lock_release) */
    uint64_t order = atomic_fetch_add(&l->order, 1) + 1;
    if (l->ring) {
        xt_lock_slot *prev = &l->ring[(order - 1) % LOCK_RING];
        if (order > 1 && atomic_load(&prev->rel_seq) == order - 1) {
            /* the previous holder's release is already stamped: do not acquire before it (it was
             * taken a few ns ago on another core, so this moves our time by about that much) */
            uint64_t rel = atomic_load_explicit(&prev->rel_time, memory_order_relaxed);
            if (rel > *now) *now = rel;
        }
        xt_lock_slot *mine = &l->ring[order % LOCK_RING];
        atomic_store_explicit(&mine->acq_seq, 0, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&mine->acq_time, *now, memory_order_relaxed);
        atomic_store_explicit(&mine->acq_seq, order, memory_order_release);
    }
    int i = t->n_held_locks++;
    if (i < XT_HELD_LOCKS) {
        t->held_locks[i].lock = lock;
        t->held_locks[i].order = order;
    }
    return order;
}

/* The order this thread acquired `lock` with, removed from its held list; 0 if it was not tracked. */
static uint64_t pop_held(xt_thread *t, uint32_t lock)
{
    int top = t->n_held_locks < XT_HELD_LOCKS ? t->n_held_locks : XT_HELD_LOCKS;
    for (int i = top - 1; i >= 0; i--) {
        if (t->held_locks[i].lock != lock) continue;
        uint64_t order = t->held_locks[i].order;
        memmove(&t->held_locks[i], &t->held_locks[i + 1], (size_t)(top - i - 1) * sizeof t->held_locks[0]);
        t->n_held_locks--;
        return order;
    }
    if (t->n_held_locks > XT_HELD_LOCKS) t->n_held_locks--; /* one of the untracked ones */
    return 0;
}

/* Acquisition `order`'s time from the ring; waits (bounded) while its holder is between taking the
 * order and publishing the time.  0: not available (slot reused, or the holder did not show up). */
static int acquisition_time(xt_lock *l, uint64_t order, uint64_t *time)
{
    xt_lock_slot *s = &l->ring[order % LOCK_RING];
    for (int i = 0; i < LOCK_SPINS + LOCK_YIELDS; i++) {
        uint64_t seq = atomic_load_explicit(&s->acq_seq, memory_order_acquire);
        if (seq == order) {
            uint64_t v = atomic_load_explicit(&s->acq_time, memory_order_relaxed);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&s->acq_seq, memory_order_relaxed) != order) return 0;
            *time = v;
            return 1;
        }
        if (seq > order) return 0;
        if (i < LOCK_SPINS) cpu_relax();
        else sched_yield();
    }
    return 0;
}

uint64_t xt_lock_release(xt_thread *t, uint32_t lock, uint64_t *now)
{
    if (lock == ELG_NO_ID) return 0;
    xt_lock *l = &locks[lock];
    uint64_t order = pop_held(t, lock);
    if (!order || !l->ring) return order ? order : atomic_load(&l->order); /* untracked: best guess */
    /* Publish the release first, then look for a successor (seq_cst on both sides, like Dekker's
     * algorithm): either the successor sees this time and acquires no earlier, or we see its
     * acquisition here and stamp the release no later than it. */
    xt_lock_slot *s = &l->ring[order % LOCK_RING];
    atomic_store_explicit(&s->rel_time, *now, memory_order_relaxed);
    atomic_store(&s->rel_seq, order);
    if (atomic_load(&l->order) > order) {
        /* the lock changed hands before this callback ran: the release really happened before the
         * successor's acquisition, so take that time (the exact release instant is unknown; it lies
         * between our last event and the successor's acquisition, within ~ns under contention) */
        uint64_t acq, floor = own_floor(t);
        if (acquisition_time(l, order + 1, &acq)) {
            if (acq < *now) *now = acq;
        } else {
            *now = floor; /* successor unknown (we fell far behind): our last event is a safe bound */
        }
        /* this thread's own times never go backwards: keep the later of the two (if the successor's
         * stamp is earlier than our last event, clocks differ by ns; the order is still right) */
        if (*now < floor) *now = floor;
    }
    return order;
}

/* ---------------------------------------------------------------- communicators */
static xt_comm_def *comms;
static uint32_t n_comms, cap_comms;

uint32_t xt_comm_define(uint32_t leader, uint32_t seq, uint32_t parent, uint32_t size, const uint32_t *members,
                        const char *name)
{
    pthread_mutex_lock(&def_lock);
    if (n_comms == cap_comms) {
        cap_comms = cap_comms ? 2 * cap_comms : 16;
        comms = realloc(comms, cap_comms * sizeof *comms);
    }
    xt_comm_def *c = &comms[n_comms];
    c->leader = leader;
    c->seq = seq;
    c->parent = parent;
    c->size = size;
    c->members = malloc((size ? size : 1) * sizeof(uint32_t));
    memcpy(c->members, members, size * sizeof(uint32_t));
    snprintf(c->name, sizeof c->name, "%s", name ? name : "");
    uint32_t id = n_comms++;
    pthread_mutex_unlock(&def_lock);
    return id;
}

/* ---------------------------------------------------------------- serialisation of local definitions */
typedef struct {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 256;
        b->p = xt_mem_realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}
static void sb_u32(sbuf *b, uint32_t v) { sb_put(b, &v, 4); }
static void sb_u64(sbuf *b, uint64_t v) { sb_put(b, &v, 8); }
static void sb_f64(sbuf *b, double v) { sb_put(b, &v, 8); }
static void sb_str(sbuf *b, const char *s)
{
    uint32_t n = (uint32_t)strlen(s ? s : "");
    sb_u32(b, n);
    sb_put(b, s ? s : "", n);
}

static double ticks_per_second(void)
{
    if (!xt_use_tsc) return 1e9;
    double dt = mono1 - mono0;
    if (dt <= 0) return 1e9;
    return (double)(tick1 - tick0) / dt;
}

/* the clock calibration end point; later calls keep the first value */
static void clock_stop(void)
{
    if (mono1 != 0) return;
    /* calibrate over at least 2 ms so a very short run still gets a usable tick rate */
    double m;
    do {
        m = xt_mono_seconds();
    } while (m - mono0 < 0.002);
    tick1 = xt_now();
    mono1 = xt_mono_seconds();
}

void *xt_serialize_local(size_t *len)
{
    sbuf b = {0};
    sb_u32(&b, 0x31535458u); /* "XTS1" */
    sb_u32(&b, xt_proc.rank);
    int nt = xt_thread_count();
    sb_u32(&b, (uint32_t)nt);
    sb_f64(&b, ticks_per_second());
    sb_u64(&b, tick0);
    sb_u32(&b, (uint32_t)xt_proc.n_offsets);
    for (int i = 0; i < 2; i++) {
        sb_f64(&b, xt_proc.offset_time[i]);
        sb_f64(&b, xt_proc.offset_value[i]);
    }
    char host[256] = "localhost";
    gethostname(host, sizeof host);
    host[255] = 0;
    sb_str(&b, host);
    sb_str(&b, xt_proc.mpi_library);
    sb_str(&b, xt_use_tsc ? "rdtsc" : "CLOCK_MONOTONIC");
    sb_u32(&b, n_regions);
    for (uint32_t i = 0; i < n_regions; i++) {
        xt_region *r = &regions[i];
        sb_str(&b, r->name);
        sb_str(&b, r->file);
        sb_u32(&b, r->line);
        sb_u32(&b, r->end_line);
        uint8_t pr[2] = {r->paradigm, r->role};
        sb_put(&b, pr, 2);
    }
    sb_u32(&b, n_comms);
    for (uint32_t i = 0; i < n_comms; i++) {
        xt_comm_def *c = &comms[i];
        sb_u32(&b, c->leader);
        sb_u32(&b, c->seq);
        sb_u32(&b, c->parent);
        sb_u32(&b, c->size);
        sb_put(&b, c->members, c->size * 4);
        sb_str(&b, c->name);
    }
    uint32_t nl = atomic_load(&n_locks);
    sb_u32(&b, nl);
    for (uint32_t i = 0; i < nl; i++) {
        sb_put(&b, &locks[i].kind, 1);
        sb_str(&b, locks[i].name);
    }
    /* hardware-counter metrics (papi.c) this process records: COUNTER events use positions in this list */
    uint32_t nm = xt_metric_count();
    sb_u32(&b, nm);
    for (uint32_t i = 0; i < nm; i++) sb_str(&b, xt_metric_name(i));
    for (int i = 0; i < nt; i++) sb_u64(&b, xt_local_event_count(i));
    *len = b.len;
    return b.p;
}

/* ---------------------------------------------------------------- stop: close what is open */
static void close_open_regions(xt_thread *t)
{
    if (t->held_exit_region != ELG_NO_ID) {
        xt_flush_held_exit(t);
        xt_counters_repeat(t, t->held_exit_time);
    }
    uint64_t last = t->n ? t->buf[t->n - 1].time : xt_now();
    while (t->depth > 0) {
        int i = t->depth - 1;
        if (i >= XT_STACK_MAX) { /* nesting deeper than we track: cannot name the region */
            t->depth = XT_STACK_MAX;
            continue;
        }
        xt_frame f = t->stack[i];
        if (f.team != ELG_NO_ID) xt_record(t, last, ELG_OMP_COLLEXIT, 0, f.region, f.team, 0, 0, 0);
        else xt_record(t, last, ELG_EXIT, 0, f.region, 0, 0, 0, 0);
        /* stamped at the thread's last event, so its last counter reading is the value (this also
           runs on another thread, and on the crash path, where the counters cannot be read) */
        xt_counters_repeat(t, last);
        t->depth--;
    }
    t->n_frames = 0;
}

void xt_stop_recording(void)
{
    if (atomic_exchange(&stopped, 1)) return;
    if (xt_omp_stop_hook) xt_omp_stop_hook();
    atomic_store(&xt_recording, 0);
    clock_stop();
    int nt = xt_thread_count();
    for (int i = 0; i < nt; i++)
        if (threads[i]) close_open_regions(threads[i]);
}

void xt_write_local_trace(const char *path, int finished)
{
    if (atomic_exchange(&written, 1)) return;
    xt_stop_recording();
    if (finished && xt_cfg.resolve_names) xt_resolve_all();
    size_t len;
    void *ser = xt_serialize_local(&len);
    void *sers[1] = {ser};
    size_t lens[1] = {len};
    xt_write_trace(path, 1, sers, lens, NULL, NULL, finished);
    xt_mem_free(ser);
}

double xt_mono0(void) { return mono0; }
void xt_mark_written(void) { atomic_store(&written, 1); }

/* ---------------------------------------------------------------- exit and crash paths */
static void at_exit(void)
{
    if (atomic_load(&written)) return;
    if (xt_mpi_exit_hook && xt_mpi_exit_hook(0)) return;
    xt_write_local_trace(xt_cfg.output, 1);
}

/* The crash path: write what was recorded, with write(2) and memory reserved at start-up (sigsafe.c).
 * A second thread that crashes meanwhile waits for the first one's trace instead of killing the process. */
static atomic_int crash_owner, crash_done;
static void on_signal(int sig)
{
    if (!atomic_exchange(&crash_owner, 1)) {
        if (!atomic_load(&written)) {
            xt_sigsafe_enter();
            xt_sigsafe_message("caught signal ", sig, ": writing the events recorded so far (trace marked incomplete)");
            if (!(xt_mpi_exit_hook && xt_mpi_exit_hook(1))) xt_write_local_trace(xt_cfg.output, 0);
        }
        atomic_store(&crash_done, 1);
    } else {
        struct timespec ms = {0, 1000000};
        for (int i = 0; i < 30000 && !atomic_load(&crash_done); i++) nanosleep(&ms, NULL);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signal_handlers(void)
{
    if (!env_long("EXPERT_SIGNALS", 1)) return;
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        /* respect handlers the program (or the MPI library) installed before us */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_DFL) continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

void xt_init(void)
{
    if (initialised) return;
    initialised = 1;
    read_config();
    xt_sigsafe_init();
    xt_use_tsc = tsc_usable();
    mono0 = xt_mono_seconds();
    tick0 = xt_now();
    tracing_region = xt_region_define("TRACING", "EPIK", ELG_NO_ID, ELG_PARADIGM_MEASUREMENT, ELG_ROLE_MEASUREMENT_FLUSH);
    pausing_region = xt_region_define("PAUSING", "EPIK", ELG_NO_ID, ELG_PARADIGM_MEASUREMENT, ELG_ROLE_MEASUREMENT_PAUSE);
    xt_proc.size = 1;
    atomic_store(&xt_recording, 1);
    xt_thread_attach(); /* the initial thread is thread 0 */
    atexit(at_exit);
    install_signal_handlers();
}

__attribute__((constructor)) static void xt_constructor(void) { xt_init(); }

/* ---------------------------------------------------------------- public C API (expert.h) */
__attribute__((visibility("default"))) expert_region_t expert_region_define(const char *name, const char *file,
                                                                            int line)
{
    return xt_region_define(name ? name : "", file, line > 0 ? (uint32_t)line : ELG_NO_ID, ELG_PARADIGM_USER,
                            ELG_ROLE_USER_REGION);
}

__attribute__((visibility("default"))) void expert_region_enter(expert_region_t region)
{
    if (!atomic_load_explicit(&xt_recording, memory_order_relaxed) || !xt_cfg.record_user) return;
    xt_thread *t = xt_self();
    if (t) xt_enter(t, xt_now(), region, ELG_NO_ID, ELG_NO_ID);
}

__attribute__((visibility("default"))) void expert_region_exit(expert_region_t region)
{
    if (!atomic_load_explicit(&xt_recording, memory_order_relaxed) || !xt_cfg.record_user) return;
    xt_thread *t = xt_self();
    if (t) xt_exit(t, xt_now(), region);
}

static _Atomic int paused;
__attribute__((visibility("default"))) void expert_pause(void)
{
    if (atomic_exchange(&paused, 1) || atomic_load(&stopped)) return;
    xt_thread *t = xt_self();
    if (t) xt_enter(t, xt_now(), pausing_region, ELG_NO_ID, ELG_NO_ID);
    atomic_store(&xt_recording, 0);
}

__attribute__((visibility("default"))) void expert_resume(void)
{
    if (!atomic_exchange(&paused, 0) || atomic_load(&stopped)) return;
    atomic_store(&xt_recording, 1);
    xt_thread *t = xt_self();
    if (t) xt_exit(t, xt_now(), pausing_region);
}

__attribute__((visibility("default"))) int expert_is_active(void) { return atomic_load(&xt_recording); }
