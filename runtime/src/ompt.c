/* ompt.c - OpenMP events through the OMPT tool interface (LLVM libomp).
 *
 * Two ordering quirks of libomp are repaired here (see docs/runtime.md):
 *  - a work-sharing construct's end is reported before its implicit barrier begins: the end is
 *    held back (xt_thread.held_exit_*) so the barrier nests inside the construct, as in EPILOG;
 *    a construct without a barrier of its own (nowait) is closed before the next explicit barrier
 *    or the parallel region's closing barrier instead;
 *  - a worker's end-of-parallel barrier end (and its implicit-task end) are reported only when the
 *    worker is reused or at shutdown: their times are clamped to the master's barrier end.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp-tools.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

/* ---------------------------------------------------------------- teams */
#define TEAM_SLOTS 4096 /* ring of team records; a slot is checked by id before use */
typedef struct team {
    uint32_t id, size;
    const void *codeptr;
    uint32_t par_region;
    _Atomic uint64_t barrier_end; /* master's end-of-parallel barrier exit time, 0 until known */
    const void *sections;         /* GCC's combined `parallel sections`: its call site (gomp.c), else NULL */
    uint64_t fork_spooled;        /* where the FORK record sits, to patch in the actual team size */
    uint32_t fork_index;
} team_t;
static team_t teams[TEAM_SLOTS];
static atomic_uint next_team = 1; /* team ids count from 1 */

#define MSTACK 32
typedef struct omp_thread {
    team_t *team;      /* innermost team of this thread */
    uint32_t team_id;
    uint32_t index;    /* thread number in that team */
    /* the enclosing teams of nested parallel regions, restored when an inner implicit task ends */
    struct {
        team_t *team;
        uint32_t team_id, index;
    } outer[MSTACK];
    int nouter;
    /* the barrier in progress */
    uint32_t bar_region, bar_team, bar_work; /* bar_work: held-back work region the barrier ends */
    int bar_parallel_end;
    /* open work-sharing constructs */
    struct {
        uint32_t region, body;
        uint32_t team;       /* the team it belongs to (nested parallelism) */
        int single;          /* a single construct: GCC's single has no end event; its barrier is GOMP_barrier */
        const void *codeptr; /* where it is: names its implicit barrier if that has no code address */
    } work[MSTACK];
    int nwork;
    /* the construct whose end is held back (xt_thread.held_exit_region): a single?  where? */
    int held_single;
    const void *held_codeptr;
    /* open mutex constructs (critical, ordered, atomic, lock API) */
    struct {
        uint64_t wait_id;
        uint32_t outer, body;
        int kind;
    } mutex[MSTACK];
    int nmutex;
    int testing; /* inside omp_test_lock / omp_test_nest_lock (our wrapper) */
} omp_thread;

static inline omp_thread *omp_state(xt_thread *t)
{
    if (XT_UNLIKELY(!t->omp)) {
        omp_thread *o = calloc(1, sizeof(omp_thread));
        o->bar_region = o->bar_work = o->bar_team = ELG_NO_ID;
        t->omp = o;
    }
    return t->omp;
}

static inline xt_thread *active_thread(void)
{
    if (XT_UNLIKELY(!atomic_load_explicit(&xt_recording, memory_order_relaxed))) return NULL;
    if (XT_UNLIKELY(atomic_load_explicit(&xt_pomp_active, memory_order_relaxed))) return NULL;
    return xt_self();
}

static uint32_t omp_region(const void *codeptr, uint32_t subkind, const char *label, uint8_t role)
{
    return xt_region_by_addr((uintptr_t)codeptr, subkind, XT_ADDR_OMP, label, ELG_PARADIGM_OPENMP, role);
}

/* Lock-API regions are defined once each: the lock path is hot, and a definition takes a mutex. */
enum { API_SET, API_SET_NEST, API_UNSET, API_UNSET_NEST, API_TEST, API_TEST_NEST, N_API };
static const char *const api_names[N_API] = {"omp_set_lock",   "omp_set_nest_lock", "omp_unset_lock",
                                             "omp_unset_nest_lock", "omp_test_lock", "omp_test_nest_lock"};
static _Atomic uint32_t api_ids[N_API]; /* region id + 1, 0 = not defined yet */

static uint32_t api_region(int which)
{
    uint32_t id = atomic_load_explicit(&api_ids[which], memory_order_acquire);
    if (XT_LIKELY(id)) return id - 1;
    id = xt_region_define(api_names[which], "OMP", ELG_NO_ID, ELG_PARADIGM_OPENMP, ELG_ROLE_OMP_LOCK_API);
    atomic_store_explicit(&api_ids[which], id + 1, memory_order_release); /* racing threads store the same id */
    return id;
}

