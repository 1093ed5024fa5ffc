/* mpi_internal.h - the internal interface of the PMPI layer, shared by its files and the generated wrappers.
 *
 * The layer is compiled once per MPI flavour (Open MPI, MPICH), with -fvisibility=default so that the
 * MPI_* wrappers are exported; everything declared here is therefore marked XT_HIDDEN.
 *   mpi.c           wrapper entry and exit, region table, MPI_Init*, Sendrecv, the generated C wrappers
 *   mpi_comm.c      communicators and groups: identities, members as global ranks, Comm_* wrappers
 *   mpi_request.c   request tracking, the Wait/Test family, persistent requests, non-blocking collectives
 *   mpi_rma.c       one-sided communication: windows, their ranks and groups, the MPI_RMA_* records
 *   mpi_clock.c     clock offsets to rank 0 (hierarchical ping-pong) at init and finalize
 *   mpi_finalize.c  MPI_Finalize's merge of all ranks into one file on rank 0, MPI_Abort, exit without Finalize
 *   mpi_fortran.c   Fortran bindings (Open MPI only) and the generated Fortran wrappers */
#ifndef XT_MPI_INTERNAL_H
#define XT_MPI_INTERNAL_H
#include <limits.h>
#include <mpi.h>

#include "xt.h"

enum { XT_REQ_SEND = 1, XT_REQ_RECV = 2, XT_REQ_COLL = 3 };

/* ---------------------------------------------------------------- regions of the hand-written wrappers */
#define H_INIT 0
#define H_INIT_THREAD 1
#define H_FINALIZE 2
#define H_SENDRECV 3
#define H_SENDRECV_REPLACE 4
#define H_WAIT 5
#define H_WAITALL 6
#define H_WAITANY 7
#define H_WAITSOME 8
#define H_TEST 9
#define H_TESTALL 10
#define H_TESTANY 11
#define H_TESTSOME 12
#define H_CANCEL 13
#define H_COMM_DUP 14
#define H_COMM_SPLIT 15
#define H_COMM_CREATE 16
#define H_COMM_SPLIT_TYPE 17
#define H_COMM_FREE 18
#define H_ABORT 19
#define H_START 20
#define H_STARTALL 21
#define H_REQUEST_FREE 22
#define H_COUNT 23 /* the generated wrappers' regions follow: H_COUNT + i */

/* region id of wrapper idx (H_* or H_COUNT + generated index), defined on first use (mpi.c) */
XT_HIDDEN uint32_t xt_mpi_region(int idx);

/* ---------------------------------------------------------------- communicators (mpi_comm.c) */
extern XT_HIDDEN MPI_Comm xt_comm; /* private duplicate of COMM_WORLD for the runtime's own traffic */
extern XT_HIDDEN int xt_comm_keyval; /* attribute holding a communicator's local id */
/* keyval, MPI_COMM_WORLD and MPI_COMM_SELF definitions, xt_comm: once, after PMPI_Init */
XT_HIDDEN void xt_mpi_comms_setup(int rank, int size);
/* a new communicator's identity, agreed over it when collective (else a per-rank one); its local id */
XT_HIDDEN uint32_t xt_comm_register(MPI_Comm c, MPI_Comm parent, const char *name, int collective);
XT_HIDDEN uint32_t xt_comm_id(MPI_Comm c);
XT_HIDDEN uint32_t xt_global_rank(uint32_t cid, int local); /* comm-local rank -> global rank */
XT_HIDDEN void xt_comm_geometry(MPI_Comm c, int *n, int *me);

/* ---------------------------------------------------------------- requests (mpi_request.c) */
XT_HIDDEN uint64_t xt_request_new(MPI_Request r, int kind, MPI_Comm comm, int peer, int tag, int unused);
XT_HIDDEN void xt_request_persistent(MPI_Request r, int kind, MPI_Comm comm, int peer, int tag, uint64_t bytes,
                                     uint8_t flags);
XT_HIDDEN void xt_request_coll(MPI_Request r, int region, MPI_Comm comm, int root, uint64_t sent, uint64_t recvd);
XT_HIDDEN void xt_request_start(xt_thread *t, uint64_t time, MPI_Request r);
XT_HIDDEN void xt_request_forget(MPI_Request r);
XT_HIDDEN void xt_complete_set(xt_thread *t, uint64_t t0, uint64_t now, const MPI_Request *handles, const int *which,
                               int count, MPI_Status *sts, size_t st_stride);

/* ---------------------------------------------------------------- init, offsets, finalize */
XT_HIDDEN void xt_mpi_init_done(int idx, xt_thread *t, uint64_t t0); /* mpi.c */
XT_HIDDEN void xt_mpi_measure_offset(int slot);                     /* mpi_clock.c: 0 at init, 1 at finalize */
XT_HIDDEN void xt_mpi_finalize_prepare(void);                       /* mpi_finalize.c */
XT_HIDDEN void xt_mpi_abort_prepare(int errorcode);                 /* mpi_finalize.c */

/* ---------------------------------------------------------------- byte counts */
static inline uint64_t xt_tsize(MPI_Datatype t)
{
    int s = 0;
    if (t == MPI_DATATYPE_NULL) return 0;
    PMPI_Type_size(t, &s);
    return s > 0 ? (uint64_t)s : 0;
}

