/* mpi_rma.c - MPI one-sided communication with a late epoch.
 *
 * Every rank exposes MAXR ints in a window (MPI_Win_create).  Fence epoch: rank 0 sleeps LATE_MS before
 * its first MPI_Win_fence, so every other rank waits about that long in its own; then each rank r > 0
 * puts r into slot r of rank 0's window, and a second fence closes the epoch (rank 0 checks the sum).  Passive
 * target: each rank r > 0 reads its slot of rank 0's window with MPI_Win_lock / MPI_Get / MPI_Win_flush /
 * MPI_Win_unlock, and adds one with MPI_Accumulate under an exclusive lock.  Then MPI_Win_free.
 * Then the other one-sided calls, each once per rank r > 0 (all to rank 0) unless said otherwise:
 * a window from MPI_Win_allocate (8 doubles) in one MPI_Win_lock_all epoch with MPI_Rput of 2 doubles and
 * MPI_Rget of 3 doubles (each completed by MPI_Wait), MPI_Get_accumulate of 4 doubles (result 4),
 * MPI_Fetch_and_op of one double, MPI_Compare_and_swap of one int, MPI_Win_flush_local, _flush_local_all,
 * _flush_all, MPI_Win_sync, MPI_Win_unlock_all; an exposure epoch of rank 0 to all others that rank 0
 * ends by polling MPI_Win_test (the others: MPI_Win_start, MPI_Put of one int, MPI_Win_complete); and
 * a window over the communicator of ranks 1.. (MPI_Comm_split), on which the last rank puts one int to
 * window rank 0 (global rank 1) between two fences of that window.
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

    double *base;
    MPI_Win awin;
    MPI_Win_allocate(8 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &awin);
    for (int i = 0; i < 8; i++) base[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank > 0) {
        double v[4] = {1, 2, 3, 4}, res[4], one_d = 1, old;
        int one_i = 1, cmp = -1, old_i;
        MPI_Request req;
        MPI_Win_lock_all(0, awin);
        MPI_Rput(v, 2, MPI_DOUBLE, 0, 0, 2, MPI_DOUBLE, awin, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Rget(res, 3, MPI_DOUBLE, 0, 0, 3, MPI_DOUBLE, awin, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Win_flush_local(0, awin);
        MPI_Get_accumulate(v, 4, MPI_DOUBLE, res, 4, MPI_DOUBLE, 0, 4, 4, MPI_DOUBLE, MPI_SUM, awin);
        MPI_Fetch_and_op(&one_d, &old, MPI_DOUBLE, 0, 7, MPI_SUM, awin);
        MPI_Compare_and_swap(&one_i, &cmp, &old_i, MPI_INT, 0, 6, awin);
        MPI_Win_flush_local_all(awin);
        MPI_Win_flush_all(awin);
        MPI_Win_sync(awin);
        MPI_Win_unlock_all(awin);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Group world, others, zero;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int r0 = 0, flag = 0;
    MPI_Group_excl(world, 1, &r0, &others);
    MPI_Group_incl(world, 1, &r0, &zero);
    if (rank == 0) {
        MPI_Win_post(others, 0, awin);
        while (!flag) MPI_Win_test(awin, &flag);
    } else {
        MPI_Win_start(zero, 0, awin);
        MPI_Put(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, awin);
        MPI_Win_complete(awin);
    }
    MPI_Group_free(&others);
    MPI_Group_free(&zero);
    MPI_Group_free(&world);
    MPI_Win_free(&awin);

    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank > 0, rank, &sub);
    if (rank > 0) {
        int sub_rank, sub_size;
        static int cell; /* (a stack variable as window memory was overwritten under MPICH 4.0) */
        MPI_Comm_rank(sub, &sub_rank);
        MPI_Comm_size(sub, &sub_size);
        MPI_Win swin;
        MPI_Win_create(&cell, sizeof cell, sizeof cell, MPI_INFO_NULL, sub, &swin);
        MPI_Win_fence(0, swin);
        if (sub_rank == sub_size - 1) MPI_Put(&rank, 1, MPI_INT, 0, 0, 1, MPI_INT, swin);
        MPI_Win_fence(0, swin);
        MPI_Win_free(&swin);
    }
    MPI_Comm_free(&sub);
    MPI_Finalize();
    return 0;
}
