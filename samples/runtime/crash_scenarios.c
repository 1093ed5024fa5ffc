/* crash_scenarios.c - a program that ends abnormally after a known number of events (tests/runtime/test_crash.py).
 *
 *   crash_scenarios HOW STEPS [NAME]    (built with -fopenmp, and with -DWITH_MPI by an MPI compiler wrapper)
 *
 * Two OpenMP threads each record STEPS user regions "step" (with EXPERT_BUFFER_SIZE=64k, some of them
 * reach the spool file before the end).  Then the process that dies (rank 1 under MPI, while the others
 * wait in a Barrier; the only process without MPI) ends by HOW:
 *   segv  a NULL dereference        abort      abort()            term   raise(SIGTERM)
 *   kill  raise(SIGKILL)            exit       exit(3)            _exit  _exit(3)
 *   mpi_abort  MPI_Abort(MPI_COMM_WORLD, 3) (MPI only)
 *   anything else (live): it lives, and the program ends normally
 * NAME (any bytes: a name that is not UTF-8, say) names a region the dying process enters before it dies. */
#ifdef WITH_MPI
#include <mpi.h>
#endif
#include <expert.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *how, const char *name)
{
    if (name && expert_region_enter) expert_region_enter(expert_region_define(name, __FILE__, __LINE__));
    EXPERT_REGION_ENTER(dying, "dying");
    if (!strcmp(how, "segv")) *(volatile int *)0 = 1;
    if (!strcmp(how, "abort")) abort();
    if (!strcmp(how, "term")) raise(SIGTERM);
    if (!strcmp(how, "kill")) raise(SIGKILL);
    if (!strcmp(how, "exit")) exit(3);
    if (!strcmp(how, "_exit")) _exit(3);
#ifdef WITH_MPI
    if (!strcmp(how, "mpi_abort")) MPI_Abort(MPI_COMM_WORLD, 3);
#endif
    EXPERT_REGION_EXIT(dying);
    if (name && expert_region_exit) expert_region_exit(expert_region_define(name, __FILE__, __LINE__));
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "segv";
    int steps = argc > 2 ? atoi(argv[2]) : 1000, rank = 0;
    const char *name = argc > 3 ? argv[3] : NULL;
#ifdef WITH_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
#pragma omp parallel num_threads(2)
    for (int i = 0; i < steps; i++) {
        EXPERT_REGION_ENTER(step, "step");
        EXPERT_REGION_EXIT(step);
    }
#ifdef WITH_MPI
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        usleep(100000); /* let the others reach the second barrier */
        die(how, name);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
#else
    die(how, name);
#endif
    return 0;
}
