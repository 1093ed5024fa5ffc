/* omp_tasks.c - OpenMP task programs with designed behaviour, one per user region (tests/runtime/test_tasks.py
 * knows them).  Each case is a parallel region of 3 threads inside a user region named after the case:
 *   tree           an imbalanced binary task tree: node(d) creates node(d-1) and node(d-2) as tasks, so the
 *                  left subtree is deeper than the right; node(4) has 15 nodes (14 tasks), its 8 leaves work
 *                  1 unit each; no taskwait: the single's barrier waits for all of them
 *   long_child     one thread creates a short (1 unit) and a long (6 units) child and waits in taskwait
 *   fine           one thread creates 3000 tiny tasks (a few hundred ns of work each), then taskwait
 *   producer       a serial producer: one thread creates 12 tasks of 1 unit, 1 unit apart; the others
 *                  starve between them
 *   group          a taskgroup around 3 tasks of 1, 2 and 3 units (the nested one created inside a task)
 *   deps           a chain a -> b -> c through depend(out/in), 1 unit each, and an independent task
 *   untied         an untied task that yields between two units of work, and an if(0) task
 * A unit is UNIT_MS (20) ms of sleep.  Build with -I runtime/include (the user regions are weak, so the
 * program also runs untraced).  Prints the number of task bodies that ran: the tree's 15 nodes + 2 + 3000 + 12
 * + 3 + 4 + 2 = 3038 (3037 tasks created). */
#include <expert.h>
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#define UNIT_MS 20
static int ran;

static void work(int units)
{
    if (units > 0) usleep(units * UNIT_MS * 1000);
#pragma omp atomic
    ran++;
}

/* ---- tree: node at depth d (of max) makes a left subtree of depth max and a right one of depth max - 1 */
static void node(int depth)
{
    if (depth <= 0) {
        work(1);
        return;
    }
#pragma omp atomic
    ran++;
#pragma omp task
    node(depth - 1);
#pragma omp task
    node(depth - 2);
}

static void tree(void)
{
    EXPERT_REGION_ENTER(r, "tree");
#pragma omp parallel num_threads(3)
    {
#pragma omp single
        node(4);
    }
    EXPERT_REGION_EXIT(r);
}

static void long_child(void)
{
    EXPERT_REGION_ENTER(r, "long_child");
#pragma omp parallel num_threads(3)
    {
#pragma omp single
        {
#pragma omp task
            work(1);
#pragma omp task
            work(6);
#pragma omp taskwait
        }
    }
    EXPERT_REGION_EXIT(r);
}

static volatile double sink;
static void tiny(int i)
{
    double x = i;
    for (int k = 0; k < 50; k++) x = x * 1.0000001 + 1.0;
    sink = x;
#pragma omp atomic
    ran++;
}

static void fine(void)
{
    EXPERT_REGION_ENTER(r, "fine");
#pragma omp parallel num_threads(3)
    {
#pragma omp single
        {
            for (int i = 0; i < 3000; i++) {
#pragma omp task firstprivate(i)
                tiny(i);
            }
#pragma omp taskwait
        }
    }
    EXPERT_REGION_EXIT(r);
}

static void producer(void)
{
    EXPERT_REGION_ENTER(r, "producer");
#pragma omp parallel num_threads(3)
    {
#pragma omp single nowait
        for (int i = 0; i < 12; i++) {
            usleep(UNIT_MS * 1000); /* producing the next piece of work takes as long as doing it */
#pragma omp task
            work(1);
        }
    }
    EXPERT_REGION_EXIT(r);
}

static void group(void)
{
    EXPERT_REGION_ENTER(r, "group");
#pragma omp parallel num_threads(3)
    {
#pragma omp single
        {
#pragma omp taskgroup
            {
#pragma omp task
                work(1);
#pragma omp task
                {
#pragma omp task
                    work(3);
                    work(2);
                }
            }
        }
    }
    EXPERT_REGION_EXIT(r);
}

static void deps(void)
{
    EXPERT_REGION_ENTER(r, "deps");
    int a = 0, b = 0;
#pragma omp parallel num_threads(3)
    {
#pragma omp single
        {
#pragma omp task depend(out : a)
            work(1);
#pragma omp task depend(in : a) depend(out : b)
            work(1);
#pragma omp task depend(in : b)
            work(1);
#pragma omp task
            work(1);
        }
    }
    EXPERT_REGION_EXIT(r);
}

static void untied(void)
{
    EXPERT_REGION_ENTER(r, "untied");
#pragma omp parallel num_threads(3)
    {
#pragma omp single
        {
#pragma omp task untied
            {
                usleep(UNIT_MS * 1000);
#pragma omp taskyield
                work(1);
            }
#pragma omp task if (0)
            work(1);
        }
    }
    EXPERT_REGION_EXIT(r);
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    tree();
    long_child();
    fine();
    producer();
    group();
    deps();
    untied();
    printf("%d\n", ran);
    return 0;
}
