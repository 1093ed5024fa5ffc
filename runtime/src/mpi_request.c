/* mpi_request.c - request tracking: what each live request is (send, receive, persistent, non-blocking
 * collective), posting persistent requests at MPI_Start, and the completions recorded by the Wait/Test
 * family, Cancel and Request_free. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

static pthread_mutex_t req_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t next_request = 1;

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
    uint64_t added;     /* when the entry was made: a completion call looks only at older ones */
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
    uint64_t now = xt_now();
    pthread_mutex_lock(&req_lock);
    if (n_reqs == cap_reqs) {
        cap_reqs = cap_reqs ? cap_reqs * 2 : 64;
        reqs = realloc(reqs, cap_reqs * sizeof *reqs);
    }
    reqs[n_reqs] = *q;
    reqs[n_reqs++].added = now;
    pthread_mutex_unlock(&req_lock);
}

uint64_t xt_request_new(MPI_Request r, int kind, MPI_Comm comm, int peer, int tag, int unused)
{
    (void)unused;
    uint64_t id = atomic_fetch_add(&next_request, 1);
    req_t q = {.key = req_key(r), .id = id, .comm = comm, .kind = kind, .peer = peer, .tag = tag};
    request_add(&q);
    return id;
}

/* Send_init / Recv_init and friends: nothing is recorded until MPI_Start */
void xt_request_persistent(MPI_Request r, int kind, MPI_Comm comm, int peer, int tag, uint64_t bytes,
                                  uint8_t flags)
{
    req_t q = {.key = req_key(r), .comm = comm, .kind = kind, .peer = peer, .tag = tag, .persistent = 1,
               .send_flags = flags, .bytes = bytes};
    request_add(&q);
}

/* a non-blocking collective: its instance is recorded by the call that completes it */
void xt_request_coll(MPI_Request r, int region, MPI_Comm comm, int root, uint64_t sent, uint64_t recvd)
{
    req_t q = {.key = req_key(r), .id = atomic_fetch_add(&next_request, 1), .comm = comm, .kind = XT_REQ_COLL,
               .region = region, .root = root, .sent = sent, .recvd = recvd};
    request_add(&q);
}

/* Take the request a completion call that began at `since` completed: non-persistent entries leave
 * the table, persistent ones become inactive.  Only entries made before `since` count: with several
 * threads (MPI_THREAD_MULTIPLE) the MPI library may free the handle inside this call and hand the same
 * value to another thread's new request before this call returns. */
static int request_take(MPI_Request r, uint64_t since, req_t *out)
{
    uint64_t k = req_key(r);
    size_t best = n_reqs;
    pthread_mutex_lock(&req_lock);
    for (size_t i = 0; i < n_reqs; i++) /* live requests are few: the newest entry made before `since` */
        if (reqs[i].key == k && reqs[i].added <= since && (best == n_reqs || reqs[i].added >= reqs[best].added))
            best = i;
    int found = best < n_reqs;
    if (found) {
        *out = reqs[best];
        if (reqs[best].persistent) reqs[best].id = 0;
        else reqs[best] = reqs[--n_reqs];
    }
    pthread_mutex_unlock(&req_lock);
    return found && out->id != 0;
}

/* MPI_Start of a persistent request: the message is posted now, under a fresh request id */
void xt_request_start(xt_thread *t, uint64_t time, MPI_Request r)
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
void xt_complete_set(xt_thread *t, uint64_t t0, uint64_t now, const MPI_Request *handles, const int *which,
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
        if (r != MPI_REQUEST_NULL && request_take(r, t0, &found[n_found])) slot[n_found++] = k;
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
        xt_enter(t, first ? t0 : now, xt_mpi_region(q->region), ELG_NO_ID, ELG_NO_ID);
        first = 0;
        uint32_t cid = xt_comm_id(q->comm);
        uint32_t groot = q->root == MPI_PROC_NULL ? ELG_NO_ID : xt_global_rank(cid, q->root);
        xt_leave(t, now, ELG_MPI_COLLEXIT, xt_mpi_region(q->region), cid, groot, q->sent, q->recvd);
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
    xt_complete_set(t, t0, xt_now(), &r, NULL, 1, status, 0);
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
    if (*flag) xt_complete_set(t, t0, xt_now(), &r, NULL, 1, status, 0);
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
        if (waitall || (testall && f)) xt_complete_set(t, t0, now, copy, NULL, n, st, sizeof *st);
        else if ((waitany || (testany && f)) && *index != MPI_UNDEFINED)
            xt_complete_set(t, t0, now, copy, index, 1, st, 0);
        else if (some && *outcount != MPI_UNDEFINED) xt_complete_set(t, t0, now, copy, indices, *outcount, st, sizeof *st);
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
        if (rc == MPI_SUCCESS) xt_request_start(t, t0, *request);
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
            for (int i = 0; i < n; i++) xt_request_start(t, t0, requests[i]);
        xt_mpi_end(t, H_STARTALL);
    }
    return rc;
}

/* forget a freed request (persistent ones live until here); an active one completes unseen */
void xt_request_forget(MPI_Request r)
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
    if (rc == MPI_SUCCESS && r != MPI_REQUEST_NULL) xt_request_forget(r);
    if (t) xt_mpi_end(t, H_REQUEST_FREE);
    return rc;
}
