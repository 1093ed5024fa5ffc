/* pomp.c - the POMP interface (include/pomp.h): OpenMP events from source-level instrumentation.
 *
 * expert-instrument rewrites each OpenMP directive into POMP calls that pass a per-construct context
 * descriptor.  The events written are those of the OMPT path (ompt.c), with two differences that
 * source instrumentation makes possible: regions carry the construct's exact file and line range
 * from the descriptor, and implicit barriers are real (explicit) barriers the instrumenter inserted,
 * so no reordering or clamping is needed.  Once POMP is in use the OMPT callbacks record nothing
 * (xt_pomp_active), so a POMP program on libomp is not recorded twice.
 *
 * Team identity: the encountering thread allocates the team id in POMP_Parallel_fork and keeps it on
 * its own fork stack; it also publishes it in the descriptor, where the workers read it in
 * POMP_Parallel_begin.  Thread 0 of the new team is the forking thread itself and always uses its
 * own stack.  (Two teams forked at the same moment from the same construct, which needs nested
 * parallelism enabled, could make a worker read the other team's id; docs/instrument.md.)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expert.h"
#include "pomp.h"
#include "xt.h"

/* set by the first POMP call: the OMPT callbacks (ompt.c) stop recording (declared in xt.h) */
XT_HIDDEN atomic_int xt_pomp_active;

/* The OpenMP runtime's routines, if one is loaded (weak: the library also serves non-OpenMP programs).
 * The lock types are opaque here; only pointers are passed through. */
extern int omp_get_thread_num(void) __attribute__((weak));
extern int omp_get_num_threads(void) __attribute__((weak));
extern int omp_get_max_threads(void) __attribute__((weak));
extern void omp_init_lock(void *) __attribute__((weak));
extern void omp_destroy_lock(void *) __attribute__((weak));
extern void omp_set_lock(void *) __attribute__((weak));
extern void omp_unset_lock(void *) __attribute__((weak));
extern int omp_test_lock(void *) __attribute__((weak));
extern void omp_init_nest_lock(void *) __attribute__((weak));
extern void omp_destroy_nest_lock(void *) __attribute__((weak));
extern void omp_set_nest_lock(void *) __attribute__((weak));
extern void omp_unset_nest_lock(void *) __attribute__((weak));
extern int omp_test_nest_lock(void *) __attribute__((weak));

#define POMP_EXPORT __attribute__((visibility("default")))

typedef struct ompregdescr pomp_descr;

/* uses of the descriptor's data words (region and lock ids are stored +1 so 0 means "not yet") */
enum { DATA_TEAM = 0, DATA_MAIN = 1, DATA_BODY = 2, DATA_EXTRA = 3 };

/* ---------------------------------------------------------------- per-thread state */
#define POMP_DEPTH 64
typedef struct {
    uint32_t team, index, size;
} pomp_team;
typedef struct {
    uint32_t team, size;
    uint64_t spooled; /* where the FORK record sits (to patch in the actual team size) */
    uint32_t index;
} pomp_fork;
typedef struct {
    pomp_team teams[POMP_DEPTH]; /* teams this thread is a member of, innermost last */
    int nteams;
    pomp_fork forks[POMP_DEPTH]; /* teams this thread forked and has not joined yet */
    int nforks;
} pomp_thread;
static _Thread_local pomp_thread pomp_tls __attribute__((tls_model("initial-exec")));

static atomic_uint next_team = 1; /* team ids count from 1, as on the OMPT path */
static atomic_int finalized;

static inline void pomp_seen(void)
{
    if (XT_UNLIKELY(!atomic_load_explicit(&xt_pomp_active, memory_order_relaxed))) {
        xt_init();
        atomic_store(&xt_pomp_active, 1);
    }
}

/* the calling thread if OpenMP events are being recorded, else NULL */
static inline xt_thread *recording(void)
{
    pomp_seen();
    if (XT_UNLIKELY(!atomic_load_explicit(&xt_recording, memory_order_relaxed) || !xt_cfg.record_omp ||
                    atomic_load_explicit(&finalized, memory_order_relaxed)))
        return NULL;
    return xt_self();
}

