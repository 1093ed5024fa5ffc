/* mpi_rma_crash.c - one-sided epochs, then rank 1 is killed (SIGKILL): what its spool file keeps.
 *
 * 2 ranks, a window over MPI_COMM_WORLD.  STEPS times: a fence epoch in which each rank puts its rank
 * into the other's window, then a post/start/complete/wait epoch with rank 0 as the target of rank 1's
 * put.  Then rank 1 raises SIGKILL (no handler can run: only the buffers its threads flushed to the spool
 * file remain), and rank 0 waits in MPI_Barrier until the launcher ends it.  Run with a small buffer
 * (EXPERT_BUFFER_SIZE=64k) so that the spool holds many records.
 */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank;
    static int slots[2]; /* (window memory on the stack was overwritten under MPICH 4.0: see mpi_rma.c) */
    int steps = argc > 1 ? atoi(argv[1]) : 600;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win win;
    MPI_Win_create(slots, sizeof slots, sizeof slots[0], MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Group world, other;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int peer = 1 - rank;
    MPI_Group_incl(world, 1, &peer, &other);
    for (int i = 0; i < steps; i++) {
        MPI_Win_fence(0, win);
        MPI_Put(&rank, 1, MPI_INT, peer, rank, 1, MPI_INT, win);
        MPI_Win_fence(0, win);
        if (rank == 0) {
            MPI_Win_post(other, 0, win);
            MPI_Win_wait(win);
        } else {
            MPI_Win_start(other, 0, win);
            MPI_Put(&rank, 1, MPI_INT, 0, 1, 1, MPI_INT, win);
            MPI_Win_complete(win);
        }
    }
    if (rank == 1) raise(SIGKILL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