/* a clamped time never goes back behind the thread's last event */
static uint64_t clamp_to(xt_thread *t, uint64_t now, uint64_t limit)
{
    uint64_t v = limit && limit < now ? limit : now;
    if (xt_last_time(t) > v) v = xt_last_time(t);
    return v;
}

/* ---------------------------------------------------------------- parallel regions */
static void on_parallel_begin(ompt_data_t *enc_task, const ompt_frame_t *enc_frame, ompt_data_t *parallel_data,
                              unsigned int requested, int flags, const void *codeptr)
{
    (void)enc_task, (void)enc_frame, (void)flags;
    xt_thread *t = active_thread();
    uint32_t id = atomic_fetch_add(&next_team, 1);
    team_t *tm = &teams[id % TEAM_SLOTS];
    tm->id = id;
    tm->size = requested;
    tm->codeptr = codeptr;
    atomic_store(&tm->barrier_end, 0);
    tm->par_region = omp_region(codeptr, 1, "!$omp parallel", ELG_ROLE_OMP_PARALLEL);
    tm->sections = xt_gomp_take_parallel_sections_site();
    parallel_data->ptr = tm;
    if (!t) return;
    if (t->held_exit_region != ELG_NO_ID) xt_flush_held_exit_counted(t);
    uint64_t now = xt_now();
    xt_unwind_point(t, now); /* the fork belongs to the call path of the code that opens the region */
    xt_record(t, now, ELG_OMP_FORK, 0, id, 0, requested, 0, 0);
    tm->fork_spooled = t->spooled;
    tm->fork_index = t->n - 1;
}

static void on_parallel_end(ompt_data_t *parallel_data, ompt_data_t *enc_task, int flags, const void *codeptr)
{
    (void)enc_task, (void)flags, (void)codeptr;
    xt_thread *t = active_thread();
    team_t *tm = parallel_data->ptr;
    if (!t || !tm) return;
    if (t->held_exit_region != ELG_NO_ID) xt_flush_held_exit_counted(t);
    uint64_t now = xt_now();
    xt_unwind_point(t, now);
    xt_record(t, now, ELG_OMP_JOIN, 0, tm->id, 0, tm->size, 0, 0);
}

static void on_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel_data, ompt_data_t *task_data,
                             unsigned int actual, unsigned int index, int flags)
{
    if (flags & ompt_task_initial) return;
    xt_thread *t = active_thread();
    if (!t) return;
    omp_thread *o = omp_state(t);
    if (endpoint == ompt_scope_begin) {
        team_t *tm = parallel_data ? parallel_data->ptr : NULL;
        if (!tm) return;
        task_data->ptr = tm;
        if (index == 0 && actual != tm->size) { /* the FORK carried the requested size: patch in the actual one */
            tm->size = actual;
            if (t->spooled == tm->fork_spooled && tm->fork_index < t->n &&
                t->buf[tm->fork_index].type == ELG_OMP_FORK)
                t->buf[tm->fork_index].c = actual;
        }
        if (o->nouter < MSTACK) {
            o->outer[o->nouter].team = o->team;
            o->outer[o->nouter].team_id = o->team_id;
            o->outer[o->nouter].index = o->index;
        }
        o->nouter++;
        o->team = tm;
        o->team_id = tm->id;
        o->index = index;
        xt_enter(t, xt_now(), tm->par_region, tm->id, index);
    } else {
        team_t *tm = task_data->ptr;
        if (!tm) return;
        uint64_t now = xt_now();
        if (index != 0 && tm->id == o->team_id) now = clamp_to(t, now, atomic_load(&tm->barrier_end));
        xt_exit(t, now, tm->par_region);
        task_data->ptr = NULL;
        if (o->nouter > 0 && --o->nouter < MSTACK) { /* back in the enclosing team (nested parallelism) */
            o->team = o->outer[o->nouter].team;
            o->team_id = o->outer[o->nouter].team_id;
            o->index = o->outer[o->nouter].index;
        }
    }
}