static inline pomp_team *current_team(void)
{
    pomp_thread *p = &pomp_tls;
    return p->nteams > 0 && p->nteams <= POMP_DEPTH ? &p->teams[p->nteams - 1] : NULL;
}

/* ---------------------------------------------------------------- regions from descriptors */
static const char *base_name(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : (path ? path : "");
}

static uint32_t line_of(int line) { return line > 0 ? (uint32_t)line : ELG_NO_ID; }

/* "!$omp <label> @file.c:12", with the descriptor's file and begin..end lines */
static uint32_t construct_region(pomp_descr *d, int slot, const char *label, uint8_t role)
{
    long cached = __atomic_load_n(&d->data[slot], __ATOMIC_ACQUIRE);
    if (XT_LIKELY(cached)) return (uint32_t)(cached - 1);
    char name[512];
    snprintf(name, sizeof name, "!$omp %s @%s:%d", label, base_name(d->file_name), d->begin_line1);
    uint32_t id = xt_region_define_range(name, d->file_name, line_of(d->begin_line1), line_of(d->end_lineN),
                                         ELG_PARADIGM_OPENMP, role);
    __atomic_store_n(&d->data[slot], (long)id + 1, __ATOMIC_RELEASE); /* racing threads store the same id */
    return id;
}

static uint32_t api_region(const char *name, _Atomic uint32_t *cache)
{
    uint32_t id = atomic_load_explicit(cache, memory_order_acquire);
    if (XT_LIKELY(id)) return id - 1;
    id = xt_region_define(name, "OMP", ELG_NO_ID, ELG_PARADIGM_OPENMP, ELG_ROLE_OMP_LOCK_API);
    atomic_store_explicit(cache, id + 1, memory_order_release);
    return id;
}

/* ---------------------------------------------------------------- parallel regions */
POMP_EXPORT void POMP_Parallel_fork(pomp_descr *d)
{
    xt_thread *t = recording();
    pomp_thread *p = &pomp_tls;
    uint32_t id = atomic_fetch_add(&next_team, 1);
    uint32_t requested = omp_get_max_threads ? (uint32_t)omp_get_max_threads() : 1;
    __atomic_store_n(&d->data[DATA_TEAM], (long)id, __ATOMIC_RELEASE);
    pomp_fork *f = p->nforks < POMP_DEPTH ? &p->forks[p->nforks] : NULL;
    p->nforks++;
    if (f) {
        f->team = id;
        f->size = requested;
        f->spooled = UINT64_MAX;
    }
    if (!t) return;
    if (t->held_exit_region != ELG_NO_ID) xt_flush_held_exit_counted(t);
    xt_record(t, xt_now(), ELG_OMP_FORK, 0, id, 0, requested, 0, 0);
    if (f) {
        f->spooled = t->spooled;
        f->index = t->n - 1;
    }
}

POMP_EXPORT void POMP_Parallel_begin(pomp_descr *d)
{
    pomp_thread *p = &pomp_tls;
    uint32_t index = omp_get_thread_num ? (uint32_t)omp_get_thread_num() : 0;
    uint32_t size = omp_get_num_threads ? (uint32_t)omp_get_num_threads() : 1;
    uint32_t id;
    pomp_fork *f = index == 0 && p->nforks > 0 && p->nforks <= POMP_DEPTH ? &p->forks[p->nforks - 1] : NULL;
    if (f) id = f->team;
    else id = (uint32_t)__atomic_load_n(&d->data[DATA_TEAM], __ATOMIC_ACQUIRE);
    xt_thread *t = recording();
    if (f && f->size != size) { /* the FORK carried the requested size: patch in the actual one */
        f->size = size;
        if (t && t->spooled == f->spooled && f->index < t->n && t->buf[f->index].type == ELG_OMP_FORK)
            t->buf[f->index].c = size;
    }
    if (p->nteams < POMP_DEPTH) p->teams[p->nteams] = (pomp_team){id, index, size};
    p->nteams++;
    if (t) xt_enter(t, xt_now(), construct_region(d, DATA_MAIN, "parallel", ELG_ROLE_OMP_PARALLEL), id, index);
}

