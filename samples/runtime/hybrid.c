/* hybrid.c - a small MPI + OpenMP program with known message, collective and OpenMP counts.
 * Per rank: ITER iterations of { parallel region with a loop and a critical; ring send/recv
 * (blocking to the right, non-blocking from the left); Allreduce; Bcast from rank 1 % size };
 * then a Comm_split into even/odd ranks with one Barrier and one Reduce on it. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define ITER 3

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double sum = 0, buf[100] = {0}, in[100];
    for (int it = 0; it < ITER; it++) {
#pragma omp parallel
        {
#pragma omp for reduction(+ : sum)
            for (int i = 0; i < 1000 * (rank + 1); i++) sum += i * 1e-6;
#pragma omp critical
            sum += 1;
        }
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        MPI_Request req;
        MPI_Irecv(in, 100, MPI_DOUBLE, left, 10 + it, MPI_COMM_WORLD, &req);
        MPI_Send(buf, 100, MPI_DOUBLE, right, 10 + it, MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Bcast(buf, 10, MPI_DOUBLE, 1 % size, MPI_COMM_WORLD);
    }
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Barrier(half);
    int one = 1, total = 0;
    MPI_Reduce(&one, &total, 1, MPI_INT, MPI_SUM, 0, half);
    MPI_Comm_free(&half);
    if (rank == 0) printf("sum %g\n", sum);
    MPI_Finalize();
    return 0;
}
