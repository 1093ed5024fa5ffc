/*
 * omp_tasks.c - the OpenMP task properties (issue 16): each function is recorded as a user region
 * of its own name; `balanced` selects the twin.  The designed severities are derived in
 * samples/ats/properties.py and docs/ats.md.
 *
 * The programs are built so that who runs which task does not change the designed severity:
 * a thread's own deferred task sits in its own queue and it takes it first at the next barrier,
 * included tasks (if(0)) run at once on their creator, and a long child is created before its
 * parent works, so an idle thread has that time to take it.
 */
#include <omp.h>

#include "ats.h"
#include "expert.h"

#define PROPERTY(name) EXPERT_REGION_ENTER(prop_region, name)
#define END_PROPERTY EXPERT_REGION_EXIT(prop_region)

static volatile double g_sink;

/* A task tree of `work` seconds: a root task whose children are included (if(0)) tasks of
   work / n each, so the whole tree runs on the thread that takes the root. */
static void task_tree(double work, int n)
{
#pragma omp task firstprivate(work, n)
    {
        for (int i = 0; i < n; i++) {
#pragma omp task if (0) firstprivate(work, n)
            do_work(work / n);
        }
    }
}

void imbalanced_task_tree(distr_func_t df, distr_t *dd, int r)
{
    PROPERTY("imbalanced_task_tree");
#pragma omp parallel
    for (int k = 0; k < r; k++) {
        int me = omp_get_thread_num(), sz = omp_get_num_threads();
        task_tree(df(me, sz, 1.0, dd), 2);
#pragma omp barrier
    }
    END_PROPERTY;
}

/* Spin until *counter reaches `gen` or `limit` seconds have passed. */
static void await_generation(volatile int *counter, int gen, double limit)
{
    double end = omp_get_wtime() + limit;
    int seen = 0;
    while (seen < gen && omp_get_wtime() < end) {
#pragma omp atomic read
        seen = *counter;
    }
}

void taskwait_on_long_child(double work, int r, int balanced)
{
    PROPERTY("taskwait_on_long_child");
    /* the creator works a quarter of its child's time, then waits for the child; the twin's creator
       works as long as the child and leaves the waiting to the barrier, where the child's thread is
       busy anyway (no taskwait).
       Who runs the child is fixed by design, not by timing:
       - the other threads enter the barrier only once the child exists: libomp wakes a thread that
         sleeps in a barrier (OMP_WAIT_POLICY=passive) for the first task of a barrier phase only,
         so a thread asleep before the child was created never took it from the second repetition
         on, and the creator ran the child itself (no taskwait, or the twin waiting in the barrier);
       - the creator starts working once another thread has started the child (bounded by a
         second, so a team of one still ends). */
    volatile int created = 0, started = 0;
#pragma omp parallel shared(created, started)
    for (int k = 0; k < r; k++) {
#pragma omp single nowait
        {
#pragma omp task firstprivate(work, k) shared(started)
            {
#pragma omp atomic write
                started = k + 1;
                do_work(work);
            }
#pragma omp atomic write
            created = k + 1;
            await_generation(&started, k + 1, 1.0);
            if (balanced) {
                do_work(work);
            } else {
                do_work(work / 4);
#pragma omp taskwait
            }
        }
        await_generation(&created, k + 1, 1.0);
#pragma omp barrier
    }
    END_PROPERTY;
}

void too_fine_tasks(int n, int balanced)
{
    PROPERTY("too_fine_tasks");
    /* every thread creates its share of n tiny tasks (a few nanoseconds of work each); the twin
       creates a hundredth as many tasks with a hundred times the work each */
    int per = balanced ? 100 : 1;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int i = 0; i < n / per; i++) {
#pragma omp task firstprivate(per)
            {
                double y = 0;
                for (int j = 0; j < 20 * per; j++) y = y * 1.000001 + 0.5;
                g_sink = y;
            }
        }
    }
    END_PROPERTY;
}

void serial_task_producer(double work, int n, int r, int balanced)
{
    PROPERTY("serial_task_producer");
    /* n tasks of work / 4 each, created `work` apart by one thread while the others starve; the
       twin's threads create the same tasks in a worksharing loop, each its share */
#pragma omp parallel
    for (int k = 0; k < r; k++) {
        if (balanced) {
#pragma omp for schedule(static)
            for (int i = 0; i < n; i++) {
                do_work(work);
#pragma omp task firstprivate(work)
                do_work(work / 4);
            }
        } else {
#pragma omp single
            for (int i = 0; i < n; i++) {
                do_work(work);
#pragma omp task firstprivate(work)
                do_work(work / 4);
            }
        }
    }
    END_PROPERTY;
}

void task_dependence_chain(double work, int n, int r, int balanced)
{
    PROPERTY("task_dependence_chain");
    /* a single creates n tasks of `work` each, every one depending on the one before (inout on one
       variable): they are all created at once, but the chain runs one task at a time while the other
       threads, in the single's barrier, have tasks in the team and none they may start.  The twin's tasks
       name n different variables: the same clauses, no dependence between them */
    static char vars[64];
    if (n > (int)sizeof vars) n = (int)sizeof vars;
#pragma omp parallel
    for (int k = 0; k < r; k++) {
#pragma omp single
        for (int i = 0; i < n; i++) {
            char *x = balanced ? &vars[i] : &vars[0];
#pragma omp task firstprivate(work) depend(inout : x[0])
            do_work(work);
        }
    }
    END_PROPERTY;
}