POMP_EXPORT void POMP_Parallel_end(pomp_descr *d)
{
    pomp_thread *p = &pomp_tls;
    if (p->nteams > 0) p->nteams--;
    xt_thread *t = recording();
    if (t) xt_exit(t, xt_now(), construct_region(d, DATA_MAIN, "parallel", ELG_ROLE_OMP_PARALLEL));
}

POMP_EXPORT void POMP_Parallel_join(pomp_descr *d)
{
    (void)d;
    pomp_thread *p = &pomp_tls;
    if (p->nforks <= 0) return;
    p->nforks--;
    if (p->nforks >= POMP_DEPTH) return;
    pomp_fork *f = &p->forks[p->nforks];
    xt_thread *t = recording();
    if (t) xt_record(t, xt_now(), ELG_OMP_JOIN, 0, f->team, 0, f->size, 0, 0);
}

/* ---------------------------------------------------------------- work sharing */
static void enter_construct(pomp_descr *d, int slot, const char *label, uint8_t role)
{
    xt_thread *t = recording();
    if (t) xt_enter(t, xt_now(), construct_region(d, slot, label, role), ELG_NO_ID, ELG_NO_ID);
}

static void exit_construct(pomp_descr *d, int slot, const char *label, uint8_t role)
{
    xt_thread *t = recording();
    if (t) xt_exit(t, xt_now(), construct_region(d, slot, label, role));
}

POMP_EXPORT void POMP_For_enter(pomp_descr *d) { enter_construct(d, DATA_MAIN, "for", ELG_ROLE_OMP_LOOP); }
POMP_EXPORT void POMP_For_exit(pomp_descr *d) { exit_construct(d, DATA_MAIN, "for", ELG_ROLE_OMP_LOOP); }
POMP_EXPORT void POMP_Do_enter(pomp_descr *d) { enter_construct(d, DATA_MAIN, "do", ELG_ROLE_OMP_LOOP); }
POMP_EXPORT void POMP_Do_exit(pomp_descr *d) { exit_construct(d, DATA_MAIN, "do", ELG_ROLE_OMP_LOOP); }
POMP_EXPORT void POMP_Workshare_enter(pomp_descr *d)
{
    enter_construct(d, DATA_MAIN, "workshare", ELG_ROLE_OMP_WORKSHARE);
}
POMP_EXPORT void POMP_Workshare_exit(pomp_descr *d)
{
    exit_construct(d, DATA_MAIN, "workshare", ELG_ROLE_OMP_WORKSHARE);
}
POMP_EXPORT void POMP_Sections_enter(pomp_descr *d)
{
    enter_construct(d, DATA_MAIN, "sections", ELG_ROLE_OMP_SECTIONS);
}
POMP_EXPORT void POMP_Sections_exit(pomp_descr *d) { exit_construct(d, DATA_MAIN, "sections", ELG_ROLE_OMP_SECTIONS); }
POMP_EXPORT void POMP_Section_begin(pomp_descr *d) { enter_construct(d, DATA_BODY, "section", ELG_ROLE_OMP_SECTION); }
POMP_EXPORT void POMP_Section_end(pomp_descr *d) { exit_construct(d, DATA_BODY, "section", ELG_ROLE_OMP_SECTION); }
POMP_EXPORT void POMP_Single_enter(pomp_descr *d) { enter_construct(d, DATA_MAIN, "single", ELG_ROLE_OMP_SINGLE); }
POMP_EXPORT void POMP_Single_exit(pomp_descr *d) { exit_construct(d, DATA_MAIN, "single", ELG_ROLE_OMP_SINGLE); }
POMP_EXPORT void POMP_Single_begin(pomp_descr *d)
{
    enter_construct(d, DATA_BODY, "single sblock", ELG_ROLE_OMP_SINGLE_BODY);
}
POMP_EXPORT void POMP_Single_end(pomp_descr *d)
{
    exit_construct(d, DATA_BODY, "single sblock", ELG_ROLE_OMP_SINGLE_BODY);
}
POMP_EXPORT void POMP_Master_begin(pomp_descr *d) { enter_construct(d, DATA_MAIN, "master", ELG_ROLE_OMP_MASTER); }
POMP_EXPORT void POMP_Master_end(pomp_descr *d) { exit_construct(d, DATA_MAIN, "master", ELG_ROLE_OMP_MASTER); }

