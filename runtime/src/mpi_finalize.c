/* mpi_finalize.c - the end of an MPI run: at MPI_Finalize every rank sends its definitions and events
 * to rank 0, which writes the one trace file; MPI_Abort and an exit without MPI_Finalize leave one
 * incomplete trace per rank (<output>.<rank>.elg, merged by `expert-trace merge`). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_internal.h"

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
void xt_mpi_finalize_prepare(void)
{
    xt_thread *t;
    xt_mpi_begin(H_FINALIZE, &t);
    if (xt_comm != MPI_COMM_NULL) {
        xt_mpi_measure_offset(1);
        if (t) xt_mpi_end(t, H_FINALIZE);
        merge_and_write();
        /* rank 0 says whether the trace is written; then every rank's spool file has served */
        int ok = !atomic_load(&xt_write_failed);
        PMPI_Bcast(&ok, 1, MPI_INT, 0, xt_comm);
        if (ok) { /* and a trace of this rank's name left by an earlier run that crashed is stale now */
            char own[4200];
            xt_spool_detach();
            xt_own_output(own, sizeof own);
            if (strcmp(own, xt_cfg.output)) unlink(own);
        }
        PMPI_Comm_free(&xt_comm);
    } else if (t) {
        xt_mpi_end(t, H_FINALIZE);
    }
    xt_proc.mpi_active = 0;
}

int MPI_Finalize(void)
{
    xt_mpi_finalize_prepare();
    return PMPI_Finalize();
}

/* ---------------------------------------------------------------- abnormal ends */
/* Each rank writes its own trace, `<output>.<rank>.elg` (over its spool file), as processes do that
 * write alone; `expert-trace merge <output>` makes one trace of them. */
static void rank_path(char *out, size_t n) { xt_own_output(out, n); }

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

void xt_mpi_abort_prepare(int errorcode)
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
    xt_mpi_abort_prepare(errorcode);
    return PMPI_Abort(comm, errorcode);
}

__attribute__((constructor)) static void mpi_layer_init(void) { xt_mpi_exit_hook = mpi_exit_hook; }