/* ---------------------------------------------------------------- work sharing */
static void on_work(ompt_work_t wstype, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel_data,
                    ompt_data_t *task_data, uint64_t count, const void *codeptr)
{
    (void)parallel_data, (void)task_data, (void)count;
    xt_thread *t = active_thread();
    if (!t) return;
    omp_thread *o = omp_state(t);
    if (endpoint == ompt_scope_begin) {
        uint32_t region, body = ELG_NO_ID;
        /* GCC's sections on libomp begin as a loop (gomp.c knows where) */
        const void *sections = xt_gomp_take_sections_site();
        if (!sections && o->team) sections = o->team->sections;
        switch ((int)wstype) {
        case ompt_work_loop:
        case 10: case 11: case 12: case 13: /* loop_static / dynamic / guided / other (OpenMP 5.2) */
            if (sections) {
                codeptr = sections;
                region = omp_region(codeptr, 3, "!$omp sections", ELG_ROLE_OMP_SECTIONS);
            } else {
                /* GCC's combined `parallel for` on libomp: the workers' loop has no code address */
                if (!codeptr && o->team) codeptr = o->team->codeptr;
                region = omp_region(codeptr, 2, "!$omp for", ELG_ROLE_OMP_LOOP);
            }
            break;
        case ompt_work_sections:
            region = omp_region(codeptr, 3, "!$omp sections", ELG_ROLE_OMP_SECTIONS);
            break;
        case ompt_work_single_executor:
            region = omp_region(codeptr, 4, "!$omp single", ELG_ROLE_OMP_SINGLE);
            body = omp_region(codeptr, 5, "!$omp single sblock", ELG_ROLE_OMP_SINGLE_BODY);
            break;
        case ompt_work_single_other:
            region = omp_region(codeptr, 4, "!$omp single", ELG_ROLE_OMP_SINGLE);
            break;
        case ompt_work_workshare:
            region = omp_region(codeptr, 6, "!$omp workshare", ELG_ROLE_OMP_WORKSHARE);
            break;
        default: /* distribute, taskloop, scope: not recorded */
            return;
        }
        uint64_t now = xt_now();
        xt_enter(t, now, region, ELG_NO_ID, ELG_NO_ID);
        if (body != ELG_NO_ID) xt_enter(t, now, body, ELG_NO_ID, ELG_NO_ID);
        if (o->nwork < MSTACK) {
            o->work[o->nwork].region = region;
            o->work[o->nwork].body = body;
            o->work[o->nwork].team = o->team_id;
            o->work[o->nwork].single = wstype == ompt_work_single_executor || wstype == ompt_work_single_other;
            o->work[o->nwork].codeptr = codeptr;
        }
        o->nwork++;
    } else {
        if (o->nwork == 0) return;
        o->nwork--;
        if (o->nwork >= MSTACK) return;
        uint64_t now = xt_now();
        if (o->work[o->nwork].body != ELG_NO_ID) xt_exit(t, now, o->work[o->nwork].body);
        if (t->held_exit_region != ELG_NO_ID) xt_flush_held_exit_counted(t);
        /* hold the end back: an implicit barrier may follow and belongs inside the construct */
        t->held_exit_region = o->work[o->nwork].region;
        t->held_exit_time = now;
        o->held_single = o->work[o->nwork].single;
        o->held_codeptr = o->work[o->nwork].codeptr;
    }
}

static void on_masked(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel_data, ompt_data_t *task_data,
                      const void *codeptr)
{
    (void)parallel_data, (void)task_data;
    xt_thread *t = active_thread();
    if (!t) return;
    if (endpoint == ompt_scope_begin) {
        xt_enter(t, xt_now(), omp_region(codeptr, 7, "!$omp master", ELG_ROLE_OMP_MASTER), ELG_NO_ID, ELG_NO_ID);
    } else if (t->depth > 0 && t->depth <= XT_STACK_MAX) {
        /* the end's codeptr is the end of the block, not the construct: close what the begin opened
           (after the call-path frames entered inside the block) */
        uint64_t now = xt_now();
        if (t->n_frames) xt_unwind_close_top(t, now);
        xt_exit(t, now, t->stack[t->depth - 1].region);
    }
}

/* ---------------------------------------------------------------- barriers and taskwait */
/* close the innermost open region (after the call-path frames entered inside it): for ends whose code
 * address is not the begin's (masked, taskgroup) */
static void close_innermost(xt_thread *t, uint64_t now)
{
    if (t->depth <= 0 || t->depth > XT_STACK_MAX) return;
    if (t->n_frames) xt_unwind_close_top(t, now);
    xt_exit(t, now, t->stack[t->depth - 1].region);
}

/* the wait at the end of a taskgroup (sync_region_wait of kind taskgroup), inside the construct */
static void on_sync_region_wait(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel_data,
                                ompt_data_t *task_data, const void *codeptr)
{
    (void)parallel_data, (void)task_data;
    if ((int)kind != 6) return;
    xt_thread *t = active_thread();
    if (!t) return;
    if (endpoint == ompt_scope_begin)
        xt_enter(t, xt_now(), omp_region(codeptr, 19, "!$omp taskgroup wait", ELG_ROLE_OMP_TASKWAIT), ELG_NO_ID,
                 ELG_NO_ID);
    else
        close_innermost(t, xt_now());
}

static int is_barrier(int kind)
{
    switch (kind) {
    case 1: case 2: case 3: case 4: case 8: case 9: case 10:
        return 1;
    default:
        return 0;
    }
}

