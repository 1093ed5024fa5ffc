/* nonblocking.c - non-blocking collectives and persistent requests with known counts (tests/runtime):
 *   Ibarrier + Iallreduce + a ring Irecv completed by one Waitall (posted in that order);
 *   Igather to rank 1 % size completed by a Test loop;
 *   Ssend_init / Recv_init to the right / from the left, started ROUNDS times, then freed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 3

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int one = 1, sum = 0, in = 0, token = rank;
    MPI_Request r[3];
    MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
    MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]);
    MPI_Irecv(&in, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &r[2]);
    MPI_Send(&token, 1, MPI_INT, right, 3, MPI_COMM_WORLD);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);

    int *all = malloc(size * sizeof(int)), flag = 0;
    MPI_Request g;
    MPI_Igather(&rank, 1, MPI_INT, all, 1, MPI_INT, 1 % size, MPI_COMM_WORLD, &g);
    while (!flag) {
        MPI_Test(&g, &flag, MPI_STATUS_IGNORE);
        if (!flag) usleep(200);
    }

    double out[4] = {0}, back[4];
    MPI_Request p[2];
    MPI_Recv_init(back, 4, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, &p[0]);
    MPI_Ssend_init(out, 4, MPI_DOUBLE, right, 4, MPI_COMM_WORLD, &p[1]);
    for (int i = 0; i < ROUNDS; i++) {
        MPI_Start(&p[0]);
        MPI_Start(&p[1]);
        MPI_Wait(&p[1], MPI_STATUS_IGNORE);
        MPI_Wait(&p[0], MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&p[0]);
    MPI_Request_free(&p[1]);
    if (rank == 0) printf("sum %d\n", sum);
    free(all);
    MPI_Finalize();
    return 0;
}
