/* tasks.c - OpenMP explicit tasks through OMPT: creation, execution fragments, dependences.
 *
 * Each explicit task gets an id (per process, from 1) and the region of its `!$omp task` construct,
 * both packed into the task's ompt_data_t (bit 63 marks a task we know, bit 62 that it has started).
 * A thread runs tasks on its own stack, nested inside whatever it was doing (a barrier, a taskwait,
 * another task), so the task_schedule callbacks of one thread form a nest: a switch to a task that
 * is not the one below the innermost open fragment begins a fragment (ENTER(task region),
 * OMP_TASK_BEGIN); the end of the innermost one (complete, or a switch back to the task below it:
 * an untied task's part, a yield) ends it (OMP_TASK_END, EXIT).  See docs/format.md §6.1. */
#define _GNU_SOURCE
#include <omp-tools.h>
#include <stdlib.h>

#include "xt.h"

#define TASK_KNOWN (1ull << 63)
#define TASK_STARTED (1ull << 62)
#define REGION_SHIFT 40
#define REGION_MASK ((1ull << 22) - 1) /* region id + 1; 0: the generic task region */
#define ID_MASK ((1ull << REGION_SHIFT) - 1)

static _Atomic uint64_t next_task = 1;
static _Atomic uint32_t generic_region; /* id + 1 of "!$omp task" for regions beyond REGION_MASK */

#define TSTACK 128
typedef struct task_thread {
    struct {
        ompt_data_t *data;
        uint32_t region;
        uint64_t id;
    } open[TSTACK]; /* open fragments, innermost last */
    int n;          /* may exceed TSTACK; the fragments beyond it are not recorded */
    /* the last OMP_TASK_CREATE this thread wrote: where, to patch in the number of dependences */
    uint64_t create_id, create_spooled;
    uint32_t create_index;
} task_thread;

static inline xt_thread *active_thread(void)
{
    if (XT_UNLIKELY(!atomic_load_explicit(&xt_recording, memory_order_relaxed))) return NULL;
    if (XT_UNLIKELY(atomic_load_explicit(&xt_pomp_active, memory_order_relaxed))) return NULL;
    return xt_self();
}

static inline task_thread *task_state(xt_thread *t)
{
    if (XT_UNLIKELY(!t->tasks)) t->tasks = calloc(1, sizeof(task_thread));
    return t->tasks;
}

static uint32_t region_of(uint64_t v)
{
    uint32_t r = (uint32_t)((v >> REGION_SHIFT) & REGION_MASK);
    if (XT_LIKELY(r)) return r - 1;
    uint32_t g = atomic_load(&generic_region);
    if (!g) {
        g = xt_region_define("!$omp task", "OMP", ELG_NO_ID, ELG_PARADIGM_OPENMP, ELG_ROLE_OMP_TASK) + 1;
        atomic_store(&generic_region, g);
    }
    return g - 1;
}

static uint8_t task_flags(int flags)
{
    uint8_t f = 0;
    if (flags & ompt_task_undeferred) f |= ELG_TASK_UNDEFERRED;
    if (flags & ompt_task_untied) f |= ELG_TASK_UNTIED;
    if (flags & ompt_task_final) f |= ELG_TASK_FINAL;
    if (flags & ompt_task_mergeable) f |= ELG_TASK_MERGEABLE;
    if (flags & ompt_task_merged) f |= ELG_TASK_MERGED;
    return f;
}

static inline uint64_t current_task(const task_thread *s)
{
    return s->n > 0 && s->n <= TSTACK ? s->open[s->n - 1].id : 0;
}

static void on_task_create(ompt_data_t *encountering, const ompt_frame_t *frame, ompt_data_t *new_task, int flags,
                           int has_dependences, const void *codeptr)
{
    (void)encountering, (void)frame, (void)has_dependences;
    new_task->value = 0;
    if (!(flags & ompt_task_explicit)) return;
    xt_thread *t = active_thread();
    if (!t) return;
    task_thread *s = task_state(t);
    uint32_t region = xt_region_by_addr((uintptr_t)codeptr, 17, XT_ADDR_OMP, "!$omp task", ELG_PARADIGM_OPENMP,
                                        ELG_ROLE_OMP_TASK);
    uint64_t id = atomic_fetch_add(&next_task, 1) & ID_MASK;
    uint64_t packed = region + 1 <= REGION_MASK ? (uint64_t)(region + 1) << REGION_SHIFT : 0;
    new_task->value = TASK_KNOWN | packed | id;
    /* a construct end held back for its barrier: none follows when a task is created (nowait) */
    if (t->held_exit_region != ELG_NO_ID) xt_flush_held_exit_counted(t);
    uint64_t now = xt_now();
    if (now < xt_last_time(t)) now = xt_last_time(t);
    xt_record(t, now, ELG_OMP_TASK_CREATE, task_flags(flags), region, 0, 0, id, current_task(s));
    s->create_id = id;
    s->create_spooled = t->spooled;
    s->create_index = t->n - 1;
}