/* open constructs of the innermost team, on top of the work stack (only GCC's single on libomp stays
 * open until its barrier; an outer team's construct around a nested parallel region is not counted) */
static int open_here(const omp_thread *o)
{
    if (o->nwork > MSTACK) return 0;
    int n = 0;
    for (int i = o->nwork - 1; i >= 0 && o->work[i].team == o->team_id; i--) n++;
    return n;
}

static void on_sync_region(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel_data,
                           ompt_data_t *task_data, const void *codeptr)
{
    (void)parallel_data, (void)task_data;
    xt_thread *t = active_thread();
    if (!t) return;
    omp_thread *o = omp_state(t);
    if ((int)kind == 5) { /* taskwait */
        uint32_t region = omp_region(codeptr, 8, "!$omp taskwait", ELG_ROLE_OMP_TASKWAIT);
        if (endpoint == ompt_scope_begin) xt_enter(t, xt_now(), region, ELG_NO_ID, ELG_NO_ID);
        else xt_exit(t, xt_now(), region);
        return;
    }
    if ((int)kind == 6) { /* taskgroup: the construct (its end has the code address of the construct's end) */
        if (endpoint == ompt_scope_begin)
            xt_enter(t, xt_now(), omp_region(codeptr, 18, "!$omp taskgroup", ELG_ROLE_OMP_TASKGROUP), ELG_NO_ID,
                     ELG_NO_ID);
        else
            close_innermost(t, xt_now());
        return;
    }
    if (!is_barrier((int)kind)) return;
    team_t *tm = o->team;
    if (endpoint == ompt_scope_begin) {
        int k = (int)kind;
        /* GCC code on libomp: a GOMP_barrier call site known to expert-run says explicit ('e') or the
         * implicit barrier of a construct ('i'); libomp reports both as kind 4 (gomp.c) */
        int gomp = xt_gomp_barrier_kind(codeptr);
        int open = open_here(o);
        /* Is this the parallel region's closing barrier?  OpenMP 5.1 runtimes say so (kind 9).  libomp 14
         * reports every implicit barrier as kind 2; there the closing one has the parallel construct's
         * codeptr (master) or none (workers), while a worksharing construct's own barrier has the
         * codeptr of the construct's end.  GCC code on libomp gives a loop's barrier kind 4 and no
         * codeptr: that one counts only when no construct is waiting for its barrier (as before). */
        int pending = t->held_exit_region != ELG_NO_ID || open > 0;
        int at_parallel = tm && (codeptr == NULL || codeptr == tm->codeptr);
        int parallel_end = !gomp && tm && (k == 9 || (k != 3 && k != 8 && at_parallel && (k == 1 || k == 2 || !pending)));
        int explicit_barrier = k == 3 || gomp == 'e';
        /* GCC's implicit barrier after a single is a GOMP_barrier call too.  Any other construct ends in
         * its own entry point (GOMP_loop_end, GOMP_sections_end), so a held loop or sections had no
         * barrier (nowait), and this one ends a static loop, which GCC inlines without any event */
        int static_loop = gomp == 'i' && open == 0 && !(t->held_exit_region != ELG_NO_ID && o->held_single);
        /* A held construct end followed by an explicit barrier, by the end of the parallel region or by
         * another construct's barrier had no barrier of its own (nowait): it ends at its own time. */
        if ((explicit_barrier || parallel_end || static_loop) && t->held_exit_region != ELG_NO_ID)
            xt_flush_held_exit_counted(t);
        if (explicit_barrier || parallel_end) {
            /* constructs whose end the runtime does not report (GCC's single) end here, before it */
            uint64_t now = xt_now();
            for (; open > 0; open--) {
                o->nwork--;
                if (o->work[o->nwork].body != ELG_NO_ID) xt_exit(t, now, o->work[o->nwork].body);
                xt_exit(t, now, o->work[o->nwork].region);
            }
        }
        if (t->held_exit_region == ELG_NO_ID && open > 0) {
            /* a construct whose end the runtime does not report (GCC's single on libomp): it ends here */
            o->nwork--;
            uint64_t now = xt_now();
            if (o->work[o->nwork].body != ELG_NO_ID) xt_exit(t, now, o->work[o->nwork].body);
            t->held_exit_region = o->work[o->nwork].region;
            t->held_exit_time = now;
            o->held_single = o->work[o->nwork].single;
            o->held_codeptr = o->work[o->nwork].codeptr;
        }
        if (static_loop) {
            /* GCC's static loop: nothing marks its start, so it opens at the thread's last event (the end
             * of the previous construct or barrier, or the start of the implicit task, in a program
             * without other events) and holds its barrier, as a loop of clang's does */
            uint64_t begin = xt_last_time(t);
            uint32_t loop = omp_region(codeptr, 2, "!$omp for", ELG_ROLE_OMP_LOOP);
            xt_enter(t, begin, loop, ELG_NO_ID, ELG_NO_ID);
            t->held_exit_region = loop; /* its end comes with the barrier's, like a held construct end */
            t->held_exit_time = begin;
            o->held_codeptr = codeptr;
        }
        uint64_t now = xt_now();
        uint32_t held = t->held_exit_region;
        t->held_exit_region = ELG_NO_ID; /* the held construct stays open around its barrier */
        uint32_t region;
        if (parallel_end && tm) region = omp_region(tm->codeptr, 9, "!$omp ibarrier", ELG_ROLE_OMP_IMPLICIT_BARRIER);
        else if (explicit_barrier || (k == 4 && held == ELG_NO_ID && !gomp))
            region = omp_region(codeptr, 10, "!$omp barrier", ELG_ROLE_OMP_BARRIER);
        else /* GCC's GOMP_loop_end reports its barrier without a code address: named after its construct */
            region = omp_region(codeptr || held == ELG_NO_ID ? codeptr : o->held_codeptr, 9, "!$omp ibarrier",
                                ELG_ROLE_OMP_IMPLICIT_BARRIER);
        if (held != ELG_NO_ID && t->held_exit_time > now) now = t->held_exit_time;
        xt_enter(t, now, region, ELG_NO_ID, ELG_NO_ID);
        if (t->depth - 1 < XT_STACK_MAX) t->stack[t->depth - 1].team = o->team_id;
        o->bar_region = region;
        o->bar_team = o->team_id;
        o->bar_work = held;
        o->bar_parallel_end = parallel_end;
    } else {
        if (o->bar_region == ELG_NO_ID) return; /* began before recording started */
        uint64_t now = xt_now();
        if (o->bar_parallel_end && tm) {
            if (o->index == 0) atomic_store(&tm->barrier_end, now);
            else now = clamp_to(t, now, atomic_load(&tm->barrier_end));
        }
        xt_leave(t, now, ELG_OMP_COLLEXIT, o->bar_region, o->bar_team, 0, 0, 0);
        if (o->bar_work != ELG_NO_ID) xt_exit(t, now, o->bar_work);
        o->bar_region = ELG_NO_ID;
        o->bar_work = ELG_NO_ID;
        o->bar_parallel_end = 0;
    }
}

