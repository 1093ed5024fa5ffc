/* mpi.c - the PMPI layer's wrapper core: entry and exit of every wrapper (region ids), MPI_Init and
 * MPI_Init_thread, Sendrecv, and the generated table-driven wrappers (build/mpi_wrappers.c).
 * The rest of the layer is described in mpi_internal.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

#define XT_MAX_MPI_REGIONS 160
static uint32_t region_ids[XT_MAX_MPI_REGIONS];
static int region_ids_ready;

/* ---------------------------------------------------------------- regions */
static const char *const hand_names[H_COUNT] = {
    "MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Wait",
    "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome",
    "MPI_Cancel", "MPI_Comm_dup", "MPI_Comm_split", "MPI_Comm_create", "MPI_Comm_split_type", "MPI_Comm_free",
    "MPI_Abort", "MPI_Start", "MPI_Startall", "MPI_Request_free"};
static const uint8_t hand_roles[H_COUNT] = {
    ELG_ROLE_MPI_INIT_FINALIZE, ELG_ROLE_MPI_INIT_FINALIZE, ELG_ROLE_MPI_INIT_FINALIZE, ELG_ROLE_MPI_POINT2POINT,
    ELG_ROLE_MPI_POINT2POINT, ELG_ROLE_MPI_POINT2POINT, ELG_ROLE_MPI_POINT2POINT, ELG_ROLE_MPI_POINT2POINT,
    ELG_ROLE_MPI_POINT2POINT, ELG_ROLE_MPI_POINT2POINT, ELG_ROLE_MPI_POINT2POINT, ELG_ROLE_MPI_POINT2POINT,
    ELG_ROLE_MPI_POINT2POINT, ELG_ROLE_MPI_POINT2POINT, ELG_ROLE_MPI_OTHER, ELG_ROLE_MPI_OTHER, ELG_ROLE_MPI_OTHER,
    ELG_ROLE_MPI_OTHER, ELG_ROLE_MPI_OTHER, ELG_ROLE_MPI_OTHER, ELG_ROLE_MPI_POINT2POINT, ELG_ROLE_MPI_POINT2POINT,
    ELG_ROLE_MPI_POINT2POINT};

/* ---------------------------------------------------------------- collective exit */
void xt_mpi_collend(xt_thread *t, int idx, MPI_Comm comm, int root, uint64_t sent, uint64_t recvd)
{
    uint32_t cid = xt_comm_id(comm);
    uint32_t groot = root == MPI_PROC_NULL ? ELG_NO_ID : xt_global_rank(cid, root);
    xt_leave(t, xt_now(), ELG_MPI_COLLEXIT, xt_mpi_region(idx), cid, groot, sent, recvd);
    t->in_mpi = 0;
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_SENDRECV, &t);
    if (!t)
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                             recvtag, comm, status);
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    xt_send_event(t, t0, comm, dest, sendtag, (uint64_t)sendcount * xt_tsize(sendtype), 0, 0);
    int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                           comm, status);
    xt_recv_event(t, xt_now(), comm, source, recvtag, status, 0);
    xt_mpi_end(t, H_SENDRECV);
    return rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag,
                         MPI_Comm comm, MPI_Status *status)
{
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_SENDRECV_REPLACE, &t);
    if (!t) return PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    xt_send_event(t, t0, comm, dest, sendtag, (uint64_t)count * xt_tsize(datatype), 0, 0);
    int rc = PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
    xt_recv_event(t, xt_now(), comm, source, recvtag, status, 0);
    xt_mpi_end(t, H_SENDRECV_REPLACE);
    return rc;
}

/* ---------------------------------------------------------------- init */
static void setup(void)
{
    int rank, size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    xt_proc.rank = (uint32_t)rank;
    xt_proc.size = (uint32_t)size;
    xt_proc.mpi_active = 1;
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    PMPI_Get_library_version(ver, &len);
    char *nl = strchr(ver, '\n');
    if (nl) *nl = 0;
    char *comma = strchr(ver, ',');
    if (comma) *comma = 0;
    snprintf(xt_proc.mpi_library, sizeof xt_proc.mpi_library, "%.63s", ver);
    xt_mpi_comms_setup(rank, size);
    xt_mpi_measure_offset(0);
}

/* after a successful PMPI_Init*: set up, then record the init call [t0, now] */
void xt_mpi_init_done(int idx, xt_thread *t, uint64_t t0)
{
    if (xt_proc.mpi_active || xt_proc.untraced) return; /* a Fortran binding that went through our C wrapper */
    setup();
    xt_install_crash_handlers(); /* in front of the handlers the MPI library installed in its init */
    if (t && xt_cfg.record_mpi && atomic_load(&xt_recording)) {
        xt_enter(t, t0, xt_mpi_region(idx), ELG_NO_ID, ELG_NO_ID);
        xt_exit(t, xt_now(), xt_mpi_region(idx));
    }
}

int MPI_Init(int *argc, char ***argv)
{
    xt_thread *t = xt_self();
    uint64_t t0 = xt_now();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) xt_mpi_init_done(H_INIT, t, t0);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    xt_thread *t = xt_self();
    uint64_t t0 = xt_now();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) xt_mpi_init_done(H_INIT_THREAD, t, t0);
    return rc;
}

/* ---------------------------------------------------------------- generated wrappers */
#include "mpi_wrappers.c"

_Static_assert(H_COUNT + XT_GEN_COUNT <= XT_MAX_MPI_REGIONS, "raise XT_MAX_MPI_REGIONS");

uint32_t xt_mpi_region(int idx)
{
    if (!region_ids_ready) {
        for (int i = 0; i < H_COUNT; i++)
            region_ids[i] = xt_region_define(hand_names[i], "MPI", ELG_NO_ID, ELG_PARADIGM_MPI, hand_roles[i]);
        for (int i = 0; i < XT_GEN_COUNT; i++)
            region_ids[H_COUNT + i] =
                xt_region_define(xt_gen_names[i], "MPI", ELG_NO_ID, ELG_PARADIGM_MPI, xt_gen_roles[i]);
        __atomic_store_n(&region_ids_ready, 1, __ATOMIC_RELEASE);
    }
    return region_ids[idx];
}
