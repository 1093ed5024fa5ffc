/* mpi.c - PMPI layer: init/finalize with clock offsets and the merge into one file on rank 0,
 * communicator identities, request tracking, completion calls; includes the generated wrappers. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_internal.h"

static MPI_Comm xt_comm = MPI_COMM_NULL; /* private duplicate of COMM_WORLD for our own traffic */
static int comm_keyval = MPI_KEYVAL_INVALID;
static uint32_t created_seq;             /* communicators this rank created as leader */
static pthread_mutex_t req_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t next_request = 1;

/* per local comm id: members as global ranks (index = comm-local rank) */
typedef struct {
    uint32_t size;
    uint32_t *members;
} comm_info;
static comm_info *cinfo;
static uint32_t n_cinfo, cap_cinfo;
static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;

#define XT_MAX_MPI_REGIONS 128
static uint32_t region_ids[XT_MAX_MPI_REGIONS];
static int region_ids_ready;

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

/* ---------------------------------------------------------------- regions */
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
#define H_COUNT 23
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

static uint32_t region_of(int idx);
static inline double fabs_d(double x) { return x < 0 ? -x : x; }

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
    xt_enter(t, now, region_of(idx), ELG_NO_ID, ELG_NO_ID);
    *tp = t;
    return now;
}

static inline void xt_mpi_end(xt_thread *t, int idx)
{
    xt_exit(t, xt_now(), region_of(idx));
    t->in_mpi = 0;
}

/* ---------------------------------------------------------------- communicators */
static uint32_t comm_add_info(uint32_t id, uint32_t size, const uint32_t *members)
{
    pthread_mutex_lock(&comm_lock);
    if (id >= cap_cinfo) {
        uint32_t ncap = cap_cinfo ? cap_cinfo * 2 : 16;
        while (ncap <= id) ncap *= 2;
        cinfo = realloc(cinfo, ncap * sizeof *cinfo);
        memset(cinfo + cap_cinfo, 0, (ncap - cap_cinfo) * sizeof *cinfo);
        cap_cinfo = ncap;
    }
    cinfo[id].size = size;
    cinfo[id].members = malloc((size ? size : 1) * 4);
    memcpy(cinfo[id].members, members, size * 4);
    if (id >= n_cinfo) n_cinfo = id + 1;
    pthread_mutex_unlock(&comm_lock);
    return id;
}

static void members_of(MPI_Comm c, uint32_t *size, uint32_t **members)
{
    MPI_Group g, wg;
    int n = 0, inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    if (inter) PMPI_Comm_remote_size(c, &n); /* not used as members; keep the local group below */
    PMPI_Comm_group(c, &g);
    PMPI_Group_size(g, &n);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *loc = malloc((n ? n : 1) * sizeof(int)), *glob = malloc((n ? n : 1) * sizeof(int));
    for (int i = 0; i < n; i++) loc[i] = i;
    PMPI_Group_translate_ranks(g, n, loc, wg, glob);
    *members = malloc((n ? n : 1) * 4);
    for (int i = 0; i < n; i++) (*members)[i] = (uint32_t)glob[i];
    *size = (uint32_t)n;
    free(loc), free(glob);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
}

/* Give a new communicator a process-independent identity: (lowest global rank, that rank's count),
 * agreed on by a broadcast from that member (collective over the new communicator). */
static uint32_t comm_register(MPI_Comm c, MPI_Comm parent, const char *name, int collective)
{
    if (c == MPI_COMM_NULL) return ELG_NO_ID;
    uint32_t size, *members;
    members_of(c, &size, &members);
    uint32_t leader = 0xFFFFFFFFu;
    int leader_local = 0;
    for (uint32_t i = 0; i < size; i++)
        if (members[i] < leader) leader = members[i], leader_local = (int)i;
    uint32_t seq = 0;
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    if (collective && !inter) {
        if (leader == xt_proc.rank) seq = ++created_seq;
        PMPI_Bcast(&seq, 1, MPI_UINT32_T, leader_local, c);
    } else { /* not agreed with the others: a per-rank identity that never merges */
        leader = xt_proc.rank;
        seq = 0x40000000u + ++created_seq;
    }
    uint32_t parent_id = ELG_NO_ID;
    if (parent != MPI_COMM_NULL && comm_keyval != MPI_KEYVAL_INVALID) {
        void *v;
        int flag = 0;
        PMPI_Comm_get_attr(parent, comm_keyval, &v, &flag);
        if (flag) parent_id = (uint32_t)(uintptr_t)v;
    }
    uint32_t id = xt_comm_define(leader, seq, parent_id, size, members, name);
    comm_add_info(id, size, members);
    free(members);
    PMPI_Comm_set_attr(c, comm_keyval, (void *)(uintptr_t)id);
    return id;
}

