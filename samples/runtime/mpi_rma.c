/* mpi_rma.c - MPI one-sided communication with a late epoch.
 *
 * Every rank exposes MAXR ints in a window (MPI_Win_create).  Fence epoch: rank 0 sleeps LATE_MS before
 * its first MPI_Win_fence, so every other rank waits about that long in its own; then each rank r > 0
 * puts r into slot r of rank 0's window, and a second fence closes the epoch (rank 0 checks the sum).  Passive
 * target: each rank r > 0 reads its slot of rank 0's window with MPI_Win_lock / MPI_Get / MPI_Win_flush /
 * MPI_Win_unlock, and adds one with MPI_Accumulate under an exclusive lock.  Then MPI_Win_free.
 */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

#define LATE_MS 100
#define MAXR 64

int main(int argc, char **argv)
{
    int rank, size, slots[MAXR] = {0}, got = -1, one = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win win;
    if (size > MAXR) {
        if (rank == 0) fprintf(stderr, "mpi_rma: at most %d ranks\n", MAXR);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Win_create(slots, sizeof slots, sizeof slots[0], MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (rank == 0) {
        struct timespec d = {0, LATE_MS * 1000000L};
        nanosleep(&d, NULL);
    }
    MPI_Win_fence(0, win);
    if (rank > 0) MPI_Put(&rank, 1, MPI_INT, 0, rank, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    if (rank == 0) {
        int sum = 0;
        for (int r = 0; r < size; r++) sum += slots[r];
        if (sum != size * (size - 1) / 2) {
            fprintf(stderr, "mpi_rma: rank 0 holds %d, expected %d\n", sum, size * (size - 1) / 2);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank > 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(&got, 1, MPI_INT, 0, rank, 1, MPI_INT, win);
        MPI_Win_flush(0, win);
        MPI_Win_unlock(0, win);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
