/* flush_stress.c - many small events on every thread, so that a small EXPERT_BUFFER_SIZE fills
 * (and flushes) each thread's buffer many times, at every kind of record.
 * Per iteration and thread: one parallel region (3 threads) with a loop, a nowait loop, an explicit
 * barrier, a critical, an omp_lock set/unset, a single and a sections construct; with -DWITH_MPI
 * also, per rank, a ring Isend/Recv/Wait, an Allreduce and a Bcast.  ITER is the first argument. */
#ifdef WITH_MPI
#include <mpi.h>
#endif
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static omp_lock_t lock;

__attribute__((noinline)) static void step(double *s)
{
#pragma omp parallel num_threads(3)
    {
#pragma omp for
        for (int i = 0; i < 30; i++) *s += 0;
#pragma omp for nowait
        for (int i = 0; i < 30; i++) *s += 0;
#pragma omp barrier
#pragma omp critical
        *s += 1;
        omp_set_lock(&lock);
        *s += 1;
        omp_unset_lock(&lock);
#pragma omp single
        *s += 1;
#pragma omp sections
        {
#pragma omp section
            *s += 1;
#pragma omp section
            *s += 1;
        }
    }
}

#ifdef WITH_MPI
__attribute__((noinline)) static void exchange(double *s, int it)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double out[8] = {0}, in[8];
    MPI_Request req;
    MPI_Isend(out, 8, MPI_DOUBLE, (rank + 1) % size, it, MPI_COMM_WORLD, &req);
    MPI_Recv(in, 8, MPI_DOUBLE, (rank + size - 1) % size, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Allreduce(MPI_IN_PLACE, s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(out, 8, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}
#endif

int main(int argc, char **argv)
{
    int iter = argc > 1 ? atoi(argv[1]) : 200;
#ifdef WITH_MPI
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
#endif
    omp_init_lock(&lock);
    double s = 0;
    for (int it = 0; it < iter; it++) {
        step(&s);
#ifdef WITH_MPI
        exchange(&s, it);
#endif
    }
    omp_destroy_lock(&lock);
#ifdef WITH_MPI
    MPI_Finalize();
#endif
    printf("%g\n", s);
    return 0;
}