static uint32_t comm_id(MPI_Comm c)
{
    if (c == MPI_COMM_NULL || comm_keyval == MPI_KEYVAL_INVALID) return ELG_NO_ID;
    void *v;
    int flag = 0;
    PMPI_Comm_get_attr(c, comm_keyval, &v, &flag);
    if (flag) return (uint32_t)(uintptr_t)v;
    return comm_register(c, MPI_COMM_NULL, "unknown", 0); /* made by a call we do not wrap */
}

/* comm-local rank -> global rank */
static uint32_t global_rank(uint32_t cid, int local)
{
    if (local < 0) return ELG_NO_ID;
    if (cid < n_cinfo && (uint32_t)local < cinfo[cid].size) return cinfo[cid].members[local];
    return ELG_NO_ID;
}

static void xt_comm_geometry(MPI_Comm c, int *n, int *me)
{
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    PMPI_Comm_size(c, n);
    PMPI_Comm_rank(c, me);
}

/* ---------------------------------------------------------------- events */
static inline void xt_send_event(xt_thread *t, uint64_t time, MPI_Comm comm, int dest, int tag, uint64_t bytes,
                                 uint8_t flags, uint64_t req)
{
    if (dest == MPI_PROC_NULL) return;
    uint32_t cid = comm_id(comm);
    xt_record(t, time, ELG_MPI_SEND, flags, global_rank(cid, dest), cid, (uint32_t)tag, bytes, req);
}

static inline void xt_recv_event(xt_thread *t, uint64_t time, MPI_Comm comm, int source, int tag, MPI_Status *st,
                                 uint64_t req)
{
    if (source == MPI_PROC_NULL || st->MPI_SOURCE == MPI_PROC_NULL) return;
    uint32_t cid = comm_id(comm);
    int bytes = 0;
    PMPI_Get_count(st, MPI_BYTE, &bytes);
    uint8_t flags = (source == MPI_ANY_SOURCE ? ELG_RECV_ANY_SOURCE : 0) | (tag == MPI_ANY_TAG ? ELG_RECV_ANY_TAG : 0);
    xt_record(t, time, ELG_MPI_RECV, flags, global_rank(cid, st->MPI_SOURCE), cid, (uint32_t)st->MPI_TAG,
              bytes > 0 ? (uint64_t)bytes : 0, req);
}

static inline void xt_recv_request_event(xt_thread *t, uint64_t time, MPI_Comm comm, int source, int tag, uint64_t req)
{
    uint32_t cid = comm_id(comm);
    xt_record(t, time, ELG_MPI_RECV_REQUEST, 0, source == MPI_ANY_SOURCE ? ELG_ANY : global_rank(cid, source), cid,
              tag == MPI_ANY_TAG ? ELG_ANY : (uint32_t)tag, 0, req);
}

static void xt_mpi_collend(xt_thread *t, int idx, MPI_Comm comm, int root, uint64_t sent, uint64_t recvd)
{
    uint32_t cid = comm_id(comm);
    uint32_t groot = root == MPI_PROC_NULL ? ELG_NO_ID : global_rank(cid, root);
    xt_leave(t, xt_now(), ELG_MPI_COLLEXIT, region_of(idx), cid, groot, sent, recvd);
    t->in_mpi = 0;
}

/* ---------------------------------------------------------------- requests */
/* What the runtime remembers about a live request, keyed by its C handle.  A persistent request
 * stays in the table from Send_init/Recv_init until Request_free; id is 0 while it is inactive. */
typedef struct {
    uint64_t key, id;
    MPI_Comm comm;
    int kind, peer, tag;
    int persistent;
    uint8_t send_flags; /* persistent send: what each MPI_Start records */
    uint64_t bytes;
    int region;         /* non-blocking collective: the posting call's region index */
    int root;           /* comm-local root or MPI_PROC_NULL */
    uint64_t sent, recvd;
} req_t;
static req_t *reqs;
static size_t n_reqs, cap_reqs;