/* ---------------------------------------------------------------- barriers */
static int is_explicit_barrier(const pomp_descr *d) { return d->name && strcmp(d->name, "barrier") == 0; }

static uint32_t barrier_region(pomp_descr *d)
{
    if (is_explicit_barrier(d)) return construct_region(d, DATA_MAIN, "barrier", ELG_ROLE_OMP_BARRIER);
    return construct_region(d, DATA_EXTRA, "ibarrier", ELG_ROLE_OMP_IMPLICIT_BARRIER);
}

POMP_EXPORT void POMP_Barrier_enter(pomp_descr *d)
{
    xt_thread *t = recording();
    if (!t) return;
    pomp_team *tm = current_team();
    xt_enter(t, xt_now(), barrier_region(d), ELG_NO_ID, ELG_NO_ID);
    /* a barrier still open at the end is closed with OMP_COLLEXIT for its team (shutdown.c) */
    if (tm && t->depth - 1 < XT_STACK_MAX) t->stack[t->depth - 1].team = tm->team;
}

POMP_EXPORT void POMP_Barrier_exit(pomp_descr *d)
{
    xt_thread *t = recording();
    if (!t) return;
    pomp_team *tm = current_team();
    uint32_t region = barrier_region(d);
    if (tm) xt_leave(t, xt_now(), ELG_OMP_COLLEXIT, region, tm->team, 0, 0, 0);
    else xt_exit(t, xt_now(), region); /* a barrier outside any parallel region binds to no team */
}

/* ---------------------------------------------------------------- critical and atomic */
/* Critical sections are locks named after the critical's name ("" = the unnamed one), as in EPIK:
 * every critical with the same name is the same lock.  Names are interned so a pointer is the key. */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char **critical_names;
static size_t n_critical_names;

static uint32_t critical_lock(pomp_descr *d)
{
    long cached = __atomic_load_n(&d->data[DATA_EXTRA], __ATOMIC_ACQUIRE);
    if (XT_LIKELY(cached)) return (uint32_t)(cached - 1);
    const char *nm = d->sub_name ? d->sub_name : "";
    pthread_mutex_lock(&names_lock);
    const char *key = NULL;
    for (size_t i = 0; i < n_critical_names; i++)
        if (strcmp(critical_names[i], nm) == 0) key = critical_names[i];
    if (!key) {
        critical_names = realloc(critical_names, (n_critical_names + 1) * sizeof *critical_names);
        key = critical_names[n_critical_names++] = strdup(nm);
    }
    pthread_mutex_unlock(&names_lock);
    char label[128];
    snprintf(label, sizeof label, "critical %s", *nm ? nm : "(unnamed)");
    uint32_t id = xt_lock_id((uintptr_t)key, ELG_LOCK_OMP_CRITICAL, label);
    __atomic_store_n(&d->data[DATA_EXTRA], (long)id + 1, __ATOMIC_RELEASE);
    return id;
}

static uint32_t critical_region(pomp_descr *d)
{
    long cached = __atomic_load_n(&d->data[DATA_MAIN], __ATOMIC_ACQUIRE);
    if (XT_LIKELY(cached)) return (uint32_t)(cached - 1);
    char label[200];
    if (d->sub_name && *d->sub_name) snprintf(label, sizeof label, "critical(%s)", d->sub_name);
    else snprintf(label, sizeof label, "critical");
    return construct_region(d, DATA_MAIN, label, ELG_ROLE_OMP_CRITICAL);
}

