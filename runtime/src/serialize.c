/* serialize.c - this process's definitions and facts as one byte string ("XTS1"), which the writer
 * reads back (writer.c: deserialize) locally or after the MPI gather on rank 0.  Also used on the
 * crash path: memory comes from xt_mem_* (sigsafe.c). */
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

#include "xt.h"

typedef struct {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 256;
        b->p = xt_mem_realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}
static void sb_u32(sbuf *b, uint32_t v) { sb_put(b, &v, 4); }
static void sb_u64(sbuf *b, uint64_t v) { sb_put(b, &v, 8); }
static void sb_f64(sbuf *b, double v) { sb_put(b, &v, 8); }
static void sb_str(sbuf *b, const char *s)
{
    uint32_t n = (uint32_t)strlen(s ? s : "");
    sb_u32(b, n);
    sb_put(b, s ? s : "", n);
}

void *xt_serialize_local(size_t *len)
{
    sbuf b = {0};
    sb_u32(&b, 0x31535458u); /* "XTS1" */
    sb_u32(&b, xt_proc.rank);
    int nt = xt_thread_count();
    sb_u32(&b, (uint32_t)nt);
    sb_f64(&b, xt_ticks_per_second());
    sb_u64(&b, xt_tick0());
    sb_u32(&b, (uint32_t)xt_proc.n_offsets);
    for (int i = 0; i < 2; i++) {
        sb_f64(&b, xt_proc.offset_time[i]);
        sb_f64(&b, xt_proc.offset_value[i]);
    }
    char host[256] = "localhost";
    gethostname(host, sizeof host);
    host[255] = 0;
    sb_str(&b, host);
    sb_str(&b, xt_proc.mpi_library);
    sb_str(&b, xt_use_tsc ? "rdtsc" : "CLOCK_MONOTONIC");
    uint32_t n_regions = xt_region_count();
    sb_u32(&b, n_regions);
    for (uint32_t i = 0; i < n_regions; i++) {
        const xt_region *r = xt_region_at(i);
        sb_str(&b, r->name);
        sb_str(&b, r->file);
        sb_u32(&b, r->line);
        sb_u32(&b, r->end_line);
        uint8_t pr[2] = {r->paradigm, r->role};
        sb_put(&b, pr, 2);
    }
    uint32_t n_comms = xt_comm_count();
    sb_u32(&b, n_comms);
    for (uint32_t i = 0; i < n_comms; i++) {
        const xt_comm_def *c = xt_comm_at(i);
        sb_u32(&b, c->leader);
        sb_u32(&b, c->seq);
        sb_u32(&b, c->parent);
        sb_u32(&b, c->size);
        sb_put(&b, c->members, c->size * 4);
        sb_str(&b, c->name);
    }
    uint32_t nl = xt_lock_count();
    sb_u32(&b, nl);
    for (uint32_t i = 0; i < nl; i++) {
        uint8_t kind;
        const char *name = xt_lock_name(i, &kind);
        sb_put(&b, &kind, 1);
        sb_str(&b, name);
    }
    /* hardware-counter metrics (papi.c) this process records: COUNTER events use positions in this list */
    uint32_t nm = xt_metric_count();
    sb_u32(&b, nm);
    for (uint32_t i = 0; i < nm; i++) sb_str(&b, xt_metric_name(i));
    for (int i = 0; i < nt; i++) sb_u64(&b, xt_local_event_count(i));
    /* MPI one-sided windows and the groups their synchronisations name (format 2.3) */
    uint32_t nw = xt_win_count();
    sb_u32(&b, nw);
    for (uint32_t i = 0; i < nw; i++) {
        const xt_win_def *w = xt_win_at(i);
        sb_u32(&b, w->comm);
        sb_u32(&b, w->seq);
    }
    uint32_t ng = xt_rma_group_count();
    sb_u32(&b, ng);
    for (uint32_t i = 0; i < ng; i++) {
        uint32_t size;
        const uint32_t *members = xt_rma_group_at(i, &size);
        sb_u32(&b, size);
        sb_put(&b, members, size * 4);
    }
    *len = b.len;
    return b.p;
}