static uint64_t req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < 8 ? sizeof r : 8);
    return k;
}

static void request_add(const req_t *q)
{
    pthread_mutex_lock(&req_lock);
    if (n_reqs == cap_reqs) {
        cap_reqs = cap_reqs ? cap_reqs * 2 : 64;
        reqs = realloc(reqs, cap_reqs * sizeof *reqs);
    }
    reqs[n_reqs++] = *q;
    pthread_mutex_unlock(&req_lock);
}

static uint64_t xt_request_new(MPI_Request r, int kind, MPI_Comm comm, int peer, int tag, int unused)
{
    (void)unused;
    uint64_t id = atomic_fetch_add(&next_request, 1);
    req_t q = {.key = req_key(r), .id = id, .comm = comm, .kind = kind, .peer = peer, .tag = tag};
    request_add(&q);
    return id;
}

/* Send_init / Recv_init and friends: nothing is recorded until MPI_Start */
static void xt_request_persistent(MPI_Request r, int kind, MPI_Comm comm, int peer, int tag, uint64_t bytes,
                                  uint8_t flags)
{
    req_t q = {.key = req_key(r), .comm = comm, .kind = kind, .peer = peer, .tag = tag, .persistent = 1,
               .send_flags = flags, .bytes = bytes};
    request_add(&q);
}

/* a non-blocking collective: its instance is recorded by the call that completes it */
static void xt_request_coll(MPI_Request r, int region, MPI_Comm comm, int root, uint64_t sent, uint64_t recvd)
{
    req_t q = {.key = req_key(r), .id = atomic_fetch_add(&next_request, 1), .comm = comm, .kind = XT_REQ_COLL,
               .region = region, .root = root, .sent = sent, .recvd = recvd};
    request_add(&q);
}

/* Look up a request.  take: a completion (non-persistent entries leave the table, persistent ones
 * become inactive); otherwise only copy it out. */
static int request_find(MPI_Request r, req_t *out, int take)
{
    uint64_t k = req_key(r);
    int found = 0;
    pthread_mutex_lock(&req_lock);
    for (size_t i = n_reqs; i-- > 0;) { /* live requests are few; newest first */
        if (reqs[i].key == k) {
            *out = reqs[i];
            found = 1;
            if (take && reqs[i].persistent) reqs[i].id = 0;
            else if (take) reqs[i] = reqs[--n_reqs];
            break;
        }
    }
    pthread_mutex_unlock(&req_lock);
    return found && out->id != 0;
}

/* MPI_Start of a persistent request: the message is posted now, under a fresh request id */
static void start_one(xt_thread *t, uint64_t time, MPI_Request r)
{
    uint64_t k = req_key(r), id = 0;
    req_t q;
    pthread_mutex_lock(&req_lock);
    for (size_t i = n_reqs; i-- > 0;)
        if (reqs[i].key == k && reqs[i].persistent) {
            reqs[i].id = id = atomic_fetch_add(&next_request, 1);
            q = reqs[i];
            break;
        }
    pthread_mutex_unlock(&req_lock);
    if (!id) return;
    if (q.kind == XT_REQ_SEND) xt_send_event(t, time, q.comm, q.peer, q.tag, q.bytes, q.send_flags, id);
    else xt_recv_request_event(t, time, q.comm, q.peer, q.tag, id);
}

/* The completion of request `r` (captured before the call) with status `st`; collectives are
 * written by complete_set, which orders them. */
static void complete(xt_thread *t, uint64_t time, const req_t *q, MPI_Status *st)
{
    int cancelled = 0;
    if (st) PMPI_Test_cancelled(st, &cancelled);
    if (cancelled) xt_record(t, time, ELG_MPI_REQUEST_CANCELLED, 0, 0, 0, 0, 0, q->id);
    else if (q->kind == XT_REQ_SEND) xt_record(t, time, ELG_MPI_SEND_COMPLETE, 0, 0, 0, 0, 0, q->id);
    else if (st) xt_recv_event(t, time, q->comm, q->peer, q->tag, st, q->id);
}

/* Record the completions of a Wait/Test call: handles[which[k]] completed with status sts[k]
 * (sts may be NULL).  t0 is the completion call's enter time, now the time it returned.
 *
 * A completed non-blocking collective becomes a collective instance nested in the completion call:
 * ENTER <MPI_Ixxx> at t0 (the first; later ones at now) and MPI_COLLEXIT at now, with the posting
 * call's communicator, root and bytes.  Several collectives completed by one call are written in
 * posting order, which MPI makes the same on every rank. */
