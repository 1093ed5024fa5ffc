/* mpi_rma_fence.c - fence epochs with a late rank (MPI Wait at Fence), or a balanced twin.
 *
 * Every rank exposes one int per rank in a window (MPI_Win_create over MPI_COMM_WORLD).  ITER times:
 * each rank works WORK_MS, rank 0 LATE_MS longer (unless the program is given the argument
 * "balanced"), puts its rank into its slot of every other rank's window and closes the epoch with
 * MPI_Win_fence.  So every rank but 0 enters each closing fence about LATE_MS before rank 0 and waits
 * there: ITER * LATE_MS per rank on the call path main/MPI_Win_fence, rank 0 about nothing.  Bytes: each
 * rank puts ITER * (size - 1) * sizeof(int).  The "work" sleeps, so the ranks do not compete for the
 * cores of a small machine and the waits stay as designed under load.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ITER 3
#define WORK_MS 10
#define LATE_MS 100
#define MAXR 64

static void work_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0) {
    }
}

int main(int argc, char **argv)
{
    int rank, size, slots[MAXR];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int balanced = argc > 1 && strcmp(argv[1], "balanced") == 0;
    if (size > MAXR) {
        if (rank == 0) fprintf(stderr, "mpi_rma_fence: at most %d ranks\n", MAXR);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Win win;
    MPI_Win_create(slots, sizeof slots, sizeof slots[0], MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < ITER; i++) {
        work_ms(WORK_MS + (rank == 0 && !balanced ? LATE_MS : 0));
        for (int r = 0; r < size; r++)
            if (r != rank) MPI_Put(&rank, 1, MPI_INT, r, rank, 1, MPI_INT, win);
        MPI_Win_fence(0, win);
        for (int r = 0; r < size; r++)
            if (r != rank && slots[r] != r) {
                fprintf(stderr, "mpi_rma_fence: rank %d holds %d from rank %d\n", rank, slots[r], r);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
