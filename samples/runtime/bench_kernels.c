/* bench_kernels.c - micro-benchmarks for benchmarks/runtime_overhead.py.
 *   bench_kernels events N     N user-region enter/exit pairs       -> ns per pair, in the thread's CPU
 *                              time (on a shared machine, wall time also counts other processes' turns)
 *   bench_kernels barrier N    N OpenMP barriers (OMP_NUM_THREADS)  -> ns per barrier
 *   bench_kernels lock N       N omp_set_lock/omp_unset_lock pairs per thread (OMP_NUM_THREADS,
 *                              contended when > 1)                  -> ns per pair
 *   bench_kernels work N       a compute + barrier workload         -> seconds
 * Prints one number.  Runs untraced when the runtime is absent (the API is weak). */
#include <expert.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 3) return 2;
    long n = atol(argv[2]);
    if (strcmp(argv[1], "events") == 0) {
        expert_region_t r = expert_region_define ? expert_region_define("bench", NULL, 0) : 0;
        double t0 = cpu_now();
        for (long i = 0; i < n; i++) {
            if (expert_region_enter) expert_region_enter(r);
            if (expert_region_exit) expert_region_exit(r);
        }
        printf("%.2f\n", (cpu_now() - t0) / n * 1e9);
    } else if (strcmp(argv[1], "barrier") == 0) {
        double t0 = 0, t1 = 0;
#pragma omp parallel
        {
#pragma omp barrier
#pragma omp master
            t0 = now();
            for (long i = 0; i < n; i++) {
#pragma omp barrier
            }
#pragma omp master
            t1 = now();
        }
        printf("%.2f\n", (t1 - t0) / n * 1e9);
    } else if (strcmp(argv[1], "lock") == 0) {
        omp_lock_t lock;
        omp_init_lock(&lock);
        long pairs = 0;
        double t0 = now();
#pragma omp parallel reduction(+ : pairs)
        for (long i = 0; i < n; i++) {
            omp_set_lock(&lock);
            pairs++;
            omp_unset_lock(&lock);
        }
        printf("%.2f\n", (now() - t0) / pairs * 1e9);
        omp_destroy_lock(&lock);
    } else {
        double t0 = now(), s = 0;
        for (long it = 0; it < n; it++) {
#pragma omp parallel for reduction(+ : s)
            for (int i = 0; i < 200000; i++) s += (double)i * 1e-9;
        }
        printf("%.4f\n", now() - t0);
        if (s < 0) puts("");
    }
    return 0;
}
