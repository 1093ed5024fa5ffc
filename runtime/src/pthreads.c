/* pthreads.c - POSIX threads: thread creation and join, mutexes and condition variables (format 2.1).
 *
 * The preloaded library defines pthread_create, pthread_join, pthread_exit, the pthread_mutex_* lock
 * calls and the pthread_cond_* calls; each records what it does and calls the C library's function
 * (dlsym(RTLD_NEXT)).  Only calls from the program's own code are recorded: a call whose return address
 * lies in this library, an MPI or OpenMP runtime, libc or another system library (unwind.c decides, once
 * per call site) goes straight through, so libomp's workers, MPI progress threads and every runtime's
 * internal locks stay out of the trace.  The C++ library counts as the program's (std::thread,
 * std::condition_variable call the pthread functions from there).
 *
 * A created thread runs through a trampoline: THREAD_BEGIN, ENTER of its start routine, the routine,
 * EXIT, THREAD_END (also on pthread_exit).  Its location is taken from a pool of locations whose threads
 * have ended, so a program that creates and joins hundreds of short-lived threads gets as many locations
 * as it has threads at a time, and their buffers are reused (buffer.c).  A mutex is a lock of kind
 * PTHREAD_MUTEX: acquisitions inside pthread_mutex_lock / _trylock / _timedlock (a relock of a recursive
 * mutex by its holder is no acquisition), releases inside pthread_mutex_unlock, both with the hand-over
 * order of locks.c; pthread_cond_wait releases the mutex when it starts and acquires it again when it
 * returns.  See docs/runtime.md and docs/format.md §6.2. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

/* ---------------------------------------------------------------- the real functions */
#define REAL(type, name)                                                                                             \
    static type real_##name(void)                                                                                    \
    {                                                                                                                \
        static _Atomic(type) fn;                                                                                     \
        type f = atomic_load_explicit(&fn, memory_order_acquire);                                                    \
        if (XT_UNLIKELY(!f)) {                                                                                       \
            f = (type)dlsym(RTLD_NEXT, #name);                                                                       \
            if (!f) {                                                                                                \
                xt_warn("%s: not found after the tracing library", #name);                                           \
                abort();                                                                                             \
            }                                                                                                        \
            atomic_store_explicit(&fn, f, memory_order_release);                                                     \
        }                                                                                                            \
        return f;                                                                                                    \
    }
typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*join_fn)(pthread_t, void **);
typedef void (*exit_fn)(void *) __attribute__((noreturn));
typedef int (*mutex_fn)(pthread_mutex_t *);
typedef int (*timedlock_fn)(pthread_mutex_t *, const struct timespec *);
typedef int (*cond_fn)(pthread_cond_t *);
typedef int (*wait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
REAL(create_fn, pthread_create)
REAL(join_fn, pthread_join)
REAL(exit_fn, pthread_exit)
REAL(mutex_fn, pthread_mutex_lock)
REAL(mutex_fn, pthread_mutex_trylock)
REAL(timedlock_fn, pthread_mutex_timedlock)
REAL(mutex_fn, pthread_mutex_unlock)
REAL(cond_fn, pthread_cond_signal)
REAL(cond_fn, pthread_cond_broadcast)
REAL(wait_fn, pthread_cond_wait)
REAL(timedwait_fn, pthread_cond_timedwait)

/* ---------------------------------------------------------------- which calls are the program's */
/* return address -> 1 the program's code, 2 a system library's; lock-free, filled on first sight */
#define SITE_BITS 12
#define SITE_SIZE (1u << SITE_BITS)
static struct {
    _Atomic uintptr_t key;
    _Atomic int verdict;
} sites[SITE_SIZE];

static _Thread_local int busy __attribute__((tls_model("initial-exec"))); /* inside a wrapper's recording */

static int program_call(const void *ra)
{
    uintptr_t k = (uintptr_t)ra;
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> (64 - SITE_BITS));
    for (unsigned probe = 0; probe < 16; probe++, i = (i + 1) & (SITE_SIZE - 1)) {
        uintptr_t have = atomic_load_explicit(&sites[i].key, memory_order_acquire);
        if (have == k) {
            int v = atomic_load_explicit(&sites[i].verdict, memory_order_acquire);
            if (v) return v == 1;
            break; /* being classified by another thread: classify again */
        }
        if (have == 0) {
            int v = xt_system_code((const char *)ra - 1, 1) ? 2 : 1;
            uintptr_t expected = 0;
            if (atomic_compare_exchange_strong(&sites[i].key, &expected, k) || expected == k)
                atomic_store_explicit(&sites[i].verdict, v, memory_order_release);
            return v == 1;
        }
    }
    return !xt_system_code((const char *)ra - 1, 1); /* table crowded here: uncached */
}

/* the thread, if this call is to be recorded (the program's call, recording on, not inside a wrapper) */
static inline xt_thread *recording(const void *ra)
{
    if (busy || !atomic_load_explicit(&xt_recording, memory_order_relaxed)) return NULL;
    if (!program_call(ra)) return NULL;
    if (!xt_cfg.record_pthread) return NULL;
    xt_thread *t = xt_self();
    return t && !t->in_mpi ? t : NULL; /* inside an MPI call nothing nested is recorded */
}

/* ---------------------------------------------------------------- regions */
enum { R_CREATE, R_JOIN, R_EXIT, R_LOCK, R_TRYLOCK, R_TIMEDLOCK, R_UNLOCK, R_SIGNAL, R_BROADCAST, R_WAIT, R_TIMEDWAIT,
       N_REGIONS };
static const char *const region_names[N_REGIONS] = {
    "pthread_create",     "pthread_join",         "pthread_exit",       "pthread_mutex_lock",
    "pthread_mutex_trylock", "pthread_mutex_timedlock", "pthread_mutex_unlock", "pthread_cond_signal",
    "pthread_cond_broadcast", "pthread_cond_wait",  "pthread_cond_timedwait"};
static const uint8_t region_roles[N_REGIONS] = {
    ELG_ROLE_THREAD_CREATE, ELG_ROLE_THREAD_JOIN,  ELG_ROLE_THREAD_MANAGEMENT, ELG_ROLE_THREAD_MUTEX,
    ELG_ROLE_THREAD_MUTEX,  ELG_ROLE_THREAD_MUTEX, ELG_ROLE_THREAD_MUTEX,      ELG_ROLE_THREAD_CONDITION,
    ELG_ROLE_THREAD_CONDITION, ELG_ROLE_THREAD_CONDITION, ELG_ROLE_THREAD_CONDITION};
static _Atomic uint32_t region_ids[N_REGIONS]; /* id + 1, 0 = not defined yet */

static uint32_t region(int which)
{
    uint32_t id = atomic_load_explicit(&region_ids[which], memory_order_acquire);
    if (XT_LIKELY(id)) return id - 1;
    id = xt_region_define(region_names[which], "PTHREAD", ELG_NO_ID, ELG_PARADIGM_PTHREAD, region_roles[which]);
    atomic_store_explicit(&region_ids[which], id + 1, memory_order_release);
    return id;
}

/* ---------------------------------------------------------------- per-thread state */
#define RECURSIVE 8 /* mutexes one thread holds more than once at a time, tracked */
typedef struct pthread_state {
    uint64_t lifetime; /* id of the traced thread this location runs now (0: none) */
    struct {
        uint32_t lock, depth;
    } held[RECURSIVE];
    int n_held;
} pthread_state;

static pthread_state *state(xt_thread *t)
{
    if (XT_UNLIKELY(!t->pthr)) t->pthr = calloc(1, sizeof(pthread_state));
    return t->pthr;
}

static uint32_t mutex_lock_id(pthread_mutex_t *m)
{
    uint32_t id = xt_lock_find((uintptr_t)m, ELG_LOCK_PTHREAD_MUTEX);
    if (XT_LIKELY(id != ELG_NO_ID)) return id;
    char name[48];
    snprintf(name, sizeof name, "pthread mutex %p", (void *)m);
    return xt_lock_id((uintptr_t)m, ELG_LOCK_PTHREAD_MUTEX, name);
}

/* this thread's hold count of `lock` beyond the first (recursive mutexes), and its slot */
static int find_held(pthread_state *s, uint32_t lock)
{
    for (int i = 0; i < s->n_held; i++)
        if (s->held[i].lock == lock) return i;
    return -1;
}

static inline uint64_t stamp(xt_thread *t)
{
    uint64_t now = xt_now();
    return now < xt_last_time(t) ? xt_last_time(t) : now;
}

/* the mutex is held now: an acquisition, unless this thread held it already (a recursive relock) */
static void acquired(xt_thread *t, uint32_t lock, uint64_t *now)
{
    for (int i = 0; i < t->n_held_locks && i < XT_HELD_LOCKS; i++) {
        if (t->held_locks[i].lock != lock) continue;
        pthread_state *s = state(t);
        int k = find_held(s, lock);
        if (k < 0 && s->n_held < RECURSIVE) {
            k = s->n_held++;
            s->held[k].lock = lock;
            s->held[k].depth = 0;
        }
        if (k >= 0) s->held[k].depth++;
        return;
    }
    uint64_t order = xt_lock_acquire(t, lock, now);
    xt_record(t, *now, ELG_OMP_ACQUIRE_LOCK, 0, lock, 0, 0, order, 0);
}

/* this thread holds `lock` by a recorded acquisition */
static int holds(const xt_thread *t, uint32_t lock)
{
    if (lock == ELG_NO_ID) return 0;
    for (int i = 0; i < t->n_held_locks && i < XT_HELD_LOCKS; i++)
        if (t->held_locks[i].lock == lock) return 1;
    return 0;
}

/* the mutex is about to be released: a release, unless a recursive hold remains */
static void releasing(xt_thread *t, uint32_t lock, uint64_t *now)
{
    pthread_state *s = t->pthr;
    int k = s ? find_held(s, lock) : -1;
    if (k >= 0) {
        if (--s->held[k].depth == 0) s->held[k] = s->held[--s->n_held];
        return;
    }
    uint64_t order = xt_lock_release(t, lock, now);
    xt_record(t, *now, ELG_OMP_RELEASE_LOCK, 0, lock, 0, 0, order, 0);
}

/* ---------------------------------------------------------------- mutexes */
static int traced_lock(pthread_mutex_t *m, int which, const struct timespec *abstime, const void *ra)
{
    xt_thread *t = recording(ra);
    if (!t) {
        if (which == R_TIMEDLOCK) return real_pthread_mutex_timedlock()(m, abstime);
        return which == R_TRYLOCK ? real_pthread_mutex_trylock()(m) : real_pthread_mutex_lock()(m);
    }
    busy = 1;
    uint32_t r = region(which);
    xt_enter(t, stamp(t), r, ELG_NO_ID, ELG_NO_ID);
    int rc = which == R_TIMEDLOCK ? real_pthread_mutex_timedlock()(m, abstime)
             : which == R_TRYLOCK ? real_pthread_mutex_trylock()(m)
                                  : real_pthread_mutex_lock()(m);
    uint64_t now = stamp(t);
    if (rc == 0) acquired(t, mutex_lock_id(m), &now);
    xt_exit(t, now, r);
    busy = 0;
    return rc;
}

__attribute__((visibility("default"))) int pthread_mutex_lock(pthread_mutex_t *m)
{
    return traced_lock(m, R_LOCK, NULL, __builtin_return_address(0));
}

__attribute__((visibility("default"))) int pthread_mutex_trylock(pthread_mutex_t *m)
{
    return traced_lock(m, R_TRYLOCK, NULL, __builtin_return_address(0));
}

__attribute__((visibility("default"))) int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
    return traced_lock(m, R_TIMEDLOCK, abstime, __builtin_return_address(0));
}

