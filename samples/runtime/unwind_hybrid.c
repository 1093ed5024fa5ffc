/* unwind_hybrid.c - an uninstrumented hybrid program for EXPERT_UNWIND (call paths from stack walks).
 *
 * Built without -finstrument-functions, with -g and every function noinline, so that the stack walk
 * at MPI and OpenMP events is the only source of the call path:
 *   main -> MPI_Init_thread
 *   main -> solver -> 3 x (compute -> parallel region -> team_barrier -> !$omp barrier;
 *                          exchange -> MPI_Irecv, MPI_Isend, MPI_Waitall)
 *        -> solver -> MPI_Allreduce
 *   main -> MPI_Barrier, MPI_Finalize
 * The ring exchange sends one message to the right neighbour and receives one from the left per
 * iteration: per rank 3 Irecv, 3 Isend, 3 Waitall, 1 Allreduce, 1 Barrier.
 */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>

#define N 4096
#define ITERATIONS 3
#define NOINLINE __attribute__((noinline))

static double field[N];

NOINLINE static double kernel(int i) { return 0.5 * (double)(i % 7); }

NOINLINE static void team_barrier(void)
{
#pragma omp barrier
}

NOINLINE static void compute(double *buf, int n)
{
#pragma omp parallel
    {
#pragma omp for
        for (int i = 0; i < n; i++) buf[i] += kernel(i);
        team_barrier();
    }
}

NOINLINE static void exchange(double *buf, int n, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double halo[16];
    MPI_Request req[2];
    MPI_Irecv(halo, 16, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(buf + n - 16, 16, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    buf[0] += halo[0];
}

NOINLINE static double solver(int rank, int size)
{
    for (int it = 0; it < ITERATIONS; it++) {
        compute(field, N);
        exchange(field, N, rank, size);
    }
    double local = field[0], total = 0.0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double total = solver(rank, size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("total %.1f\n", total);
    MPI_Finalize();
    return 0;
}