static void on_dependences(ompt_data_t *task, const ompt_dependence_t *deps, int ndeps)
{
    (void)deps;
    xt_thread *t = active_thread();
    if (!t || !t->tasks || !(task->value & TASK_KNOWN)) return;
    task_thread *s = t->tasks;
    uint64_t id = task->value & ID_MASK;
    /* patch the count into the creation record while it is still in the buffer */
    if (s->create_id == id && t->spooled == s->create_spooled && s->create_index < t->n &&
        t->buf[s->create_index].type == ELG_OMP_TASK_CREATE && t->buf[s->create_index].d == id)
        t->buf[s->create_index].c = (uint32_t)ndeps;
}

static void on_task_dependence(ompt_data_t *src, ompt_data_t *sink)
{
    xt_thread *t = active_thread();
    if (!t || !(src->value & TASK_KNOWN) || !(sink->value & TASK_KNOWN)) return;
    uint64_t now = xt_now();
    if (now < xt_last_time(t)) now = xt_last_time(t);
    xt_record(t, now, ELG_OMP_TASK_DEPENDENCE, 0, 0, 0, 0, src->value & ID_MASK, sink->value & ID_MASK);
}

static void begin_fragment(xt_thread *t, task_thread *s, ompt_data_t *next, uint64_t now)
{
    if (s->n >= TSTACK) { /* too deep to follow: counted, not recorded */
        s->n++;
        return;
    }
    uint64_t v = next->value;
    uint32_t region = region_of(v);
    uint64_t id = v & ID_MASK;
    xt_enter(t, now, region, ELG_NO_ID, ELG_NO_ID);
    xt_record(t, now, ELG_OMP_TASK_BEGIN, 0, region, 0,
              (v & TASK_STARTED) ? ELG_TASK_SWITCH_RESUME : ELG_TASK_SWITCH_START, id, 0);
    next->value = v | TASK_STARTED;
    s->open[s->n].data = next;
    s->open[s->n].region = region;
    s->open[s->n].id = id;
    s->n++;
}

static void end_fragment(xt_thread *t, task_thread *s, uint32_t how, uint64_t now)
{
    s->n--;
    uint32_t region = s->open[s->n].region;
    xt_record(t, now, ELG_OMP_TASK_END, 0, region, 0, how, s->open[s->n].id, 0);
    /* the task's frames (EXPERT_UNWIND) and a held construct end inside it close first (xt_leave) */
    xt_exit(t, now, region);
}

static void on_task_schedule(ompt_data_t *prior, ompt_task_status_t status, ompt_data_t *next)
{
    xt_thread *t = active_thread();
    if (!t) return;
    task_thread *s = task_state(t);
    if (s->n > TSTACK) { /* too deep to follow: count only */
        if (prior && (prior->value & TASK_KNOWN) && (int)status != ompt_task_switch && (int)status != ompt_task_yield)
            s->n--;
        else if (next && (next->value & TASK_KNOWN))
            s->n++;
        return;
    }
    uint64_t now = xt_now();
    if (now < xt_last_time(t)) now = xt_last_time(t);
    int top = s->n - 1;
    if (top >= 0 && s->open[top].data == prior) {
        uint32_t how = 0;
        switch ((int)status) {
        case ompt_task_complete: how = ELG_TASK_SWITCH_COMPLETE; break;
        case ompt_task_cancel: how = ELG_TASK_SWITCH_CANCEL; break;
        case ompt_task_detach: how = ELG_TASK_SWITCH_DETACH; break;
        case ompt_task_yield:
        case ompt_task_switch: {
            /* back to the task below (an untied task's part ended, a yield): a suspension; a switch to
             * another task from inside the innermost one begins a nested fragment instead */
            ompt_data_t *below = top > 0 ? s->open[top - 1].data : NULL;
            int back = next == below || !next || !(next->value & TASK_KNOWN);
            if (back) how = ELG_TASK_SWITCH_SUSPEND;
            break;
        }
        default: break;
        }
        if (how) {
            end_fragment(t, s, how, now);
            return;
        }
    }
    if (next && (next->value & TASK_KNOWN) && (int)status != ompt_task_late_fulfill &&
        (int)status != ompt_task_early_fulfill)
        begin_fragment(t, s, next, now);
}

/* At the end of the run: fragments still open are closed by xt_stop_recording with the other regions,
 * without an OMP_TASK_END (the validator then reports the task as never completed). */
void xt_ompt_tasks_register(void *set_callback_fn)
{
    ompt_set_callback_t set_callback = (ompt_set_callback_t)set_callback_fn;
    set_callback(ompt_callback_task_create, (ompt_callback_t)on_task_create);
    set_callback(ompt_callback_task_schedule, (ompt_callback_t)on_task_schedule);
    set_callback(ompt_callback_dependences, (ompt_callback_t)on_dependences);
    set_callback(ompt_callback_task_dependence, (ompt_callback_t)on_task_dependence);
}
