/* hybrid_waits.c - an MPI + OpenMP program whose wait states are designed in.
 *
 * Run with 2 MPI ranks x 2 OpenMP threads.  "Work" is sleeping, so the designed
 * waits do not depend on how fast (or how shared) the cores are.  Each phase is
 * its own function so it shows up as its own call path when the program is
 * compiled with -finstrument-functions.  Every phase starts after an
 * MPI_Barrier, so the ranks enter it together.
 *
 *   usage: hybrid_waits [SCALE [LATE_SENDER]]
 *          SCALE: every designed wait is SCALE x its base value (default 1);
 *          LATE_SENDER: the late sender's delay in seconds instead (CI examples inject a regression with it)
 *
 * Designed waits (seconds, times SCALE), as expert-analyze should report them:
 *   serial_phase          omp_idle_threads          0.20   each rank, thread 1 (master works alone)
 *   late_sender_phase     mpi_latesender            0.30   rank 1, in MPI_Recv
 *   barrier_phase         mpi_barrier_wait          0.40   rank 0, in MPI_Barrier
 *   broadcast_phase       mpi_latebroadcast         0.25   rank 0, in MPI_Bcast (root 1 is late)
 *   omp_barrier_phase     omp_ebarrier_wait         0.20   each rank, thread 1, at "!$omp barrier"
 *   critical_phase        omp_lock_contention_critical 0.15  each rank, the thread that came second
 */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double scale = 1.0;
static double late_sender = -1; /* seconds; < 0: 0.30 x SCALE */

#define PHASE __attribute__((noinline))

/* not instrumented: the time it sleeps belongs to the phase that called it */
__attribute__((no_instrument_function)) static void work(double seconds)
{
    seconds *= scale;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

PHASE static void serial_phase(void) { work(0.20); }

PHASE static void late_sender_phase(int rank)
{
    double buf[512] = {0};
    if (rank == 0) {
        if (late_sender >= 0)
            work(late_sender / scale); /* work() multiplies by scale */
        else
            work(0.30);
        MPI_Send(buf, 512, MPI_DOUBLE, 1, 42, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(buf, 512, MPI_DOUBLE, 0, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

PHASE static void barrier_phase(int rank)
{
    if (rank == 1) work(0.40);
    MPI_Barrier(MPI_COMM_WORLD);
}

PHASE static void broadcast_phase(int rank)
{
    double buf[128] = {0};
    if (rank == 1) work(0.25);
    MPI_Bcast(buf, 128, MPI_DOUBLE, 1, MPI_COMM_WORLD);
}

PHASE static void omp_barrier_phase(void)
{
#pragma omp parallel num_threads(2)
    {
        work(omp_get_thread_num() == 0 ? 0.30 : 0.10);
#pragma omp barrier
    }
}

PHASE static void critical_phase(void)
{
#pragma omp parallel num_threads(2)
    {
#pragma omp critical
        work(0.15);
    }
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1) scale = atof(argv[1]);
    if (argc > 2) late_sender = atof(argv[2]);
    if (size < 2 || scale <= 0) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 hybrid_waits [SCALE > 0 [LATE_SENDER seconds]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* start the OpenMP runtime before the measured phases */
#pragma omp parallel num_threads(2)
    {
    }
    MPI_Barrier(MPI_COMM_WORLD);
    serial_phase();
    MPI_Barrier(MPI_COMM_WORLD);
    late_sender_phase(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    barrier_phase(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    broadcast_phase(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    omp_barrier_phase();
    MPI_Barrier(MPI_COMM_WORLD);
    critical_phase();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("hybrid_waits: done (scale %g)\n", scale);
    MPI_Finalize();
    return 0;
}
