/* mpi_thread_multiple.c - MPI called from two OpenMP threads per rank (MPI_THREAD_MULTIPLE).
 *
 * Rank 0's thread t sends ITER messages to rank 1 with tag t; rank 1's thread t receives them with tag t.
 * Rank 0's thread 1 works DELAY_MS longer than thread 0 before each send, so rank 1's thread 1 waits
 * about ITER * (5 + DELAY_MS) ms in MPI_Recv (Late Sender) and thread 0 about ITER * 5 ms.  The "work"
 * sleeps, so the four threads do not compete for the cores of a small machine and the waits stay as
 * designed under load.  A second phase does the
 * same with MPI_Irecv + MPI_Wait on rank 1 (the wait then sits in MPI_Wait), so request tracking is
 * exercised from two threads at once.  Needs 2 ranks and OMP_NUM_THREADS=2.
 */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITER 5
#define DELAY_MS 60

static void work_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0) {
    }
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE || size != 2) {
        if (rank == 0)
            fprintf(stderr, "needs MPI_THREAD_MULTIPLE (got %d) and 2 ranks (got %d)\n", provided, size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
#pragma omp parallel num_threads(2)
    {
        int tag = omp_get_thread_num();
        double buf[16] = {0};
        for (int i = 0; i < ITER; i++) {
            if (rank == 0) {
                work_ms(5 + (tag == 1 ? DELAY_MS : 0));
                MPI_Send(buf, 16, MPI_DOUBLE, 1, tag, MPI_COMM_WORLD);
            } else {
                MPI_Recv(buf, 16, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
    }
#pragma omp parallel num_threads(2)
    {
        int tag = 2 + omp_get_thread_num();
        double buf[16] = {0};
        for (int i = 0; i < ITER; i++) {
            if (rank == 0) {
                work_ms(5 + (tag == 3 ? DELAY_MS : 0));
                MPI_Send(buf, 16, MPI_DOUBLE, 1, tag, MPI_COMM_WORLD);
            } else {
                MPI_Request req;
                MPI_Irecv(buf, 16, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
