/*
 * mpi_props.c - one function per MPI performance property.
 *
 * Senders/roots and receivers get different amounts of work before the communication, so one
 * side waits for the other by a designed amount.  A balanced twin passes low == high.
 * Every function is recorded as a user region of its own name.
 */
#define ATS_WITH_MPI 1
#include <stdlib.h>

#include "ats.h"
#include "expert.h"

#define PROPERTY(name) EXPERT_REGION_ENTER(prop_region, name)
#define END_PROPERTY EXPERT_REGION_EXIT(prop_region)
#define COUNT 16 /* doubles per message: small enough to be sent eagerly */

void par_do_mpi_work(distr_func_t df, distr_t *dd, double sf, MPI_Comm comm)
{
    int me, sz;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &sz);
    do_work(df(me, sz, sf, dd));
}

static void rank_size(int *me, int *sz)
{
    MPI_Comm_rank(MPI_COMM_WORLD, me);
    MPI_Comm_size(MPI_COMM_WORLD, sz);
}

void late_sender(double low, double high, int r)
{
    PROPERTY("late_sender");
    int me, sz;
    double buf[COUNT] = {0};
    rank_size(&me, &sz);
    for (int i = 0; i < r; i++) {
        /* even ranks send to the next odd rank after `high` seconds; the receiver is ready after `low` */
        if (me % 2 == 0 && me + 1 < sz) {
            do_work(high);
            MPI_Send(buf, COUNT, MPI_DOUBLE, me + 1, 1, MPI_COMM_WORLD);
        } else if (me % 2 == 1) {
            do_work(low);
            MPI_Recv(buf, COUNT, MPI_DOUBLE, me - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    END_PROPERTY;
}

void late_receiver(double low, double high, int r)
{
    PROPERTY("late_receiver");
    int me, sz;
    double buf[COUNT] = {0};
    rank_size(&me, &sz);
    for (int i = 0; i < r; i++) {
        /* a synchronous send cannot complete before the receive is posted `high` seconds in */
        if (me % 2 == 0 && me + 1 < sz) {
            do_work(low);
            MPI_Ssend(buf, COUNT, MPI_DOUBLE, me + 1, 1, MPI_COMM_WORLD);
        } else if (me % 2 == 1) {
            do_work(high);
            MPI_Recv(buf, COUNT, MPI_DOUBLE, me - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    END_PROPERTY;
}

void wrong_order(double work, int r, int balanced)
{
    PROPERTY("wrong_order");
    int me, sz;
    double a[COUNT] = {0}, b[COUNT] = {0};
    rank_size(&me, &sz);
    for (int i = 0; i < r; i++) {
        if (me % 2 == 0 && me + 1 < sz) {
            MPI_Send(a, COUNT, MPI_DOUBLE, me + 1, 1, MPI_COMM_WORLD); /* first message: at once */
            do_work(work);
            MPI_Send(b, COUNT, MPI_DOUBLE, me + 1, 2, MPI_COMM_WORLD); /* second: `work` later */
        } else if (me % 2 == 1) {
            if (balanced) { /* the twin receives in send order, and is busy while the second is due */
                MPI_Recv(a, COUNT, MPI_DOUBLE, me - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                do_work(work);
                MPI_Recv(b, COUNT, MPI_DOUBLE, me - 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else { /* waits for the late second message while the first one is already there */
                MPI_Recv(b, COUNT, MPI_DOUBLE, me - 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Recv(a, COUNT, MPI_DOUBLE, me - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                do_work(work);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    END_PROPERTY;
}

void imbalance_at_mpi_barrier(distr_func_t df, distr_t *dd, int r)
{
    PROPERTY("imbalance_at_mpi_barrier");
    for (int i = 0; i < r; i++) {
        par_do_mpi_work(df, dd, 1.0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    END_PROPERTY;
}

void imbalance_at_mpi_alltoall(distr_func_t df, distr_t *dd, int r)
{
    PROPERTY("imbalance_at_mpi_alltoall");
    int me, sz;
    rank_size(&me, &sz);
    double *s = calloc((size_t)sz * COUNT, sizeof *s), *d = calloc((size_t)sz * COUNT, sizeof *d);
    for (int i = 0; i < r; i++) {
        par_do_mpi_work(df, dd, 1.0, MPI_COMM_WORLD);
        MPI_Alltoall(s, COUNT, MPI_DOUBLE, d, COUNT, MPI_DOUBLE, MPI_COMM_WORLD);
    }
    free(s), free(d);
    END_PROPERTY;
}

/* root 0 works `root_work`, everybody else `other_work`, then the one-to-all / all-to-one call */
enum coll { BCAST, SCATTER, SCATTERV, REDUCE, GATHER, GATHERV };

static void rooted(enum coll op, double root_work, double other_work, int r)
{
    int me, sz;
    rank_size(&me, &sz);
    double *s = calloc((size_t)sz * COUNT, sizeof *s), *d = calloc((size_t)sz * COUNT, sizeof *d);
    int *counts = malloc((size_t)sz * sizeof *counts), *displs = malloc((size_t)sz * sizeof *displs);
    for (int k = 0; k < sz; k++) counts[k] = COUNT, displs[k] = k * COUNT;
    for (int i = 0; i < r; i++) {
        do_work(me == 0 ? root_work : other_work);
        switch (op) {
        case BCAST: MPI_Bcast(s, COUNT, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
        case SCATTER: MPI_Scatter(s, COUNT, MPI_DOUBLE, d, COUNT, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
        case SCATTERV:
            MPI_Scatterv(s, counts, displs, MPI_DOUBLE, d, COUNT, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            break;
        case REDUCE: MPI_Reduce(s, d, COUNT, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); break;
        case GATHER: MPI_Gather(s, COUNT, MPI_DOUBLE, d, COUNT, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
        case GATHERV:
            MPI_Gatherv(s, COUNT, MPI_DOUBLE, d, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            break;
        }
        MPI_Barrier(MPI_COMM_WORLD); /* every repetition starts together */
    }
    free(s), free(d), free(counts), free(displs);
}

/* late root: the root works `high`, the others `low` */
void late_broadcast(double low, double high, int r) { PROPERTY("late_broadcast"); rooted(BCAST, high, low, r); END_PROPERTY; }
void late_scatter(double low, double high, int r) { PROPERTY("late_scatter"); rooted(SCATTER, high, low, r); END_PROPERTY; }
void late_scatterv(double low, double high, int r) { PROPERTY("late_scatterv"); rooted(SCATTERV, high, low, r); END_PROPERTY; }
/* early root: the root works `low`, the others `high` */
void early_reduce(double low, double high, int r) { PROPERTY("early_reduce"); rooted(REDUCE, low, high, r); END_PROPERTY; }
void early_gather(double low, double high, int r) { PROPERTY("early_gather"); rooted(GATHER, low, high, r); END_PROPERTY; }
void early_gatherv(double low, double high, int r) { PROPERTY("early_gatherv"); rooted(GATHERV, low, high, r); END_PROPERTY; }

/* ---------------------------------------------------------------- MPI one-sided (RMA) */
/* one window of COUNT doubles per rank over MPI_COMM_WORLD; created and freed around each property, outside its
   repetitions (the creation waits for the last rank, which the repetitions do not design) */
static MPI_Win rma_window(double **base)
{
    MPI_Win win;
    MPI_Win_allocate(COUNT * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, base, &win);
    return win;
}

/* the pairs of the active-target properties: even rank me with me + 1; the group of the partner in `peer`, or -1
   (and no group) for the last rank of an odd size */
static int rma_partner(int me, int sz, MPI_Group *peer)
{
    int partner = me % 2 == 0 ? me + 1 : me - 1;
    if (partner >= sz) return -1;
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &partner, peer);
    MPI_Group_free(&world);
    return partner;
}

/* late fence epoch: rank 0 works `high`, every other rank `low`, then the fence that closes the last epoch and
   opens the next, in which each rank puts into the next rank's window; one more fence closes the last epoch
   (one fence per repetition: the closing fences add no start-up skew of their own) */
void rma_late_fence(double low, double high, int r)
{
    PROPERTY("rma_late_fence");
    int me, sz;
    double *base, v[COUNT] = {0};
    rank_size(&me, &sz);
    MPI_Win win = rma_window(&base);
    for (int i = 0; i < r; i++) {
        do_work(me == 0 ? high : low);
        MPI_Win_fence(0, win);
        MPI_Put(v, COUNT, MPI_DOUBLE, (me + 1) % sz, 0, COUNT, MPI_DOUBLE, win);
    }
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    END_PROPERTY;
}

/* late post: in each pair the even rank (target) works `high` before MPI_Win_post, the odd rank (origin) `low`
   before MPI_Win_start, a put and MPI_Win_complete; the origin cannot finish the epoch before the post */
void rma_late_post(double low, double high, int r)
{
    PROPERTY("rma_late_post");
    int me, sz;
    double *base, v[COUNT] = {0};
    rank_size(&me, &sz);
    MPI_Win win = rma_window(&base);
    MPI_Group peer;
    int partner = rma_partner(me, sz, &peer);
    int active = partner >= 0;
    for (int i = 0; i < r; i++) {
        if (active && me % 2 == 0) {
            do_work(high);
            MPI_Win_post(peer, 0, win);
            MPI_Win_wait(win);
        } else if (active) {
            do_work(low);
            MPI_Win_start(peer, 0, win);
            MPI_Put(v, COUNT, MPI_DOUBLE, partner, 0, COUNT, MPI_DOUBLE, win);
            MPI_Win_complete(win);
        } else {
            do_work(high); /* the rank without a partner (odd size) arrives at the barrier with the pairs */
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (active) MPI_Group_free(&peer);
    MPI_Win_free(&win);
    END_PROPERTY;
}

/* late complete: in each pair the even rank (target) posts first, works `low` and waits; the odd rank (origin)
   works `low`, starts (the post is long there: no late post), puts, then works `high - low` inside the epoch
   before MPI_Win_complete: the target waits that long in MPI_Win_wait after the last transfer (Early Wait, all of
   it Late Complete) */
void rma_late_complete(double low, double high, int r)
{
    PROPERTY("rma_late_complete");
    int me, sz;
    double *base, v[COUNT] = {0};
    rank_size(&me, &sz);
    MPI_Win win = rma_window(&base);
    MPI_Group peer;
    int partner = rma_partner(me, sz, &peer);
    int active = partner >= 0;
    for (int i = 0; i < r; i++) {
        if (active && me % 2 == 0) {
            MPI_Win_post(peer, 0, win);
            do_work(low);
            MPI_Win_wait(win);
        } else if (active) {
            do_work(low);
            MPI_Win_start(peer, 0, win);
            MPI_Put(v, COUNT, MPI_DOUBLE, partner, 0, COUNT, MPI_DOUBLE, win);
            do_work(high - low);
            MPI_Win_complete(win);
        } else {
            do_work(high); /* the rank without a partner (odd size) arrives at the barrier with the pairs */
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (active) MPI_Group_free(&peer);
    MPI_Win_free(&win);
    END_PROPERTY;
}

/* lock contention: rank 1 takes an exclusive lock on rank 0's window at once and holds it `high` seconds; rank 0
   works `low`, then wants the same lock (on its own window) for a put: it waits `high - low`.  Other ranks work
   `high`, as long as the pair, and meet them at the barrier */
void rma_lock_contention(double low, double high, int r)
{
    PROPERTY("rma_lock_contention");
    int me, sz;
    double *base, v[COUNT] = {0};
    rank_size(&me, &sz);
    MPI_Win win = rma_window(&base);
    for (int i = 0; i < r; i++) {
        if (me == 1) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Put(v, COUNT, MPI_DOUBLE, 0, 0, COUNT, MPI_DOUBLE, win);
            MPI_Win_flush(0, win); /* the lock is held from here on, whatever the library defers */
            do_work(high);
            MPI_Win_unlock(0, win);
        } else if (me == 0) {
            do_work(low);
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Put(v, COUNT, MPI_DOUBLE, 0, 0, COUNT, MPI_DOUBLE, win);
            MPI_Win_unlock(0, win);
        } else {
            do_work(high);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
    END_PROPERTY;
}
