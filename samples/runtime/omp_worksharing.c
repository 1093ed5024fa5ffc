/* omp_worksharing.c - every worksharing construct with and without nowait, each imbalanced on purpose,
 * so that its waiting shows at the barrier that ends it: the construct's own implicit barrier, or the
 * explicit barrier that follows its nowait form.  Each case is a parallel region (3 threads) inside a
 * user region named after the case (tests/runtime/test_worksharing_barriers.py knows them):
 *   static_for            for (static): thread k works (k+1) units      -> implicit barrier, 3 units
 *   static_for_nowait     the same with nowait, then an explicit barrier  -> explicit barrier, 3 units
 *   dynamic_for           for schedule(dynamic): 3 iterations of 1, 2, 3 units -> implicit, 3 units
 *   dynamic_for_nowait    the same with nowait, then an explicit barrier  -> explicit, 3 units
 *   sections              3 sections of 1, 2, 3 units                    -> implicit, 3 units
 *   sections_nowait       the same with nowait, then an explicit barrier  -> explicit, 3 units
 *   single                the executing thread works 3 units             -> implicit, 6 units
 *   single_nowait         the same with nowait, then an explicit barrier  -> explicit, 6 units
 *   barrier               thread k works (k+1) units, then a barrier     -> explicit, 3 units
 * Every parallel body ends with a call after the construct, so GCC keeps the construct as written.
 * A unit is UNIT_MS (20) ms of sleep.  Build with -I runtime/include (the user regions; they are weak,
 * so the program also runs untraced).  Prints the number of work items done (4 * 3 + 2 * 3 + 2 + 3 = 23). */
#include <expert.h>
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#define UNIT_MS 20
static int done;

static void work(int units)
{
    usleep(units * UNIT_MS * 1000);
#pragma omp atomic
    done++;
}

/* a statement after the construct: without it GCC drops the construct's own barrier at the end of a
 * parallel region (the region's closing barrier does the job) or combines the two constructs */
__attribute__((noinline)) static void after(void) { __asm__ __volatile__(""); }

static void static_for(void)
{
    EXPERT_REGION_ENTER(r, "static_for");
#pragma omp parallel num_threads(3)
    {
#pragma omp for schedule(static)
        for (int i = 0; i < 3; i++) work(i + 1);
        after();
    }
    EXPERT_REGION_EXIT(r);
}

static void static_for_nowait(void)
{
    EXPERT_REGION_ENTER(r, "static_for_nowait");
#pragma omp parallel num_threads(3)
    {
#pragma omp for schedule(static) nowait
        for (int i = 0; i < 3; i++) work(i + 1);
#pragma omp barrier
        after();
    }
    EXPERT_REGION_EXIT(r);
}

static void dynamic_for(void)
{
    EXPERT_REGION_ENTER(r, "dynamic_for");
#pragma omp parallel num_threads(3)
    {
#pragma omp for schedule(dynamic)
        for (int i = 0; i < 3; i++) work(i + 1);
        after();
    }
    EXPERT_REGION_EXIT(r);
}

static void dynamic_for_nowait(void)
{
    EXPERT_REGION_ENTER(r, "dynamic_for_nowait");
#pragma omp parallel num_threads(3)
    {
#pragma omp for schedule(dynamic) nowait
        for (int i = 0; i < 3; i++) work(i + 1);
#pragma omp barrier
        after();
    }
    EXPERT_REGION_EXIT(r);
}

static void sections(void)
{
    EXPERT_REGION_ENTER(r, "sections");
#pragma omp parallel num_threads(3)
    {
#pragma omp sections
        {
#pragma omp section
            work(1);
#pragma omp section
            work(2);
#pragma omp section
            work(3);
        }
        after();
    }
    EXPERT_REGION_EXIT(r);
}

static void sections_nowait(void)
{
    EXPERT_REGION_ENTER(r, "sections_nowait");
#pragma omp parallel num_threads(3)
    {
#pragma omp sections nowait
        {
#pragma omp section
            work(1);
#pragma omp section
            work(2);
#pragma omp section
            work(3);
        }
#pragma omp barrier
        after();
    }
    EXPERT_REGION_EXIT(r);
}

static void single(void)
{
    EXPERT_REGION_ENTER(r, "single");
#pragma omp parallel num_threads(3)
    {
#pragma omp single
        work(3);
        after();
    }
    EXPERT_REGION_EXIT(r);
}

static void single_nowait(void)
{
    EXPERT_REGION_ENTER(r, "single_nowait");
#pragma omp parallel num_threads(3)
    {
#pragma omp single nowait
        work(3);
#pragma omp barrier
        after();
    }
    EXPERT_REGION_EXIT(r);
}

static void barrier(void)
{
    EXPERT_REGION_ENTER(r, "barrier");
#pragma omp parallel num_threads(3)
    {
        work(omp_get_thread_num() + 1);
#pragma omp barrier
        after();
    }
    EXPERT_REGION_EXIT(r);
}

int main(void)
{
    static_for();
    static_for_nowait();
    dynamic_for();
    dynamic_for_nowait();
    sections();
    sections_nowait();
    single();
    single_nowait();
    barrier();
    printf("%d\n", done);
    return 0;
}