static void complete_set(xt_thread *t, uint64_t t0, uint64_t now, const MPI_Request *handles, const int *which,
                         int count, MPI_Status *sts, size_t st_stride)
{
    req_t found_small[8], *found = found_small; /* most calls complete few requests: no malloc */
    int slot_small[8], *slot = slot_small, n_found = 0;
    if (count > 8) {
        found = malloc((size_t)count * sizeof *found);
        slot = malloc((size_t)count * sizeof *slot);
    }
    for (int k = 0; k < count; k++) {
        MPI_Request r = handles[which ? which[k] : k];
        if (r != MPI_REQUEST_NULL && request_find(r, &found[n_found], 1)) slot[n_found++] = k;
    }
    /* collectives first, in posting order (request ids grow with posting), so times never go back */
    for (int i = 1; i < n_found; i++)
        for (int j = i; j > 0 && found[j].id < found[j - 1].id; j--) {
            req_t x = found[j];
            found[j] = found[j - 1], found[j - 1] = x;
            int y = slot[j];
            slot[j] = slot[j - 1], slot[j - 1] = y;
        }
    int first = 1;
    for (int i = 0; i < n_found; i++) {
        req_t *q = &found[i];
        if (q->kind != XT_REQ_COLL) continue;
        xt_enter(t, first ? t0 : now, region_of(q->region), ELG_NO_ID, ELG_NO_ID);
        first = 0;
        uint32_t cid = comm_id(q->comm);
        uint32_t groot = q->root == MPI_PROC_NULL ? ELG_NO_ID : global_rank(cid, q->root);
        xt_leave(t, now, ELG_MPI_COLLEXIT, region_of(q->region), cid, groot, q->sent, q->recvd);
    }
    for (int i = 0; i < n_found; i++)
        if (found[i].kind != XT_REQ_COLL)
            complete(t, now, &found[i], sts ? (MPI_Status *)((char *)sts + slot[i] * st_stride) : NULL);
    if (found != found_small) free(found), free(slot);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_WAIT, &t);
    if (!t) return PMPI_Wait(request, status);
    MPI_Request r = *request;
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    int rc = PMPI_Wait(request, status);
    complete_set(t, t0, xt_now(), &r, NULL, 1, status, 0);
    xt_mpi_end(t, H_WAIT);
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_TEST, &t);
    if (!t) return PMPI_Test(request, flag, status);
    MPI_Request r = *request;
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    int rc = PMPI_Test(request, flag, status);
    if (*flag) complete_set(t, t0, xt_now(), &r, NULL, 1, status, 0);
    xt_mpi_end(t, H_TEST);
    return rc;
}

static int multi(int idx, int n, MPI_Request *req, int *outcount, int *indices, int *index, int *flag,
                 MPI_Status *statuses, int (*waitall)(int, MPI_Request *, MPI_Status *),
                 int (*testall)(int, MPI_Request *, int *, MPI_Status *),
                 int (*waitany)(int, MPI_Request *, int *, MPI_Status *),
                 int (*testany)(int, MPI_Request *, int *, int *, MPI_Status *),
                 int (*some)(int, MPI_Request *, int *, int *, MPI_Status *))
{
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(idx, &t);
    MPI_Request *copy = t ? malloc((n ? n : 1) * sizeof *copy) : NULL;
    if (copy) memcpy(copy, req, n * sizeof *copy);
    int single = waitany || testany;
    MPI_Status *st = statuses, own1;
    if (t && single && statuses == MPI_STATUS_IGNORE) st = &own1;
    else if (t && !single && statuses == MPI_STATUSES_IGNORE) st = malloc((n ? n : 1) * sizeof *st);
    int rc, f = 1;
    if (waitall) rc = waitall(n, req, st);
    else if (testall) rc = testall(n, req, &f, st);
    else if (waitany) rc = waitany(n, req, index, st);
    else if (testany) rc = testany(n, req, index, &f, st);
    else rc = some(n, req, outcount, indices, st);
    if (flag) *flag = f;
    if (t) {
        uint64_t now = xt_now();
        if (waitall || (testall && f)) complete_set(t, t0, now, copy, NULL, n, st, sizeof *st);
        else if ((waitany || (testany && f)) && *index != MPI_UNDEFINED)
            complete_set(t, t0, now, copy, index, 1, st, 0);
        else if (some && *outcount != MPI_UNDEFINED) complete_set(t, t0, now, copy, indices, *outcount, st, sizeof *st);
        if (!single && statuses == MPI_STATUSES_IGNORE) free(st);
        free(copy);
        xt_mpi_end(t, idx);
    }
    return rc;
}

