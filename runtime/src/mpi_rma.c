/* mpi_rma.c - MPI one-sided communication (format 2.3): window identities, window-communicator ranks as
 * global ranks, the groups that post and start name, and the MPI_RMA_* records the generated wrappers write
 * (tools/mpi_table.py, kinds rma: and win:).
 *
 * A window is named by the communicator it was created over and its creation count on that communicator:
 * every process of the communicator creates its windows on it in the same order (the calls are collective),
 * so the writer gives the same window the same id on every process (writer.c).  What the records need at
 * run time (our id, the members as global ranks, the groups of the open epochs) hangs on the window as an
 * MPI attribute, freed with the window. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

typedef struct {
    uint32_t id;               /* local window id (xt_win_define) */
    uint32_t size;             /* processes of the window */
    uint32_t *members;         /* window rank -> global rank */
    uint32_t access, exposure; /* group ids of the access epoch Win_start opened, the exposure epoch of Win_post */
} win_info;

static int win_keyval = MPI_KEYVAL_INVALID;
static uint32_t *comm_wins; /* windows created so far, per local communicator id */
static uint32_t n_comm_wins;
static pthread_mutex_t win_lock = PTHREAD_MUTEX_INITIALIZER;

static int win_info_free(MPI_Win w, int keyval, void *value, void *extra)
{
    (void)w, (void)keyval, (void)extra;
    win_info *wi = value;
    free(wi->members);
    free(wi);
    return MPI_SUCCESS;
}

/* global ranks of an MPI group, in group order (malloc'ed) */
static uint32_t *global_ranks(MPI_Group g, uint32_t *size)
{
    MPI_Group wg;
    int n = 0;
    PMPI_Group_size(g, &n);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *loc = malloc((n ? n : 1) * sizeof(int)), *glob = malloc((n ? n : 1) * sizeof(int));
    for (int i = 0; i < n; i++) loc[i] = i;
    PMPI_Group_translate_ranks(g, n, loc, wg, glob);
    uint32_t *out = malloc((n ? n : 1) * 4);
    for (int i = 0; i < n; i++) out[i] = glob[i] == MPI_UNDEFINED ? ELG_NO_ID : (uint32_t)glob[i];
    free(loc), free(glob);
    PMPI_Group_free(&wg);
    *size = (uint32_t)n;
    return out;
}

/* Define a window: over `comm`, or (a window made while nothing was recorded) over the processes of its
 * group, as this process's own window. */
static win_info *win_new(MPI_Win w, MPI_Comm comm)
{
    win_info *wi = calloc(1, sizeof *wi);
    wi->access = wi->exposure = ELG_NO_ID;
    uint32_t cid = ELG_NO_ID, seq = 0;
    if (comm != MPI_COMM_NULL) {
        cid = xt_comm_id(comm);
        int n = 0;
        PMPI_Comm_size(comm, &n);
        wi->size = (uint32_t)n;
        wi->members = malloc((n ? n : 1) * 4);
        for (int i = 0; i < n; i++) wi->members[i] = xt_global_rank(cid, i);
    } else {
        MPI_Group g;
        PMPI_Win_get_group(w, &g);
        wi->members = global_ranks(g, &wi->size);
        PMPI_Group_free(&g);
    }
    pthread_mutex_lock(&win_lock);
    if (win_keyval == MPI_KEYVAL_INVALID) PMPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_info_free, &win_keyval, NULL);
    if (cid != ELG_NO_ID) {
        if (cid >= n_comm_wins) {
            uint32_t n = n_comm_wins ? n_comm_wins : 16;
            while (n <= cid) n *= 2;
            comm_wins = realloc(comm_wins, n * sizeof *comm_wins);
            memset(comm_wins + n_comm_wins, 0, (n - n_comm_wins) * sizeof *comm_wins);
            n_comm_wins = n;
        }
        seq = comm_wins[cid]++;
    }
    pthread_mutex_unlock(&win_lock);
    wi->id = xt_win_define(cid, seq);
    PMPI_Win_set_attr(w, win_keyval, wi);
    return wi;
}

static win_info *win_of(MPI_Win w)
{
    if (win_keyval != MPI_KEYVAL_INVALID) {
        void *v;
        int flag = 0;
        PMPI_Win_get_attr(w, win_keyval, &v, &flag);
        if (flag) return v;
    }
    return win_new(w, MPI_COMM_NULL);
}

uint32_t xt_win_created(MPI_Win w, MPI_Comm comm)
{
    if (w == MPI_WIN_NULL) return ELG_NO_ID;
    return win_new(w, comm)->id;
}

uint32_t xt_win_id(MPI_Win w)
{
    return w == MPI_WIN_NULL ? ELG_NO_ID : win_of(w)->id;
}

void xt_rma_sync_id(xt_thread *t, uint32_t win, uint8_t kind)
{
    if (win != ELG_NO_ID) xt_record(t, xt_now(), ELG_MPI_RMA_SYNC, 0, win, ELG_NO_ID, kind, 0, 0);
}

static uint32_t target_of(const win_info *wi, int rank)
{
    return rank >= 0 && (uint32_t)rank < wi->size ? wi->members[rank] : ELG_NO_ID;
}

void xt_rma_transfer(xt_thread *t, uint8_t type, MPI_Win win, int target, uint8_t op, uint64_t sent, uint64_t recvd,
                     uint8_t flags)
{
    if (target == MPI_PROC_NULL || win == MPI_WIN_NULL) return; /* no transfer, as a send to MPI_PROC_NULL */
    const win_info *wi = win_of(win);
    xt_record(t, xt_now(), type, flags, wi->id, target_of(wi, target), op, sent, recvd);
}

void xt_rma_sync(xt_thread *t, MPI_Win win, uint8_t kind, MPI_Group group, int target, uint8_t flags)
{
    if (win == MPI_WIN_NULL) return;
    win_info *wi = win_of(win);
    uint32_t b = ELG_NO_ID;
    if (kind == ELG_RMA_SYNC_POST || kind == ELG_RMA_SYNC_START) {
        uint32_t n, *members = global_ranks(group, &n);
        b = xt_rma_group_define(n, members);
        free(members);
        if (kind == ELG_RMA_SYNC_POST) wi->exposure = b;
        else wi->access = b;
    } else if (kind == ELG_RMA_SYNC_COMPLETE) {
        b = wi->access;
    } else if (kind == ELG_RMA_SYNC_WAIT || kind == ELG_RMA_SYNC_TEST) {
        b = wi->exposure;
    } else if (target != XT_ALL_TARGETS) {
        b = target_of(wi, target);
    }
    xt_record(t, xt_now(), ELG_MPI_RMA_SYNC, flags, wi->id, b, kind, 0, 0);
}