POMP_EXPORT void POMP_Critical_enter(pomp_descr *d)
{
    xt_thread *t = recording();
    if (t) xt_enter(t, xt_now(), critical_region(d), ELG_NO_ID, ELG_NO_ID);
}

/* begin/end run inside the critical section, so the order counter follows the real acquisitions */
POMP_EXPORT void POMP_Critical_begin(pomp_descr *d)
{
    xt_thread *t = recording();
    if (!t) return;
    uint32_t lock = critical_lock(d);
    uint64_t now = xt_now();
    uint64_t order = xt_lock_acquire(t, lock, &now);
    xt_record(t, now, ELG_OMP_ACQUIRE_LOCK, 0, lock, 0, 0, order, 0);
    xt_enter(t, now, construct_region(d, DATA_BODY, "critical sblock", ELG_ROLE_OMP_CRITICAL_BODY), ELG_NO_ID,
             ELG_NO_ID);
}

POMP_EXPORT void POMP_Critical_end(pomp_descr *d)
{
    xt_thread *t = recording();
    if (!t) return;
    uint32_t lock = critical_lock(d);
    uint64_t now = xt_now();
    uint64_t order = xt_lock_release(t, lock, &now); /* still held: no successor yet, now stays */
    xt_exit(t, now, construct_region(d, DATA_BODY, "critical sblock", ELG_ROLE_OMP_CRITICAL_BODY));
    xt_record(t, now, ELG_OMP_RELEASE_LOCK, 0, lock, 0, 0, order, 0);
}

POMP_EXPORT void POMP_Critical_exit(pomp_descr *d)
{
    xt_thread *t = recording();
    if (t) xt_exit(t, xt_now(), critical_region(d));
}

POMP_EXPORT void POMP_Atomic_enter(pomp_descr *d) { enter_construct(d, DATA_MAIN, "atomic", ELG_ROLE_OMP_ATOMIC); }
POMP_EXPORT void POMP_Atomic_exit(pomp_descr *d) { exit_construct(d, DATA_MAIN, "atomic", ELG_ROLE_OMP_ATOMIC); }
POMP_EXPORT void POMP_Flush_enter(pomp_descr *d) { enter_construct(d, DATA_MAIN, "flush", ELG_ROLE_OMP_FLUSH); }
POMP_EXPORT void POMP_Flush_exit(pomp_descr *d) { exit_construct(d, DATA_MAIN, "flush", ELG_ROLE_OMP_FLUSH); }

/* ---------------------------------------------------------------- tasks
 * Source instrumentation sees a task's creation and its whole body, not the runtime's switches: every
 * task is one fragment (START .. COMPLETE) on the thread that runs it, nested in whatever that thread
 * was doing (a barrier, a taskwait, another task), as the format wants (docs/format.md §6.1).  An untied
 * task that moves between threads is therefore seen on the thread that started it; undeferred tasks
 * (if(0)) are not flagged, the if clause's value being known only to the OpenMP runtime. */
static _Atomic uint64_t next_task = 1; /* task ids per process, from 1 */
#define POMP_TASKS 128
static _Thread_local struct {
    uint64_t id[POMP_TASKS]; /* the tasks this thread is running, innermost last */
    int n;
} pomp_task_tls __attribute__((tls_model("initial-exec")));

static uint64_t running_task(void)
{
    int n = pomp_task_tls.n;
    return n > 0 && n <= POMP_TASKS ? pomp_task_tls.id[n - 1] : 0;
}

static uint64_t task_now(xt_thread *t)
{
    uint64_t now = xt_now();
    return now < xt_last_time(t) ? xt_last_time(t) : now;
}