int MPI_Waitall(int n, MPI_Request req[], MPI_Status st[])
{
    return multi(H_WAITALL, n, req, NULL, NULL, NULL, NULL, st, PMPI_Waitall, NULL, NULL, NULL, NULL);
}
int MPI_Testall(int n, MPI_Request req[], int *flag, MPI_Status st[])
{
    return multi(H_TESTALL, n, req, NULL, NULL, NULL, flag, st, NULL, PMPI_Testall, NULL, NULL, NULL);
}
int MPI_Waitany(int n, MPI_Request req[], int *index, MPI_Status *st)
{
    return multi(H_WAITANY, n, req, NULL, NULL, index, NULL, st, NULL, NULL, PMPI_Waitany, NULL, NULL);
}
int MPI_Testany(int n, MPI_Request req[], int *index, int *flag, MPI_Status *st)
{
    return multi(H_TESTANY, n, req, NULL, NULL, index, flag, st, NULL, NULL, NULL, PMPI_Testany, NULL);
}
int MPI_Waitsome(int n, MPI_Request req[], int *outcount, int indices[], MPI_Status st[])
{
    return multi(H_WAITSOME, n, req, outcount, indices, NULL, NULL, st, NULL, NULL, NULL, NULL, PMPI_Waitsome);
}
int MPI_Testsome(int n, MPI_Request req[], int *outcount, int indices[], MPI_Status st[])
{
    return multi(H_TESTSOME, n, req, outcount, indices, NULL, NULL, st, NULL, NULL, NULL, NULL, PMPI_Testsome);
}

int MPI_Cancel(MPI_Request *request)
{
    xt_thread *t;
    xt_mpi_begin(H_CANCEL, &t);
    int rc = PMPI_Cancel(request);
    if (t) xt_mpi_end(t, H_CANCEL);
    return rc;
}

int MPI_Start(MPI_Request *request)
{
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_START, &t);
    int rc = PMPI_Start(request);
    if (t) {
        if (rc == MPI_SUCCESS) start_one(t, t0, *request);
        xt_mpi_end(t, H_START);
    }
    return rc;
}

int MPI_Startall(int n, MPI_Request requests[])
{
    xt_thread *t;
    uint64_t t0 = xt_mpi_begin(H_STARTALL, &t);
    int rc = PMPI_Startall(n, requests);
    if (t) {
        if (rc == MPI_SUCCESS)
            for (int i = 0; i < n; i++) start_one(t, t0, requests[i]);
        xt_mpi_end(t, H_STARTALL);
    }
    return rc;
}

/* forget a freed request (persistent ones live until here); an active one completes unseen */
static void request_forget(MPI_Request r)
{
    uint64_t k = req_key(r);
    pthread_mutex_lock(&req_lock);
    for (size_t i = n_reqs; i-- > 0;)
        if (reqs[i].key == k) {
            reqs[i] = reqs[--n_reqs];
            break;
        }
    pthread_mutex_unlock(&req_lock);
}