/* An unlock or wait is recorded only for a mutex whose acquisition was: a library that tail-calls
 * pthread_mutex_unlock (libgfortran's I/O) shows the program's return address, but took the mutex
 * where it was not recorded. */
__attribute__((visibility("default"))) int pthread_mutex_unlock(pthread_mutex_t *m)
{
    xt_thread *t = recording(__builtin_return_address(0));
    if (!t || !holds(t, xt_lock_find((uintptr_t)m, ELG_LOCK_PTHREAD_MUTEX))) return real_pthread_mutex_unlock()(m);
    busy = 1;
    uint32_t r = region(R_UNLOCK);
    uint64_t now = stamp(t);
    xt_enter(t, now, r, ELG_NO_ID, ELG_NO_ID);
    releasing(t, mutex_lock_id(m), &now); /* before the real unlock: no successor can acquire earlier */
    int rc = real_pthread_mutex_unlock()(m);
    xt_exit(t, stamp(t), r);
    busy = 0;
    return rc;
}

/* ---------------------------------------------------------------- condition variables */
static int traced_wait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime, const void *ra)
{
    xt_thread *t = recording(ra);
    if (!t || !holds(t, xt_lock_find((uintptr_t)m, ELG_LOCK_PTHREAD_MUTEX)))
        return abstime ? real_pthread_cond_timedwait()(c, m, abstime) : real_pthread_cond_wait()(c, m);
    busy = 1;
    uint32_t r = region(abstime ? R_TIMEDWAIT : R_WAIT);
    uint32_t lock = mutex_lock_id(m);
    uint64_t now = stamp(t);
    xt_enter(t, now, r, ELG_NO_ID, ELG_NO_ID);
    releasing(t, lock, &now); /* the wait gives the mutex up ... */
    int rc = abstime ? real_pthread_cond_timedwait()(c, m, abstime) : real_pthread_cond_wait()(c, m);
    now = stamp(t);
    acquired(t, lock, &now); /* ... and holds it again when it returns (also on a timeout) */
    xt_exit(t, now, r);
    busy = 0;
    return rc;
}