/* ---------------------------------------------------------------- mutual exclusion */
static uint8_t lock_kind(int kind)
{
    switch (kind) {
    case ompt_mutex_nest_lock:
    case ompt_mutex_test_nest_lock:
        return ELG_LOCK_OMP_NEST_LOCK;
    case ompt_mutex_critical:
        return ELG_LOCK_OMP_CRITICAL;
    case ompt_mutex_atomic:
        return ELG_LOCK_OMP_ATOMIC;
    case ompt_mutex_ordered:
        return ELG_LOCK_OMP_ORDERED;
    default:
        return ELG_LOCK_OMP_LOCK;
    }
}

static uint32_t lock_of(ompt_mutex_t kind, ompt_wait_id_t wait_id)
{
    static const char *names[] = {"", "omp_lock", "omp_lock", "omp_nest_lock", "omp_nest_lock", "critical",
                                  "atomic", "ordered"};
    uint8_t lk = lock_kind((int)kind);
    uint32_t id = xt_lock_find((uintptr_t)wait_id, lk); /* the name is formatted only on first sight */
    if (XT_LIKELY(id != ELG_NO_ID)) return id;
    char name[64];
    snprintf(name, sizeof name, "%s %#llx", names[(int)kind <= 7 ? (int)kind : 0], (unsigned long long)wait_id);
    return xt_lock_id((uintptr_t)wait_id, lk, name);
}

