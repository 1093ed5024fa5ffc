/* bench_mpi.c - MPI micro-benchmarks for benchmarks/runtime_overhead.py.
 *   bench_mpi calls N     N MPI_Iprobe calls (cheap, local)              -> ns per call
 *   bench_mpi deep N D    the same, made from D nested (noinline) function calls deep: what a stack
 *                         walk (EXPERT_UNWIND) costs depends on the stack's depth.  Measured in the
 *                         thread's CPU time (run it on 1 rank: wall time on a shared machine also
 *                         counts other processes' turns)
 *   bench_mpi hybrid N    N iterations of compute + ring exchange + Allreduce -> seconds (Init..Finalize)
 * Rank 0 prints one number. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* D calls deep, then n Iprobe calls; the result keeps the compiler from turning this into a loop */
__attribute__((noinline)) static long probe_at_depth(int depth, long n)
{
    if (depth > 1) {
        long below = probe_at_depth(depth - 1, n);
        __asm__ __volatile__("" : "+r"(below)); /* keeps GCC from turning the recursion into a loop */
        return below + 1;
    }
    int flag;
    for (long i = 0; i < n; i++) MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = argc > 2 ? atol(argv[2]) : 1000;
    double t0 = MPI_Wtime(), result = 0;
    if (argc > 1 && strcmp(argv[1], "calls") == 0) {
        int flag;
        for (long i = 0; i < n; i++) MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        result = (MPI_Wtime() - t0) / n * 1e9;
    } else if (argc > 1 && strcmp(argv[1], "deep") == 0) {
        int depth = argc > 3 ? atoi(argv[3]) : 10;
        double c0 = cpu_seconds();
        long extra = probe_at_depth(depth, n);
        result = (cpu_seconds() - c0) / n * 1e9 + (double)(extra - (depth - 1)); /* extra == depth - 1 */
    } else {
        double s = 0, buf[256] = {0}, in[256];
        for (long it = 0; it < n; it++) {
#pragma omp parallel for reduction(+ : s)
            for (int i = 0; i < 400000; i++) s += (double)i * 1e-9;
            MPI_Sendrecv(buf, 256, MPI_DOUBLE, (rank + 1) % size, 1, in, 256, MPI_DOUBLE, (rank + size - 1) % size, 1,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        result = MPI_Wtime() - t0;
    }
    if (rank == 0) printf("%.4f\n", result);
    MPI_Finalize();
    return 0;
}