__attribute__((visibility("default"))) int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    return traced_wait(c, m, NULL, __builtin_return_address(0));
}

__attribute__((visibility("default"))) int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                                                  const struct timespec *abstime)
{
    return traced_wait(c, m, abstime, __builtin_return_address(0));
}

static int traced_signal(pthread_cond_t *c, int which, const void *ra)
{
    xt_thread *t = recording(ra);
    if (!t) return which == R_SIGNAL ? real_pthread_cond_signal()(c) : real_pthread_cond_broadcast()(c);
    busy = 1;
    uint32_t r = region(which);
    xt_enter(t, stamp(t), r, ELG_NO_ID, ELG_NO_ID);
    int rc = which == R_SIGNAL ? real_pthread_cond_signal()(c) : real_pthread_cond_broadcast()(c);
    xt_exit(t, stamp(t), r);
    busy = 0;
    return rc;
}

__attribute__((visibility("default"))) int pthread_cond_signal(pthread_cond_t *c)
{
    return traced_signal(c, R_SIGNAL, __builtin_return_address(0));
}

__attribute__((visibility("default"))) int pthread_cond_broadcast(pthread_cond_t *c)
{
    return traced_signal(c, R_BROADCAST, __builtin_return_address(0));
}

/* ---------------------------------------------------------------- threads */
static _Atomic uint64_t next_thread = 1;