static inline uint64_t xt_sum_int(const int *c, int n)
{
    uint64_t s = 0;
    for (int i = 0; c && i < n; i++) s += c[i] > 0 ? (uint64_t)c[i] : 0;
    return s;
}
#if MPI_VERSION >= 4
static inline uint64_t xt_sum_count(const MPI_Count *c, int n)
{
    uint64_t s = 0;
    for (int i = 0; c && i < n; i++) s += c[i] > 0 ? (uint64_t)c[i] : 0;
    return s;
}
#define xt_sum(c, n) _Generic((c), const MPI_Count *: xt_sum_count, MPI_Count *: xt_sum_count, default: xt_sum_int)(c, n)
#else
#define xt_sum(c, n) xt_sum_int(c, n)
#endif

/* ---------------------------------------------------------------- wrapper entry and exit */
/* Enter a wrapper: returns the enter time and the thread, or *tp = NULL when not recording
 * (nested MPI calls, MPI off, after finalize). */
static inline uint64_t xt_mpi_begin(int idx, xt_thread **tp)
{
    *tp = NULL;
    if (!atomic_load_explicit(&xt_recording, memory_order_relaxed) || !xt_cfg.record_mpi) return 0;
    xt_thread *t = xt_self();
    if (!t || t->in_mpi) return 0;
    t->in_mpi = 1;
    uint64_t now = xt_now();
    xt_enter(t, now, xt_mpi_region(idx), ELG_NO_ID, ELG_NO_ID);
    *tp = t;
    return now;
}

static inline void xt_mpi_end(xt_thread *t, int idx)
{
    xt_exit(t, xt_now(), xt_mpi_region(idx));
    t->in_mpi = 0;
}

/* leave a collective wrapper with MPI_COLLEXIT (comm, global root, bytes) instead of EXIT (mpi.c) */
XT_HIDDEN void xt_mpi_collend(xt_thread *t, int idx, MPI_Comm comm, int root, uint64_t sent, uint64_t recvd);

/* ---------------------------------------------------------------- file I/O (format 2.2) */
/* one read or write inside the MPI_File_* call: the bytes asked for (count x type size) */
static inline void xt_file_io_event(xt_thread *t, uint8_t flags, uint64_t bytes)
{
    xt_record(t, xt_now(), ELG_MPI_FILE_IO, flags, 0, 0, 0, bytes, 0);
}

/* ---------------------------------------------------------------- one-sided communication (format 2.3, mpi_rma.c) */
#define XT_ALL_TARGETS INT_MIN /* a synchronisation with every process of the window (flush_all, ...) */
XT_HIDDEN uint32_t xt_win_created(MPI_Win w, MPI_Comm comm); /* after MPI_Win_create*: define it; our id */
XT_HIDDEN uint32_t xt_win_id(MPI_Win w);                     /* our id of a window */
/* MPI_RMA_PUT / _GET / _ATOMIC to window rank `target` (none to MPI_PROC_NULL) */
XT_HIDDEN void xt_rma_transfer(xt_thread *t, uint8_t type, MPI_Win win, int target, uint8_t op, uint64_t sent,
                               uint64_t recvd, uint8_t flags);
/* MPI_RMA_SYNC of `kind`: the group of post/start, the open epoch's group for complete/wait/test, else the
 * window rank `target` (XT_ALL_TARGETS: none) */
XT_HIDDEN void xt_rma_sync(xt_thread *t, MPI_Win win, uint8_t kind, MPI_Group group, int target, uint8_t flags);
XT_HIDDEN void xt_rma_sync_id(xt_thread *t, uint32_t win, uint8_t kind); /* CREATE, FREE: by our window id */

/* ---------------------------------------------------------------- message events */
static inline void xt_send_event(xt_thread *t, uint64_t time, MPI_Comm comm, int dest, int tag, uint64_t bytes,
                                 uint8_t flags, uint64_t req)
{
    if (dest == MPI_PROC_NULL) return;
    uint32_t cid = xt_comm_id(comm);
    xt_record(t, time, ELG_MPI_SEND, flags, xt_global_rank(cid, dest), cid, (uint32_t)tag, bytes, req);
}

static inline void xt_recv_event(xt_thread *t, uint64_t time, MPI_Comm comm, int source, int tag, MPI_Status *st,
                                 uint64_t req)
{
    if (source == MPI_PROC_NULL || st->MPI_SOURCE == MPI_PROC_NULL) return;
    uint32_t cid = xt_comm_id(comm);
    int bytes = 0;
    PMPI_Get_count(st, MPI_BYTE, &bytes);
    uint8_t flags = (source == MPI_ANY_SOURCE ? ELG_RECV_ANY_SOURCE : 0) | (tag == MPI_ANY_TAG ? ELG_RECV_ANY_TAG : 0);
    xt_record(t, time, ELG_MPI_RECV, flags, xt_global_rank(cid, st->MPI_SOURCE), cid, (uint32_t)st->MPI_TAG,
              bytes > 0 ? (uint64_t)bytes : 0, req);
}

static inline void xt_recv_request_event(xt_thread *t, uint64_t time, MPI_Comm comm, int source, int tag, uint64_t req)
{
    uint32_t cid = xt_comm_id(comm);
    xt_record(t, time, ELG_MPI_RECV_REQUEST, 0, source == MPI_ANY_SOURCE ? ELG_ANY : xt_global_rank(cid, source), cid,
              tag == MPI_ANY_TAG ? ELG_ANY : (uint32_t)tag, 0, req);
}
#endif