POMP_EXPORT unsigned long long POMP_Task_create(pomp_descr *d, int flags)
{
    uint64_t id = atomic_fetch_add(&next_task, 1);
    xt_thread *t = recording();
    if (!t) return id;
    uint32_t region = construct_region(d, DATA_MAIN, "task", ELG_ROLE_OMP_TASK);
    if (t->held_exit_region != ELG_NO_ID) xt_flush_held_exit_counted(t);
    xt_record(t, task_now(t), ELG_OMP_TASK_CREATE, (uint8_t)(flags & (ELG_TASK_UNTIED | ELG_TASK_MERGEABLE)), region,
              0, 0, id, running_task());
    return id;
}

POMP_EXPORT void POMP_Task_begin(pomp_descr *d, unsigned long long task)
{
    int n = pomp_task_tls.n++;
    if (n < POMP_TASKS) pomp_task_tls.id[n] = task;
    xt_thread *t = recording();
    if (!t) return;
    uint32_t region = construct_region(d, DATA_MAIN, "task", ELG_ROLE_OMP_TASK);
    uint64_t now = task_now(t);
    xt_enter(t, now, region, ELG_NO_ID, ELG_NO_ID);
    xt_record(t, now, ELG_OMP_TASK_BEGIN, 0, region, 0, ELG_TASK_SWITCH_START, task, 0);
}

POMP_EXPORT void POMP_Task_end(pomp_descr *d, unsigned long long task)
{
    if (pomp_task_tls.n > 0) pomp_task_tls.n--;
    xt_thread *t = recording();
    if (!t) return;
    uint32_t region = construct_region(d, DATA_MAIN, "task", ELG_ROLE_OMP_TASK);
    uint64_t now = task_now(t);
    xt_record(t, now, ELG_OMP_TASK_END, 0, region, 0, ELG_TASK_SWITCH_COMPLETE, task, 0);
    xt_exit(t, now, region);
}

POMP_EXPORT void POMP_Taskwait_enter(pomp_descr *d)
{
    enter_construct(d, DATA_MAIN, "taskwait", ELG_ROLE_OMP_TASKWAIT);
}
POMP_EXPORT void POMP_Taskwait_exit(pomp_descr *d) { exit_construct(d, DATA_MAIN, "taskwait", ELG_ROLE_OMP_TASKWAIT); }
POMP_EXPORT void POMP_Taskgroup_enter(pomp_descr *d)
{
    enter_construct(d, DATA_MAIN, "taskgroup", ELG_ROLE_OMP_TASKGROUP);
}
POMP_EXPORT void POMP_Taskgroup_exit(pomp_descr *d)
{
    exit_construct(d, DATA_MAIN, "taskgroup", ELG_ROLE_OMP_TASKGROUP);
}
POMP_EXPORT void POMP_Taskgroup_wait_enter(pomp_descr *d)
{
    enter_construct(d, DATA_BODY, "taskgroup wait", ELG_ROLE_OMP_TASKWAIT);
}
POMP_EXPORT void POMP_Taskgroup_wait_exit(pomp_descr *d)
{
    exit_construct(d, DATA_BODY, "taskgroup wait", ELG_ROLE_OMP_TASKWAIT);
}

/* ---------------------------------------------------------------- the lock API */
static _Atomic uint32_t set_lock_r, unset_lock_r, test_lock_r, set_nest_r, unset_nest_r, test_nest_r;

static uint32_t api_lock(void *lock, uint8_t kind)
{
    char name[64];
    snprintf(name, sizeof name, "%s %p", kind == ELG_LOCK_OMP_NEST_LOCK ? "omp_nest_lock" : "omp_lock", lock);
    return xt_lock_id((uintptr_t)lock, kind, name);
}

/* Nest locks: only the outermost set and the last unset acquire and release the lock.  The owner
 * alone changes a lock's depth, and only while it holds the lock, so no synchronisation is needed. */
#define NEST_SLOTS 65536
static uint32_t *nest_depth;
static pthread_once_t nest_once = PTHREAD_ONCE_INIT;
static void nest_alloc(void) { nest_depth = calloc(NEST_SLOTS, sizeof *nest_depth); }

