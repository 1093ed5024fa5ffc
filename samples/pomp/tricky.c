/* tricky.c - OpenMP written the ways real code is written, for expert-instrument's tests.
 * The program prints the same (deterministic) results with or without instrumentation; the test
 * compares the two outputs and checks the instrumented trace (tests/instrument).
 * Not a directive: "#pragma omp parallel" in a string, and  #pragma omp barrier  in this comment. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#define N 100
#ifndef _POMP
#define POMP_STATE "plain"
#else
#define POMP_STATE "instrumented"
#endif

static const char *fake = "#pragma omp parallel for // not a directive";
static const char multi[] = "line one \
#pragma omp critical -- still inside a string";

static int nested_loops(int *v)
{
    int total = 0;
    /* a parallel region whose body is a single statement: a work-sharing loop */
#pragma omp parallel num_threads(2) \
        reduction(+:total)
#pragma omp for schedule(static)
    for (int i = 0; i < N; i++)
        if (v[i] % 2)
            total += v[i];
        else
            total += 0;
    return total;
}

static int single_statement_bodies(void)
{
    int count = 0, flags = 0;
#pragma omp parallel num_threads(3) shared(count, flags)
    {
        int me = omp_get_thread_num();
#pragma omp critical
        count++;                      // single-statement critical body
#pragma omp atomic
        flags |= 1 << me;
#pragma omp single
        while (0) {}                  /* a while statement as the body */
#pragma omp master
        do { count += 10; } while (0);
#pragma omp barrier
#pragma omp for
        for (int i = 0; i < 3; i++) {
#pragma omp critical(named_one)
            { count += 100; }
        }
    }
    return count * 100 + flags;
}

static double sections_and_locks(void)
{
    double a = 0, b = 0, c = 0;
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel sections num_threads(2) lastprivate(c)
    {
        a = 1.5;                      /* first section without its own directive */
#pragma omp section
        {
            omp_set_lock(&lock);
            b = 2.5;
            omp_unset_lock(&lock);
        }
#pragma omp section
        c = 4.0;
    }
    omp_destroy_lock(&lock);
    return a + b + c;
}

#if 0
static void never(void)
{
#pragma omp parallel
    { never_compiled_at_all(); }
}
#endif

static int conditional_blocks(void)
{
    int x = 0;
#pragma omp parallel num_threads(2) reduction(+:x)
    {
#ifdef _OPENMP
        x += 1;
#else
        x += 1000;
#endif
    }
    return x;
}

static long user_region(void)
{
    long s = 0;
#pragma pomp inst begin(summation)
    for (long i = 1; i <= 1000; i++) s += i;
#pragma pomp inst end(summation)
#pragma pomp noinstrument
#pragma omp parallel for reduction(+:s) num_threads(2)
    for (long i = 0; i < 10; i++) s += 1;
#pragma pomp instrument
    return s;
}

int main(void)
{
#pragma pomp inst init
    int v[N];
    for (int i = 0; i < N; i++) v[i] = i;
    printf("strings: %zu %zu\n", strlen(fake), strlen(multi));
    printf("nested loops: %d\n", nested_loops(v));
    printf("single-statement bodies: %d\n", single_statement_bodies());
    printf("sections and locks: %.1f\n", sections_and_locks());
    printf("conditional blocks: %d\n", conditional_blocks());
    printf("user region: %ld\n", user_region());
    if (strcmp(POMP_STATE, "plain") != 0) fprintf(stderr, "built with POMP\n");
    return 0;
}