/* pthread_t -> thread id of the traced threads, for pthread_join (a pthread_t may be reused once joined:
 * the latest creation wins) */
#define HANDLE_BITS 14
#define HANDLE_SIZE (1u << HANDLE_BITS)
static struct {
    _Atomic uintptr_t key;
    _Atomic uint64_t id;
} handles[HANDLE_SIZE];

static void handle_put(pthread_t th, uint64_t id)
{
    uintptr_t k = (uintptr_t)th;
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> (64 - HANDLE_BITS));
    for (unsigned probe = 0; probe < HANDLE_SIZE; probe++, i = (i + 1) & (HANDLE_SIZE - 1)) {
        uintptr_t expected = 0;
        if (atomic_compare_exchange_strong(&handles[i].key, &expected, k) || expected == k) {
            atomic_store_explicit(&handles[i].id, id, memory_order_release);
            return;
        }
    }
}

static uint64_t handle_get(pthread_t th)
{
    uintptr_t k = (uintptr_t)th;
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> (64 - HANDLE_BITS));
    for (unsigned probe = 0; probe < HANDLE_SIZE; probe++, i = (i + 1) & (HANDLE_SIZE - 1)) {
        uintptr_t have = atomic_load_explicit(&handles[i].key, memory_order_acquire);
        if (have == k) return atomic_load_explicit(&handles[i].id, memory_order_acquire);
        if (have == 0) return 0;
    }
    return 0;
}

typedef struct start {
    void *(*fn)(void *);
    void *arg;
    uint64_t id;
} start_t;

