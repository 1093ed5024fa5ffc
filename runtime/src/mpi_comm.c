/* mpi_comm.c - communicators and groups: a process-independent identity for every communicator, its
 * members as global ranks, comm-local to global rank translation, and the Comm_* wrappers.  (The Group
 * calls need no bookkeeping: their wrappers are generated.) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

MPI_Comm xt_comm = MPI_COMM_NULL;
int xt_comm_keyval = MPI_KEYVAL_INVALID;
static uint32_t created_seq; /* communicators this rank created as leader */

/* per local comm id: members as global ranks (index = comm-local rank) */
typedef struct {
    uint32_t size;
    uint32_t *members;
} comm_info;
static comm_info *cinfo;
static uint32_t n_cinfo, cap_cinfo;
static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;

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
uint32_t xt_comm_register(MPI_Comm c, MPI_Comm parent, const char *name, int collective)
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
    if (parent != MPI_COMM_NULL && xt_comm_keyval != MPI_KEYVAL_INVALID) {
        void *v;
        int flag = 0;
        PMPI_Comm_get_attr(parent, xt_comm_keyval, &v, &flag);
        if (flag) parent_id = (uint32_t)(uintptr_t)v;
    }
    uint32_t id = xt_comm_define(leader, seq, parent_id, size, members, name);
    comm_add_info(id, size, members);
    free(members);
    PMPI_Comm_set_attr(c, xt_comm_keyval, (void *)(uintptr_t)id);
    return id;
}

uint32_t xt_comm_id(MPI_Comm c)
{
    if (c == MPI_COMM_NULL || xt_comm_keyval == MPI_KEYVAL_INVALID) return ELG_NO_ID;
    void *v;
    int flag = 0;
    PMPI_Comm_get_attr(c, xt_comm_keyval, &v, &flag);
    if (flag) return (uint32_t)(uintptr_t)v;
    return xt_comm_register(c, MPI_COMM_NULL, "unknown", 0); /* made by a call we do not wrap */
}

/* comm-local rank -> global rank */
uint32_t xt_global_rank(uint32_t cid, int local)
{
    if (local < 0) return ELG_NO_ID;
    if (cid < n_cinfo && (uint32_t)local < cinfo[cid].size) return cinfo[cid].members[local];
    return ELG_NO_ID;
}

void xt_comm_geometry(MPI_Comm c, int *n, int *me)
{
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    PMPI_Comm_size(c, n);
    PMPI_Comm_rank(c, me);
}


void xt_mpi_comms_setup(int rank, int size)
{
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &xt_comm_keyval, NULL);
    uint32_t *world = malloc(size * 4);
    for (int i = 0; i < size; i++) world[i] = (uint32_t)i;
    uint32_t id = xt_comm_define(0, 0, ELG_NO_ID, (uint32_t)size, world, "MPI_COMM_WORLD");
    comm_add_info(id, (uint32_t)size, world);
    PMPI_Comm_set_attr(MPI_COMM_WORLD, xt_comm_keyval, (void *)(uintptr_t)id);
    uint32_t me = (uint32_t)rank;
    id = xt_comm_define(me, 0x80000000u, ELG_NO_ID, 1, &me, "MPI_COMM_SELF");
    comm_add_info(id, 1, &me);
    PMPI_Comm_set_attr(MPI_COMM_SELF, xt_comm_keyval, (void *)(uintptr_t)id);
    free(world);
    PMPI_Comm_dup(MPI_COMM_WORLD, &xt_comm);
}

/* ---------------------------------------------------------------- communicator management */
#define COMM_WRAP(IDX, NAME, CALL, PARENT, OUT)                                     \
    xt_thread *t;                                                                   \
    xt_mpi_begin(IDX, &t);                                                          \
    int rc = CALL;                                                                  \
    if (rc == MPI_SUCCESS && xt_comm_keyval != MPI_KEYVAL_INVALID) {                   \
        if (t) t->in_mpi = 1;                                                       \
        xt_comm_register(*(OUT), PARENT, NAME, 1);                                     \
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
