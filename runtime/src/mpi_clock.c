/* mpi_clock.c - clock offsets of every rank to rank 0, measured at MPI_Init and MPI_Finalize. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "mpi_internal.h"

static inline double fabs_d(double x) { return x < 0 ? -x : x; }

/* The ranks of one node share one clock (CLOCK_MONOTONIC, or an invariant TSC).  Node masters measure
 * their node's clock against rank 0's by EPILOG's ping-pong (shortest round trip of 10); the other ranks
 * of a node reuse their master's result (hierarchical, as EPIK).  Local time counts from each process's
 * own start, so a process's offset is its node's clock difference plus its start-time difference.
 * EXPERT_SYNC_NODE_SIZE=k treats every k consecutive ranks as one node (to exercise the hierarchy on
 * one host). */
static double node_clock_difference(MPI_Comm masters) /* rank 0's clock minus this master's, in seconds */
{
    int mrank, msize;
    PMPI_Comm_rank(masters, &mrank);
    PMPI_Comm_size(masters, &msize);
    double diff = 0;
    for (int w = 1; w < msize; w++) {
        if (mrank == 0) {
            double best_rtt = 1e30, best_mid = 0, dummy;
            for (int i = 0; i < 10; i++) {
                double s = xt_mono_seconds();
                PMPI_Send(&s, 1, MPI_DOUBLE, w, 77, masters);
                PMPI_Recv(&dummy, 1, MPI_DOUBLE, w, 77, masters, MPI_STATUS_IGNORE);
                double e = xt_mono_seconds();
                if (e - s < best_rtt) best_rtt = e - s, best_mid = s + (e - s) / 2;
            }
            PMPI_Send(&best_mid, 1, MPI_DOUBLE, w, 78, masters);
        } else if (mrank == w) {
            double seen[10], sent[10], s;
            for (int i = 0; i < 10; i++) {
                PMPI_Recv(&s, 1, MPI_DOUBLE, 0, 77, masters, MPI_STATUS_IGNORE);
                seen[i] = xt_mono_seconds(), sent[i] = s;
                PMPI_Send(&s, 1, MPI_DOUBLE, 0, 77, masters);
            }
            /* the master names the best round by its midpoint; its send time identifies the round */
            double mid;
            PMPI_Recv(&mid, 1, MPI_DOUBLE, 0, 78, masters, MPI_STATUS_IGNORE);
            int best = 0;
            for (int i = 1; i < 10; i++)
                if (fabs_d(mid - sent[i]) < fabs_d(mid - sent[best])) best = i;
            diff = mid - seen[best];
        }
    }
    return diff;
}

void xt_mpi_measure_offset(int slot)
{
    int rank;
    PMPI_Comm_rank(xt_comm, &rank);
    double local_now = xt_mono_seconds();
    MPI_Comm node, masters;
    long pseudo = 0;
    const char *env = getenv("EXPERT_SYNC_NODE_SIZE");
    if (env && *env) pseudo = strtol(env, NULL, 10);
    if (pseudo > 0) PMPI_Comm_split(xt_comm, (int)(rank / pseudo), rank, &node);
    else PMPI_Comm_split_type(xt_comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_rank;
    PMPI_Comm_rank(node, &node_rank);
    PMPI_Comm_split(xt_comm, node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &masters);
    double diff = 0;
    if (masters != MPI_COMM_NULL) {
        int nmasters;
        PMPI_Comm_size(masters, &nmasters);
        if (nmasters > 1) diff = node_clock_difference(masters);
        PMPI_Comm_free(&masters);
    }
    PMPI_Bcast(&diff, 1, MPI_DOUBLE, 0, node);
    PMPI_Comm_free(&node);
    double root0 = xt_mono0();
    PMPI_Bcast(&root0, 1, MPI_DOUBLE, 0, xt_comm);
    xt_proc.offset_time[slot] = local_now - xt_mono0();
    xt_proc.offset_value[slot] = diff + xt_mono0() - root0;
    xt_proc.n_offsets = slot + 1;
}
