/* lose_output.c - removes the directory given as its first argument before it ends, so the trace
 * (written at exit, or at MPI_Finalize with -DWITH_MPI) cannot be written there: the run must end
 * with a non-zero exit status.  500 OpenMP parallel regions, so that each rank's events (about
 * 80 KB per thread) are more than an MPI library sends eagerly: rank 0 must still receive them. */
#ifdef WITH_MPI
#include <mpi.h>
#endif
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
#ifdef WITH_MPI
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
#else
    int rank = 0;
#endif
    int n = 0;
    for (int i = 0; i < 500; i++) {
#pragma omp parallel num_threads(2)
#pragma omp atomic
        n++;
    }
    if (rank == 0 && argc > 1 && rmdir(argv[1]) != 0) perror("rmdir");
#ifdef WITH_MPI
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
#endif
    return n > 0 ? 0 : 1;
}
