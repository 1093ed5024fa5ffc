/* mpi_rma_gats.c - general active target synchronization (post/start/complete/wait) with designed waits.
 *
 * Rank 0 is the target, every other rank an origin; the window is MAXR ints on each rank.
 * Epoch 1, late post: rank 0 works LATE_MS before MPI_Win_post; each origin calls MPI_Win_start at once,
 * puts its rank into slot r of rank 0's window and calls MPI_Win_complete.  An origin cannot finish
 * the epoch before the target posts, so it waits about LATE_MS in MPI_Win_start, MPI_Put or
 * MPI_Win_complete (which one depends on the MPI library): MPI Late Post.
 * Epoch 2, late complete: rank 0 posts at once and calls MPI_Win_wait; each origin starts, puts, then
 * works LATE_MS inside the epoch before MPI_Win_complete, so rank 0 waits about LATE_MS in MPI_Win_wait
 * (MPI Early Wait, all of it Late Complete: the last put is long done).
 * A barrier separates the epochs.  With the argument "balanced" nobody is late.  The "work" sleeps, so
 * the ranks do not compete for the cores of a small machine and the waits stay as designed under load.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define LATE_MS 300
#define MAXR 64

static void work_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0) {
    }
}

int main(int argc, char **argv)
{
    int rank, size, slots[MAXR] = {0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int late = argc > 1 && strcmp(argv[1], "balanced") == 0 ? 0 : LATE_MS;
    if (size < 2 || size > MAXR) {
        if (rank == 0) fprintf(stderr, "mpi_rma_gats: 2 to %d ranks\n", MAXR);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Win win;
    MPI_Win_create(slots, sizeof slots, sizeof slots[0], MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Group world, origins, target;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int zero = 0;
    MPI_Group_excl(world, 1, &zero, &origins);
    MPI_Group_incl(world, 1, &zero, &target);
    for (int epoch = 1; epoch <= 2; epoch++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            if (epoch == 1) work_ms(late);
            MPI_Win_post(origins, 0, win);
            MPI_Win_wait(win);
        } else {
            int value = rank * epoch;
            MPI_Win_start(target, 0, win);
            MPI_Put(&value, 1, MPI_INT, 0, rank, 1, MPI_INT, win);
            if (epoch == 2) work_ms(late);
            MPI_Win_complete(win);
        }
        if (rank == 0)
            for (int r = 1; r < size; r++)
                if (slots[r] != r * epoch) {
                    fprintf(stderr, "mpi_rma_gats: epoch %d: slot %d holds %d\n", epoch, r, slots[r]);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
    }
    MPI_Group_free(&origins);
    MPI_Group_free(&target);
    MPI_Group_free(&world);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