POMP_EXPORT void POMP_Init_lock(void *lock)
{
    pomp_seen();
    if (omp_init_lock) omp_init_lock(lock);
}
POMP_EXPORT void POMP_Destroy_lock(void *lock)
{
    pomp_seen();
    if (omp_destroy_lock) omp_destroy_lock(lock);
}
POMP_EXPORT void POMP_Init_nest_lock(void *lock)
{
    pomp_seen();
    if (omp_init_nest_lock) omp_init_nest_lock(lock);
}
POMP_EXPORT void POMP_Destroy_nest_lock(void *lock)
{
    pomp_seen();
    if (omp_destroy_nest_lock) omp_destroy_nest_lock(lock);
}

POMP_EXPORT void POMP_Set_lock(void *lock)
{
    xt_thread *t = recording();
    uint32_t r = t ? api_region("omp_set_lock", &set_lock_r) : 0;
    if (t) xt_enter(t, xt_now(), r, ELG_NO_ID, ELG_NO_ID);
    if (omp_set_lock) omp_set_lock(lock);
    if (!t) return;
    uint64_t now = xt_now();
    uint32_t id = api_lock(lock, ELG_LOCK_OMP_LOCK);
    uint64_t order = xt_lock_acquire(t, id, &now);
    xt_record(t, now, ELG_OMP_ACQUIRE_LOCK, 0, id, 0, 0, order, 0);
    xt_exit(t, now, r);
}

POMP_EXPORT void POMP_Unset_lock(void *lock)
{
    xt_thread *t = recording();
    if (t) { /* the release is recorded while the lock is still held, so its order is this holder's */
        uint32_t r = api_region("omp_unset_lock", &unset_lock_r);
        uint32_t id = api_lock(lock, ELG_LOCK_OMP_LOCK);
        uint64_t now = xt_now();
        uint64_t order = xt_lock_release(t, id, &now);
        xt_enter(t, now, r, ELG_NO_ID, ELG_NO_ID);
        xt_record(t, now, ELG_OMP_RELEASE_LOCK, 0, id, 0, 0, order, 0);
        if (omp_unset_lock) omp_unset_lock(lock);
        xt_exit(t, xt_now(), r);
    } else if (omp_unset_lock) {
        omp_unset_lock(lock);
    }
}

POMP_EXPORT int POMP_Test_lock(void *lock)
{
    xt_thread *t = recording();
    uint32_t r = t ? api_region("omp_test_lock", &test_lock_r) : 0;
    if (t) xt_enter(t, xt_now(), r, ELG_NO_ID, ELG_NO_ID);
    int got = omp_test_lock ? omp_test_lock(lock) : 0;
    if (!t) return got;
    uint64_t now = xt_now();
    if (got) {
        uint32_t id = api_lock(lock, ELG_LOCK_OMP_LOCK);
        uint64_t order = xt_lock_acquire(t, id, &now);
        xt_record(t, now, ELG_OMP_ACQUIRE_LOCK, 0, id, 0, 0, order, 0);
    }
    xt_exit(t, now, r);
    return got;
}

static uint64_t nest_acquired(xt_thread *t, void *lock, uint64_t now)
{
    uint32_t id = api_lock(lock, ELG_LOCK_OMP_NEST_LOCK);
    pthread_once(&nest_once, nest_alloc);
    if (id < NEST_SLOTS && nest_depth[id]++ > 0) return now; /* re-acquired by its owner */
    uint64_t order = xt_lock_acquire(t, id, &now);
    xt_record(t, now, ELG_OMP_ACQUIRE_LOCK, 0, id, 0, 0, order, 0);
    return now;
}

POMP_EXPORT void POMP_Set_nest_lock(void *lock)
{
    xt_thread *t = recording();
    uint32_t r = t ? api_region("omp_set_nest_lock", &set_nest_r) : 0;
    if (t) xt_enter(t, xt_now(), r, ELG_NO_ID, ELG_NO_ID);
    if (omp_set_nest_lock) omp_set_nest_lock(lock);
    if (!t) return;
    uint64_t now = nest_acquired(t, lock, xt_now());
    xt_exit(t, now, r);
}