static void on_mutex_acquire(ompt_mutex_t kind, unsigned int hint, unsigned int impl, ompt_wait_id_t wait_id,
                             const void *codeptr)
{
    (void)hint, (void)impl;
    xt_thread *t = active_thread();
    if (!t) return;
    omp_thread *o = omp_state(t);
    if (o->testing) return; /* omp_test_lock (wrapper below): a failed test must leave nothing open */
    uint32_t outer = ELG_NO_ID, body = ELG_NO_ID;
    switch ((int)kind) {
    case ompt_mutex_critical:
        outer = omp_region(codeptr, 11, "!$omp critical", ELG_ROLE_OMP_CRITICAL);
        body = omp_region(codeptr, 12, "!$omp critical sblock", ELG_ROLE_OMP_CRITICAL_BODY);
        break;
    case ompt_mutex_ordered:
        outer = omp_region(codeptr, 13, "!$omp ordered", ELG_ROLE_OMP_ORDERED);
        body = omp_region(codeptr, 14, "!$omp ordered sblock", ELG_ROLE_OMP_ORDERED_BODY);
        break;
    case ompt_mutex_atomic:
        outer = omp_region(codeptr, 15, "!$omp atomic", ELG_ROLE_OMP_ATOMIC);
        break;
    case ompt_mutex_lock:
        outer = api_region(API_SET);
        break;
    case ompt_mutex_nest_lock:
        outer = api_region(API_SET_NEST);
        break;
    default: /* test kinds outside our wrapper (a runtime that reports them): only the acquisition */
        break;
    }
    if (outer != ELG_NO_ID) xt_enter(t, xt_now(), outer, ELG_NO_ID, ELG_NO_ID);
    if (o->nmutex < MSTACK) {
        o->mutex[o->nmutex].wait_id = wait_id;
        o->mutex[o->nmutex].outer = outer;
        o->mutex[o->nmutex].body = body;
        o->mutex[o->nmutex].kind = (int)kind;
    }
    o->nmutex++;
}

static int find_mutex(omp_thread *o, ompt_wait_id_t wait_id)
{
    int top = o->nmutex < MSTACK ? o->nmutex : MSTACK;
    for (int i = top - 1; i >= 0; i--)
        if (o->mutex[i].wait_id == wait_id) return i;
    return -1;
}

static void pop_mutex(omp_thread *o, int i)
{
    int top = o->nmutex < MSTACK ? o->nmutex : MSTACK;
    memmove(&o->mutex[i], &o->mutex[i + 1], (size_t)(top - i - 1) * sizeof o->mutex[0]);
    o->nmutex--;
}

static void on_mutex_acquired(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)codeptr;
    xt_thread *t = active_thread();
    if (!t) return;
    omp_thread *o = omp_state(t);
    uint64_t now = xt_now();
    uint32_t lock = lock_of(kind, wait_id);
    uint64_t order = xt_lock_acquire(t, lock, &now); /* may move now behind the previous release */
    xt_record(t, now, ELG_OMP_ACQUIRE_LOCK, 0, lock, 0, 0, order, 0);
    if (o->testing) return; /* omp_test_lock: the wrapper below records the region */
    int i = find_mutex(o, wait_id);
    if (i < 0) return;
    switch ((int)kind) {
    case ompt_mutex_critical:
    case ompt_mutex_ordered:
        xt_enter(t, now, o->mutex[i].body, ELG_NO_ID, ELG_NO_ID);
        break;
    case ompt_mutex_atomic:
        break;
    default: /* lock API: the set call ends with the acquisition */
        if (o->mutex[i].outer != ELG_NO_ID) xt_exit(t, now, o->mutex[i].outer);
        pop_mutex(o, i);
    }
}

/* OMPT calls this after the lock is free, so another thread may already have acquired it:
 * xt_lock_release gives this holder's order and a time no later than that acquisition. */
static void on_mutex_released(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)codeptr;
    xt_thread *t = active_thread();
    if (!t) return;
    omp_thread *o = omp_state(t);
    uint64_t now = xt_now();
    uint32_t lock = lock_of(kind, wait_id);
    uint64_t order = xt_lock_release(t, lock, &now);
    int i;
    switch ((int)kind) {
    case ompt_mutex_critical:
    case ompt_mutex_ordered:
    case ompt_mutex_atomic:
        i = find_mutex(o, wait_id);
        if (i >= 0 && o->mutex[i].body != ELG_NO_ID) xt_exit(t, now, o->mutex[i].body);
        xt_record(t, now, ELG_OMP_RELEASE_LOCK, 0, lock, 0, 0, order, 0);
        if (i >= 0) {
            xt_exit(t, now, o->mutex[i].outer);
            pop_mutex(o, i);
        }
        break;
    default: {
        uint32_t r = api_region(kind == ompt_mutex_nest_lock || kind == ompt_mutex_test_nest_lock ? API_UNSET_NEST
                                                                                                 : API_UNSET);
        xt_enter(t, now, r, ELG_NO_ID, ELG_NO_ID);
        xt_record(t, now, ELG_OMP_RELEASE_LOCK, 0, lock, 0, 0, order, 0);
        xt_exit(t, now, r);
    }
    }
}

/* A nest lock set or unset again by its owner: libomp reports the set as mutex_acquire followed by
 * nest_lock(begin) instead of mutex_acquired, and the inner unset as nest_lock(end) alone.  Neither
 * is an acquisition or release; only the API region is recorded. */
