/* mpi_rma_lock.c - passive target epochs that contend for one exclusive lock (MPI Lock Contention).
 *
 * Every rank but 0 locks rank 0's window exclusively at the same moment (after a barrier), reads its
 * slot (MPI_Get + MPI_Win_flush: the lock is surely held from then on, whatever the MPI library's
 * lock protocol), holds the lock HOLD_MS, adds one with MPI_Accumulate and unlocks.  The locks are
 * granted one after the other, so with n ranks the k-th origin to get the lock waits about
 * (k - 1) * HOLD_MS in MPI_Win_lock, MPI_Get or MPI_Win_flush: (n - 1)(n - 2)/2 * HOLD_MS in all
 * (HOLD_MS on 3 ranks).  Rank 0 waits in MPI_Barrier meanwhile (and so makes progress for the target
 * side).  With the argument "shared" the locks are shared: no contention, the same calls.
 * The "work" sleeps, so the ranks do not compete for the cores of a small machine.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define HOLD_MS 300
#define MAXR 64

static void work_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0) {
    }
}

int main(int argc, char **argv)
{
    int rank, size, slots[MAXR] = {0}, got = -1, one = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int kind = argc > 1 && strcmp(argv[1], "shared") == 0 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE;
    if (size < 2 || size > MAXR) {
        if (rank == 0) fprintf(stderr, "mpi_rma_lock: 2 to %d ranks\n", MAXR);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Win win;
    MPI_Win_create(slots, sizeof slots, sizeof slots[0], MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank > 0) {
        MPI_Win_lock(kind, 0, 0, win);
        MPI_Get(&got, 1, MPI_INT, 0, rank, 1, MPI_INT, win);
        MPI_Win_flush(0, win);
        work_ms(HOLD_MS);
        MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && slots[0] != size - 1) {
        fprintf(stderr, "mpi_rma_lock: rank 0 holds %d, expected %d\n", slots[0], size - 1);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