int MPI_Request_free(MPI_Request *request)
{
    xt_thread *t;
    xt_mpi_begin(H_REQUEST_FREE, &t);
    MPI_Request r = *request;
    int rc = PMPI_Request_free(request);
    if (rc == MPI_SUCCESS && r != MPI_REQUEST_NULL) request_forget(r);
    if (t) xt_mpi_end(t, H_REQUEST_FREE);
    return rc;
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

/* ---------------------------------------------------------------- communicator management */
#define COMM_WRAP(IDX, NAME, CALL, PARENT, OUT)                                     \
    xt_thread *t;                                                                   \
    xt_mpi_begin(IDX, &t);                                                          \
    int rc = CALL;                                                                  \
    if (rc == MPI_SUCCESS && comm_keyval != MPI_KEYVAL_INVALID) {                   \
        if (t) t->in_mpi = 1;                                                       \
        comm_register(*(OUT), PARENT, NAME, 1);                                     \
    }                                                                               \
    if (t) xt_mpi_end(t, IDX);                                                      \
    return rc;

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    COMM_WRAP(H_COMM_DUP, "MPI_Comm_dup", PMPI_Comm_dup(comm, newcomm), comm, newcomm)
}
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    COMM_WRAP(H_COMM_SPLIT, "MPI_Comm_split", PMPI_Comm_split(comm, color, key, newcomm), comm, newcomm)
}
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    COMM_WRAP(H_COMM_CREATE, "MPI_Comm_create", PMPI_Comm_create(comm, group, newcomm), comm, newcomm)
}
int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    COMM_WRAP(H_COMM_SPLIT_TYPE, "MPI_Comm_split_type", PMPI_Comm_split_type(comm, split_type, key, info, newcomm),
              comm, newcomm)
}
int MPI_Comm_free(MPI_Comm *comm)
{
    xt_thread *t;
    xt_mpi_begin(H_COMM_FREE, &t);
    int rc = PMPI_Comm_free(comm);
    if (t) xt_mpi_end(t, H_COMM_FREE);
    return rc;
}

/* ---------------------------------------------------------------- clock offsets */
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

static void measure_offset(int slot)
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
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &comm_keyval, NULL);
    uint32_t *world = malloc(size * 4);
    for (int i = 0; i < size; i++) world[i] = (uint32_t)i;
    uint32_t id = xt_comm_define(0, 0, ELG_NO_ID, (uint32_t)size, world, "MPI_COMM_WORLD");
    comm_add_info(id, (uint32_t)size, world);
    PMPI_Comm_set_attr(MPI_COMM_WORLD, comm_keyval, (void *)(uintptr_t)id);
    uint32_t me = (uint32_t)rank;
    id = xt_comm_define(me, 0x80000000u, ELG_NO_ID, 1, &me, "MPI_COMM_SELF");
    comm_add_info(id, 1, &me);
    PMPI_Comm_set_attr(MPI_COMM_SELF, comm_keyval, (void *)(uintptr_t)id);
    free(world);
    PMPI_Comm_dup(MPI_COMM_WORLD, &xt_comm);
    measure_offset(0);
}

/* after a successful PMPI_Init*: set up, then record the init call [t0, now] */
static void init_done(int idx, xt_thread *t, uint64_t t0)
{
    if (xt_proc.mpi_active) return; /* a Fortran binding that went through our C wrapper */
    setup();
    if (t && xt_cfg.record_mpi && atomic_load(&xt_recording)) {
        xt_enter(t, t0, region_of(idx), ELG_NO_ID, ELG_NO_ID);
        xt_exit(t, xt_now(), region_of(idx));
    }
}

int MPI_Init(int *argc, char ***argv)
{
    xt_thread *t = xt_self();
    uint64_t t0 = xt_now();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) init_done(H_INIT, t, t0);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    xt_thread *t = xt_self();
    uint64_t t0 = xt_now();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) init_done(H_INIT_THREAD, t, t0);
    return rc;
}

/* ---------------------------------------------------------------- finalize: merge on rank 0 */
#define TAG_EVENTS 0x5854

static uint64_t fetch_remote(void *ctx, int proc, int thread, elg_event *out, uint64_t max)
{
    uint64_t *local_pos = ctx;
    if (proc == 0) {
        uint64_t got = xt_local_events(thread, local_pos[thread], out, max);
        local_pos[thread] += got;
        return got;
    }
    MPI_Status st;
    PMPI_Recv(out, (int)(max * sizeof(elg_event)), MPI_BYTE, proc, TAG_EVENTS, xt_comm, &st);
    int bytes = 0;
    PMPI_Get_count(&st, MPI_BYTE, &bytes);
    return (uint64_t)bytes / sizeof(elg_event);
}

static void send_events(void)
{
    elg_event *chunk = malloc((size_t)XT_CHUNK_EVENTS * sizeof(elg_event));
    int nt = xt_thread_count();
    for (int th = 0; th < nt; th++) {
        uint64_t total = xt_local_event_count(th), pos = 0;
        while (pos < total) {
            uint64_t want = total - pos < XT_CHUNK_EVENTS ? total - pos : XT_CHUNK_EVENTS;
            uint64_t got = xt_local_events(th, pos, chunk, want);
            if (got < want) memset(chunk + got, 0, (want - got) * sizeof(elg_event)); /* keep the count promised */
            PMPI_Send(chunk, (int)(want * sizeof(elg_event)), MPI_BYTE, 0, TAG_EVENTS, xt_comm);
            pos += want;
        }
    }
    free(chunk);
}