POMP_EXPORT void POMP_Unset_nest_lock(void *lock)
{
    xt_thread *t = recording();
    if (!t) {
        if (omp_unset_nest_lock) omp_unset_nest_lock(lock);
        return;
    }
    uint32_t r = api_region("omp_unset_nest_lock", &unset_nest_r);
    uint32_t id = api_lock(lock, ELG_LOCK_OMP_NEST_LOCK);
    pthread_once(&nest_once, nest_alloc);
    uint64_t now = xt_now();
    int last = id >= NEST_SLOTS || nest_depth[id] <= 1;
    if (id < NEST_SLOTS && nest_depth[id] > 0) nest_depth[id]--;
    uint64_t order = last ? xt_lock_release(t, id, &now) : 0;
    xt_enter(t, now, r, ELG_NO_ID, ELG_NO_ID);
    if (last) xt_record(t, now, ELG_OMP_RELEASE_LOCK, 0, id, 0, 0, order, 0);
    if (omp_unset_nest_lock) omp_unset_nest_lock(lock);
    xt_exit(t, xt_now(), r);
}

POMP_EXPORT int POMP_Test_nest_lock(void *lock)
{
    xt_thread *t = recording();
    uint32_t r = t ? api_region("omp_test_nest_lock", &test_nest_r) : 0;
    if (t) xt_enter(t, xt_now(), r, ELG_NO_ID, ELG_NO_ID);
    int depth = omp_test_nest_lock ? omp_test_nest_lock(lock) : 0; /* the new nesting count, 0 = not acquired */
    if (!t) return depth;
    uint64_t now = xt_now();
    if (depth > 0) now = nest_acquired(t, lock, now);
    xt_exit(t, now, r);
    return depth;
}

/* ---------------------------------------------------------------- control and user regions */
POMP_EXPORT void POMP_Init(void) { pomp_seen(); }

/* The trace is still written at exit (or at MPI_Finalize); after POMP_Finalize no further POMP
 * events are recorded. */
POMP_EXPORT void POMP_Finalize(void)
{
    pomp_seen();
    atomic_store(&finalized, 1);
}

POMP_EXPORT void POMP_On(void)
{
    pomp_seen();
    expert_resume();
}

POMP_EXPORT void POMP_Off(void)
{
    pomp_seen();
    expert_pause();
}

static uint32_t user_region(pomp_descr *d)
{
    long cached = __atomic_load_n(&d->data[DATA_MAIN], __ATOMIC_ACQUIRE);
    if (XT_LIKELY(cached)) return (uint32_t)(cached - 1);
    uint32_t id = xt_region_define_range(d->sub_name && *d->sub_name ? d->sub_name : "user region", d->file_name,
                                         line_of(d->begin_line1), line_of(d->end_lineN), ELG_PARADIGM_USER,
                                         ELG_ROLE_USER_REGION);
    __atomic_store_n(&d->data[DATA_MAIN], (long)id + 1, __ATOMIC_RELEASE);
    return id;
}

POMP_EXPORT void POMP_Begin(pomp_descr *d)
{
    pomp_seen();
    if (!atomic_load_explicit(&xt_recording, memory_order_relaxed) || !xt_cfg.record_user || atomic_load(&finalized))
        return;
    xt_thread *t = xt_self();
    if (t) xt_enter(t, xt_now(), user_region(d), ELG_NO_ID, ELG_NO_ID);
}

POMP_EXPORT void POMP_End(pomp_descr *d)
{
    pomp_seen();
    if (!atomic_load_explicit(&xt_recording, memory_order_relaxed) || !xt_cfg.record_user || atomic_load(&finalized))
        return;
    xt_thread *t = xt_self();
    if (t) xt_exit(t, xt_now(), user_region(d));
}