/* the end of a traced thread's lifetime: its open regions end now, THREAD_END, the location goes back */
static void lifetime_end(xt_thread *t)
{
    pthread_state *s = t->pthr;
    if (!s || !s->lifetime) return;
    uint64_t now = stamp(t);
    if (t->held_exit_region != ELG_NO_ID) xt_flush_held_exit_counted(t);
    while (t->depth > 0 && t->depth <= XT_STACK_MAX) xt_leave(t, now, ELG_EXIT, t->stack[t->depth - 1].region, 0, 0, 0, 0);
    xt_record(t, now, ELG_THREAD_END, 0, 0, 0, 0, s->lifetime, 0);
    s->lifetime = 0;
    s->n_held = 0;
    t->root_region = ELG_NO_ID;
    t->root_merged = 0;
    xt_thread_release(t);
}

static void *trampoline(void *p)
{
    start_t st = *(start_t *)p;
    free(p);
    xt_thread *t = atomic_load_explicit(&xt_recording, memory_order_relaxed) ? xt_thread_attach_pooled() : NULL;
    if (!t) return st.fn(st.arg);
    pthread_state *s = state(t);
    s->lifetime = st.id;
    s->n_held = 0;
    uint64_t now = stamp(t);
    xt_record(t, now, ELG_THREAD_BEGIN, 0, 0, 0, 0, st.id, 0);
    uint32_t r = xt_region_by_addr((uintptr_t)st.fn, 0, XT_ADDR_FUNCTION, "", ELG_PARADIGM_COMPILER,
                                   ELG_ROLE_FUNCTION);
    if (r < ELG_NO_ID - 8) { /* not filtered out (EXPERT_FILTER) */
        xt_enter(t, now, r, ELG_NO_ID, ELG_NO_ID);
        t->root_region = r; /* -finstrument-functions' enter of the routine is this one (cyg.c) */
    }
    void *ret = st.fn(st.arg);
    t = xt_tls; /* still this thread's location (nothing detaches it but lifetime_end) */
    if (t) lifetime_end(t);
    return ret;
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                                                          void *(*fn)(void *), void *arg)
{
    xt_thread *t = recording(__builtin_return_address(0));
    if (!t) return real_pthread_create()(th, attr, fn, arg);
    start_t *st = malloc(sizeof *st);
    if (!st) return real_pthread_create()(th, attr, fn, arg);
    busy = 1;
    uint32_t r = region(R_CREATE);
    uint64_t t0 = stamp(t);
    xt_enter(t, t0, r, ELG_NO_ID, ELG_NO_ID);
    st->fn = fn;
    st->arg = arg;
    st->id = atomic_fetch_add(&next_thread, 1);
    uint64_t id = st->id;
    busy = 0; /* the C library's pthread_create may take locks of its own */
    int rc = real_pthread_create()(th, attr, trampoline, st);
    busy = 1;
    if (rc == 0) {
        handle_put(*th, id);
        xt_record(t, t0, ELG_THREAD_CREATE, 0, 0, 0, 0, id, 0); /* stamped before the thread can begin */
    } else {
        free(st);
    }
    xt_exit(t, stamp(t), r);
    busy = 0;
    return rc;
}

__attribute__((visibility("default"))) int pthread_join(pthread_t th, void **ret)
{
    xt_thread *t = recording(__builtin_return_address(0));
    if (!t) return real_pthread_join()(th, ret);
    uint64_t id = handle_get(th);
    busy = 1;
    uint32_t r = region(R_JOIN);
    xt_enter(t, stamp(t), r, ELG_NO_ID, ELG_NO_ID);
    busy = 0;
    int rc = real_pthread_join()(th, ret);
    busy = 1;
    uint64_t now = stamp(t);
    if (rc == 0 && id) xt_record(t, now, ELG_THREAD_JOIN, 0, 0, 0, 0, id, 0);
    xt_exit(t, now, r);
    busy = 0;
    return rc;
}

__attribute__((visibility("default"))) void pthread_exit(void *ret)
{
    xt_thread *t = xt_tls;
    if (t && t->pthr && ((pthread_state *)t->pthr)->lifetime) {
        busy = 1;
        uint32_t r = region(R_EXIT);
        xt_enter(t, stamp(t), r, ELG_NO_ID, ELG_NO_ID);
        lifetime_end(t); /* closes pthread_exit and the start routine */
        busy = 0;
    }
    real_pthread_exit()(ret);
}
