/*
 * main_mpi.c - the program of one MPI property: compiled once per property with
 * -DATS_PROPERTY=<name>; every rank reads the same command line.
 */
#define ATS_WITH_MPI 1
#include "ats.h"

#define STR2(x) #x
#define STR(x) STR2(x)

/* a balanced twin of a low/high property runs with low == high */
#define LOW_HIGH(f) f(a.balanced ? a.high : a.low, a.high, a.reps)
#define DISTR(f) f(a.df, &a.dd, a.reps)

#define KIND_late_sender LOW_HIGH
#define KIND_late_receiver LOW_HIGH
#define KIND_wrong_order(f) f(a.high, a.reps, a.balanced)
#define KIND_imbalance_at_mpi_barrier DISTR
#define KIND_imbalance_at_mpi_alltoall DISTR
#define KIND_late_broadcast LOW_HIGH
#define KIND_late_scatter LOW_HIGH
#define KIND_late_scatterv LOW_HIGH
#define KIND_early_reduce LOW_HIGH
#define KIND_early_gather LOW_HIGH
#define KIND_early_gatherv LOW_HIGH
#define KIND_rma_late_fence LOW_HIGH
#define KIND_rma_late_post LOW_HIGH
#define KIND_rma_late_complete LOW_HIGH
#define KIND_rma_lock_contention LOW_HIGH

#define CALL2(kind, f) kind(f)
#define CALL(kind, f) CALL2(kind, f)
#define KIND2(p) KIND_##p
#define KIND(p) KIND2(p)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    ats_args_t a;
    ats_parse_args(argc, argv, STR(ATS_PROPERTY), &a);
    ats_calibrate();
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(KIND(ATS_PROPERTY), ATS_PROPERTY);
    MPI_Finalize();
    return 0;
}