static void merge_and_write(void)
{
    int rank, size;
    PMPI_Comm_rank(xt_comm, &rank);
    PMPI_Comm_size(xt_comm, &size);
    xt_stop_recording();
    if (xt_cfg.resolve_names) xt_resolve_all();
    size_t len;
    char *ser = xt_serialize_local(&len);
    int ilen = (int)len;
    int *lens = rank == 0 ? malloc(size * sizeof(int)) : NULL;
    PMPI_Gather(&ilen, 1, MPI_INT, lens, 1, MPI_INT, 0, xt_comm);
    int *displs = NULL;
    char *all = NULL;
    if (rank == 0) {
        displs = malloc(size * sizeof(int));
        long total = 0;
        for (int i = 0; i < size; i++) displs[i] = (int)total, total += lens[i];
        all = malloc(total ? total : 1);
    }
    PMPI_Gatherv(ser, ilen, MPI_BYTE, all, lens, displs, MPI_BYTE, 0, xt_comm);
    if (rank == 0) {
        void **sers = malloc(size * sizeof(void *));
        size_t *slens = malloc(size * sizeof(size_t));
        for (int i = 0; i < size; i++) sers[i] = all + displs[i], slens[i] = (size_t)lens[i];
        uint64_t *pos = calloc(XT_MAX_THREADS, sizeof(uint64_t));
        xt_write_trace(xt_cfg.output, size, sers, slens, fetch_remote, pos, 1);
        free(pos), free(sers), free(slens), free(all), free(displs), free(lens);
    } else {
        send_events();
    }
    free(ser);
    xt_mark_written();
}

/* everything MPI_Finalize does before PMPI_Finalize (shared with the Fortran binding) */
static void finalize_prepare(void)
{
    xt_thread *t;
    xt_mpi_begin(H_FINALIZE, &t);
    if (xt_comm != MPI_COMM_NULL) {
        measure_offset(1);
        if (t) xt_mpi_end(t, H_FINALIZE);
        merge_and_write();
        PMPI_Barrier(xt_comm);
        PMPI_Comm_free(&xt_comm);
    } else if (t) {
        xt_mpi_end(t, H_FINALIZE);
    }
    xt_proc.mpi_active = 0;
}

int MPI_Finalize(void)
{
    finalize_prepare();
    return PMPI_Finalize();
}

/* ---------------------------------------------------------------- abnormal ends */
static void rank_path(char *out, size_t n)
{
    if (xt_proc.rank == 0) snprintf(out, n, "%s", xt_cfg.output);
    else snprintf(out, n, "%s.rank%u", xt_cfg.output, xt_proc.rank);
}

/* exit or crash while MPI is up: each rank writes what it has, marked incomplete */
static int mpi_exit_hook(int crashed)
{
    if (!xt_proc.mpi_active) return 0;
    char path[4200];
    rank_path(path, sizeof path);
    if (!crashed) xt_warn("rank %u exits without MPI_Finalize: writing its own incomplete trace %s", xt_proc.rank, path);
    xt_write_local_trace(path, 0);
    return 1;
}

static void abort_prepare(int errorcode)
{
    xt_thread *t;
    xt_mpi_begin(H_ABORT, &t);
    if (t) xt_mpi_end(t, H_ABORT);
    if (xt_proc.mpi_active) {
        char path[4200];
        rank_path(path, sizeof path);
        xt_warn("MPI_Abort(%d) on rank %u: writing the incomplete trace %s", errorcode, xt_proc.rank, path);
        xt_write_local_trace(path, 0);
    }
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    abort_prepare(errorcode);
    return PMPI_Abort(comm, errorcode);
}

__attribute__((constructor)) static void mpi_layer_init(void) { xt_mpi_exit_hook = mpi_exit_hook; }

/* ---------------------------------------------------------------- generated wrappers */
#include "mpi_wrappers.c"

#ifdef XT_FORTRAN_WRAPPERS
#include "mpi_fortran.c"
#endif

_Static_assert(H_COUNT + XT_GEN_COUNT <= XT_MAX_MPI_REGIONS, "raise XT_MAX_MPI_REGIONS");

static uint32_t region_of(int idx)
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
