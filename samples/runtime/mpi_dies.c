/* mpi_dies.c - an MPI program that ends abnormally after a known number of events (tests/runtime).
 * Every rank: one ring Sendrecv, one Barrier.  Then, by argv[1]:
 *   abort  rank 1 calls MPI_Abort(MPI_COMM_WORLD, 3) while the others wait in a second Barrier;
 *   exit   rank 1 calls exit(4) without MPI_Finalize while the others wait in a second Barrier;
 *   segv   rank 1 dereferences NULL while the others wait in a second Barrier. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, token, in;
    const char *how = argc > 1 ? argv[1] : "abort";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    token = rank;
    MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 1, &in, 1, MPI_INT, (rank + size - 1) % size, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        usleep(100000); /* let the others reach the second barrier */
        if (strcmp(how, "abort") == 0) MPI_Abort(MPI_COMM_WORLD, 3);
        if (strcmp(how, "exit") == 0) exit(4);
        if (strcmp(how, "segv") == 0) *(volatile int *)0 = 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