static void on_nest_lock(ompt_scope_endpoint_t endpoint, ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)codeptr;
    xt_thread *t = active_thread();
    if (!t) return;
    omp_thread *o = omp_state(t);
    uint64_t now = xt_now();
    if (endpoint == ompt_scope_begin) {
        if (o->testing) return; /* omp_test_nest_lock: the wrapper closes its region */
        int i = find_mutex(o, wait_id);
        if (i < 0) return;
        if (o->mutex[i].outer != ELG_NO_ID) xt_exit(t, now, o->mutex[i].outer);
        pop_mutex(o, i);
    } else {
        uint32_t r = api_region(API_UNSET_NEST);
        xt_enter(t, now, r, ELG_NO_ID, ELG_NO_ID);
        xt_exit(t, now, r);
    }
}

/* ---------------------------------------------------------------- omp_test_lock
 * libomp reports a test as an ordinary set (mutex kind "lock" / "nest lock"), and a failed test as
 * an acquire without an acquired, so the OMPT callbacks alone cannot tell omp_test_lock from
 * omp_set_lock.  The runtime therefore wraps the test routines (the preloaded library comes before
 * the OpenMP runtime in the symbol search order): the wrapper records the region, and the OMPT
 * callbacks inside it record only a successful test's acquisition. */
static atomic_int ompt_active; /* our tool was registered with the OpenMP runtime */

typedef int (*test_lock_fn)(void *);
static int traced_test(const char *symbol, _Atomic(test_lock_fn) *real, int region, void *lock)
{
    test_lock_fn fn = atomic_load_explicit(real, memory_order_acquire);
    if (XT_UNLIKELY(!fn)) {
        fn = (test_lock_fn)dlsym(RTLD_NEXT, symbol);
        if (!fn) {
            xt_warn("%s called, but no OpenMP runtime after the tracing library defines it", symbol);
            abort();
        }
        atomic_store_explicit(real, fn, memory_order_release);
    }
    xt_thread *t = atomic_load_explicit(&ompt_active, memory_order_relaxed) ? active_thread() : NULL;
    if (!t) return fn(lock);
    omp_thread *o = omp_state(t);
    uint32_t r = api_region(region);
    xt_enter(t, xt_now(), r, ELG_NO_ID, ELG_NO_ID);
    o->testing++;
    int got = fn(lock);
    o->testing--;
    xt_exit(t, clamp_to(t, xt_now(), 0), r);
    return got;
}

#define TEST_WRAPPER(symbol, region)                                                                                 \
    __attribute__((visibility("default"))) int symbol(void *lock)                                                   \
    {                                                                                                                \
        static _Atomic(test_lock_fn) real;                                                                           \
        return traced_test(#symbol, &real, region, lock);                                                            \
    }
TEST_WRAPPER(omp_test_lock, API_TEST)
TEST_WRAPPER(omp_test_nest_lock, API_TEST_NEST)
TEST_WRAPPER(omp_test_lock_, API_TEST)           /* Fortran */
TEST_WRAPPER(omp_test_nest_lock_, API_TEST_NEST) /* Fortran */
#undef TEST_WRAPPER

static void on_flush(ompt_data_t *thread_data, const void *codeptr)
{
    (void)thread_data;
    xt_thread *t = active_thread();
    if (!t) return;
    uint32_t region = omp_region(codeptr, 16, "!$omp flush", ELG_ROLE_OMP_FLUSH);
    uint64_t now = xt_now();
    xt_enter(t, now, region, ELG_NO_ID, ELG_NO_ID);
    xt_exit(t, now, region);
}

static void on_thread_begin(ompt_thread_t type, ompt_data_t *thread_data)
{
    (void)thread_data;
    if (type == ompt_thread_initial) return;
    if (atomic_load(&xt_recording)) (void)xt_self(); /* number the thread in start order */
}

/* ---------------------------------------------------------------- shutdown: workers parked in the final barrier */
static void omp_stop(void)
{
    int nt = xt_thread_count();
    for (int i = 0; i < nt; i++) {
        xt_thread *t = xt_thread_get(i);
        omp_thread *o = t ? t->omp : NULL;
        if (!o || !o->bar_parallel_end || o->bar_region == ELG_NO_ID || !o->team) continue;
        team_t *tm = o->team;
        if (tm->id != o->bar_team) continue;
        uint64_t end = atomic_load(&tm->barrier_end);
        if (!end) continue;
        end = clamp_to(t, end, 0);
        xt_leave(t, end, ELG_OMP_COLLEXIT, o->bar_region, o->bar_team, 0, 0, 0);
        o->bar_region = ELG_NO_ID;
        o->bar_parallel_end = 0;
        /* the implicit task ends with the barrier */
        if (t->depth > 0 && t->depth <= XT_STACK_MAX && t->stack[t->depth - 1].region == tm->par_region)
            xt_exit(t, end, tm->par_region);
    }
}

/* ---------------------------------------------------------------- registration */
static int tool_initialize(ompt_function_lookup_t lookup, int initial_device_num, ompt_data_t *tool_data)
{
    (void)initial_device_num, (void)tool_data;
    xt_init();
    if (xt_proc.untraced || !xt_cfg.record_omp || atomic_load(&xt_pomp_active)) return 0;
    ompt_set_callback_t set_callback = (ompt_set_callback_t)lookup("ompt_set_callback");
    if (!set_callback) return 0;
    xt_gomp_init(); /* GCC code on libomp: its GOMP_barrier call sites (gomp.c) */
#define REG(event, fn) set_callback(event, (ompt_callback_t)(fn))
    REG(ompt_callback_thread_begin, on_thread_begin);
    REG(ompt_callback_parallel_begin, on_parallel_begin);
    REG(ompt_callback_parallel_end, on_parallel_end);
    REG(ompt_callback_implicit_task, on_implicit_task);
    REG(ompt_callback_work, on_work);
    REG(ompt_callback_masked, on_masked);
    REG(ompt_callback_sync_region, on_sync_region);
    REG(ompt_callback_sync_region_wait, on_sync_region_wait);
    REG(ompt_callback_mutex_acquire, on_mutex_acquire);
    REG(ompt_callback_mutex_acquired, on_mutex_acquired);
    REG(ompt_callback_mutex_released, on_mutex_released);
    REG(ompt_callback_nest_lock, on_nest_lock);
    REG(ompt_callback_flush, on_flush);
#undef REG
    xt_ompt_tasks_register((void *)set_callback); /* explicit tasks (tasks.c) */
    xt_omp_stop_hook = omp_stop;
    atomic_store(&ompt_active, 1);
    return 1;
}

static void tool_finalize(ompt_data_t *tool_data) { (void)tool_data; }

/* ---------------------------------------------------------------- which OpenMP runtime ran (trace attribute) */
/* Found when the library is loaded and again when an OMPT runtime looks for a tool; the writer only
 * formats it (it may run in a crash handler, where the dynamic loader must not be entered). */
static struct {
    char name[32], path[256];
    int in_place;      /* the program's own GCC libgomp is loaded but the API is another runtime's */
    char version[96];  /* what the runtime said of itself to ompt_start_tool ("" without OMPT) */
    unsigned api;      /* the OpenMP API version it passed there */
} omp_rt;

static void find_openmp_runtime(void)
{
    /* the library whose OpenMP API the program calls: with expert-run's preload, LLVM libomp even in
     * a GCC program, whose own libgomp is then loaded but unused */
    void *api = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    Dl_info info;
    if (!api || !dladdr(api, &info) || !info.dli_fname) return; /* no OpenMP in this process (yet) */
    const char *base = strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1 : info.dli_fname;
    const char *name = strstr(base, "libgomp")   ? "GCC libgomp"
                       : strstr(base, "libiomp") ? "Intel libiomp5"
                       : strstr(base, "libomp")  ? "LLVM libomp"
                                                 : base;
    snprintf(omp_rt.name, sizeof omp_rt.name, "%s", name);
    snprintf(omp_rt.path, sizeof omp_rt.path, "%s", info.dli_fname);
    void *gomp = strcmp(name, "GCC libgomp") ? dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD) : NULL;
    omp_rt.in_place = gomp != NULL;
    if (gomp) dlclose(gomp);
}

__attribute__((constructor)) static void openmp_runtime_at_load(void) { find_openmp_runtime(); }

__attribute__((visibility("default"))) ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                                                                  const char *runtime_version)
{
    snprintf(omp_rt.version, sizeof omp_rt.version, "%s", runtime_version ? runtime_version : "");
    omp_rt.api = omp_version;
    find_openmp_runtime();
    static ompt_start_tool_result_t result = {tool_initialize, tool_finalize, {0}};
    return &result;
}

int xt_openmp_runtime(char *out, size_t n)
{
    if (!omp_rt.name[0]) return 0;
    char version[160] = "";
    if (omp_rt.version[0]) snprintf(version, sizeof version, ", %s, OpenMP API %u", omp_rt.version, omp_rt.api);
    const char *how = atomic_load(&xt_pomp_active) ? "constructs recorded by POMP instrumentation (expert-cc)"
                      : atomic_load(&ompt_active)  ? "constructs recorded through OMPT"
                                                   : "constructs not recorded (no OMPT, no POMP instrumentation)";
    snprintf(out, n, "%s (%s%s)%s; %s", omp_rt.name, omp_rt.path, version,
             omp_rt.in_place ? ", in place of the program's GCC libgomp" : "", how);
    return 1;
}
