/* spool.c - the spool file: this process's trace on disk while the program runs.
 *
 * A full buffer is written to the spool as an EVENTS block of the thread's location, preceded by a
 * DEFINITIONS block with what was defined since the last one (regions, communicators, locks, metrics,
 * locations; a fresh CLOCK estimate and the `complete` attribute each time: later records win).  The
 * file is a valid, unfinished .elg trace at every block boundary, in local ids (one process: region,
 * communicator, lock and metric ids are this process's own; location id = thread number).  So when
 * nothing can run in the process any more (SIGKILL, as MPICH's launcher kills the other ranks), what
 * was flushed is readable as it stands (`expert-trace info --salvage`) and `expert-trace merge` takes
 * it up with the other processes' files.
 *
 * The spool is created at the first flush, at the path this process would write its own trace to
 * (xt_own_output: the output, or `<output>.<rank>.elg` / `<output>.<pid>.elg`).  A trace written at
 * the end replaces it (the writer writes a temporary file and renames it over the spool); a merge at
 * MPI_Finalize unlinks it first (xt_spool_detach) and keeps reading it through the descriptor.  Where
 * the path cannot be created, or is no regular file (-o /dev/null, a link), the spool is an unlinked temporary
 * file in $TMPDIR, as before.
 *
 * Appends are serialised by one lock; they happen at buffer-full time only. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xt.h"

static pthread_mutex_t spool_lock = PTHREAD_MUTEX_INITIALIZER;
static int spool_fd = -1, spool_failed, spool_named;
static uint64_t spool_pos;
static char spool_path[4200];
/* what earlier DEFINITIONS blocks hold already */
static uint32_t done_regions, done_comms, done_locks, done_metrics, done_threads, done_offsets, next_string;
static uint32_t done_wins, done_rgroups;
static int done_system;

typedef struct {
    char *p;
    size_t len, cap;
    uint32_t count;
} dbuf;

static void dput(dbuf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 4096;
        b->p = xt_mem_realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void record(dbuf *b, uint16_t type, const void *body, uint32_t len)
{
    uint16_t h[2] = {type, 0};
    dput(b, h, 4);
    dput(b, &len, 4);
    dput(b, body, len);
    b->count++;
}

/* a STRING record with a fresh id (a name may be written twice; the reader keys strings by id) */
static uint32_t string(dbuf *b, const char *s)
{
    uint32_t id = next_string++, n = (uint32_t)strlen(s ? s : "");
    uint16_t h[2] = {ELG_DEF_STRING, 0};
    uint32_t len = 4 + n;
    dput(b, h, 4);
    dput(b, &len, 4);
    dput(b, &id, 4);
    dput(b, s ? s : "", n);
    b->count++;
    return id;
}

static void attribute(dbuf *b, const char *key, const char *value)
{
    uint32_t k = string(b, key), v = string(b, value);
    uint32_t body[2] = {k, v};
    record(b, ELG_DEF_ATTRIBUTE, body, 8);
}

static uint32_t process_id(void)
{
    if (xt_proc.mpi_active || xt_proc.size > 1) return xt_proc.rank;
    return xt_proc.launch_rank > 0 ? (uint32_t)xt_proc.launch_rank : 0;
}

static double ticks_per_second_so_far(void)
{
    if (!xt_use_tsc) return 1e9;
    double dt = xt_mono_seconds() - xt_mono0();
    return dt > 0 ? (double)(xt_now() - xt_tick0()) / dt : 1e9;
}

/* the definitions made since the last block (call with spool_lock held) */
static void definitions_since_last(dbuf *b)
{
    uint32_t proc = process_id();
    if (!done_system) {
        char host[256] = "localhost", name[64];
        gethostname(host, sizeof host);
        host[255] = 0;
        uint32_t machine[2] = {0, string(b, "machine")};
        record(b, ELG_DEF_MACHINE, machine, 8);
        uint32_t node[3] = {0, 0, string(b, host)};
        record(b, ELG_DEF_NODE, node, 12);
        snprintf(name, sizeof name, "rank %u", proc);
        uint32_t pb[3] = {proc, 0, string(b, name)};
        record(b, ELG_DEF_PROCESS, pb, 12);
        attribute(b, "creator", "expert-run (C tracing runtime)");
        attribute(b, "clock", xt_use_tsc ? "rdtsc" : "CLOCK_MONOTONIC");
        char cmd[4096];
        xt_command_line(cmd, sizeof cmd);
        attribute(b, "command", cmd);
        char omp[512];
        if (xt_openmp_runtime(omp, sizeof omp)) attribute(b, "openmp_runtime", omp);
        done_system = 1;
    }
    int defs_locked = xt_defs_lock();
    uint32_t nr = xt_region_count();
    for (uint32_t i = done_regions; i < nr; i++) {
        const xt_region *r = xt_region_at(i);
        uint32_t file = ELG_NO_ID;
        if (r->file && r->file[0]) {
            uint32_t fb[2] = {i, string(b, r->file)}; /* one SOURCE_FILE per region: ids need only be unique */
            record(b, ELG_DEF_SOURCE_FILE, fb, 8);
            file = i;
        }
        uint32_t rb[5] = {i, string(b, r->name), file, r->line, r->end_line};
        uint8_t tail[4] = {r->paradigm, r->role, 0, 0};
        char body[24];
        memcpy(body, rb, 20);
        memcpy(body + 20, tail, 4);
        record(b, ELG_DEF_REGION, body, 24);
    }
    done_regions = nr;
    uint32_t nc = xt_comm_count();
    for (uint32_t i = done_comms; i < nc; i++) {
        const xt_comm_def *c = xt_comm_at(i);
        dbuf g = {0};
        uint32_t gh[2] = {i, c->size}; /* group id = communicator id: one group each */
        dput(&g, gh, 8);
        dput(&g, c->members, (size_t)c->size * 4);
        record(b, ELG_DEF_GROUP, g.p, (uint32_t)g.len);
        xt_mem_free(g.p);
        uint32_t cb[4] = {i, i, string(b, c->name), c->parent < i ? c->parent : ELG_NO_ID};
        record(b, ELG_DEF_COMM, cb, 16);
    }
    done_comms = nc;
    uint32_t nw = xt_win_count(); /* windows and RMA groups (2.3), in local ids like the rest */
    for (uint32_t i = done_wins; i < nw; i++) {
        const xt_win_def *w = xt_win_at(i);
        uint32_t wb[3] = {i, w->comm, ELG_NO_ID};
        record(b, ELG_DEF_WINDOW, wb, 12);
    }
    done_wins = nw;
    uint32_t ng = xt_rma_group_count();
    for (uint32_t i = done_rgroups; i < ng; i++) {
        uint32_t size;
        const uint32_t *members = xt_rma_group_at(i, &size);
        dbuf g = {0};
        uint32_t gh[2] = {XT_RMA_GROUP_BASE + i, size};
        dput(&g, gh, 8);
        dput(&g, members, (size_t)size * 4);
        record(b, ELG_DEF_GROUP, g.p, (uint32_t)g.len);
        xt_mem_free(g.p);
    }
    done_rgroups = ng;
    xt_defs_unlock(defs_locked);
    uint32_t nl = xt_lock_count();
    for (uint32_t i = done_locks; i < nl; i++) {
        uint8_t kind;
        const char *name = xt_lock_name(i, &kind);
        uint32_t lb[3] = {i, kind, string(b, name)};
        record(b, ELG_DEF_LOCK, lb, 12);
    }
    done_locks = nl;
    uint32_t nm = xt_metric_count();
    for (uint32_t i = done_metrics; i < nm; i++) {
        uint32_t mb[4] = {i, string(b, xt_metric_name(i)), string(b, "occ"), 0};
        record(b, ELG_DEF_METRIC, mb, 16);
    }
    done_metrics = nm;
    uint32_t nt = (uint32_t)xt_thread_count();
    for (uint32_t i = done_threads; i < nt; i++) {
        char name[32];
        snprintf(name, sizeof name, "thread %u", i);
        uint32_t lb[4] = {i, proc, i, string(b, name)};
        record(b, ELG_DEF_LOCATION, lb, 16);
    }
    done_threads = nt;
    for (int i = (int)done_offsets; i < xt_proc.n_offsets && i < 2; i++) {
        struct {
            uint32_t process, reserved;
            double time, offset;
        } ob = {proc, 0, xt_proc.offset_time[i], xt_proc.offset_value[i]};
        record(b, ELG_DEF_OFFSET, &ob, sizeof ob);
    }
    done_offsets = (uint32_t)xt_proc.n_offsets;
    if (xt_proc.mpi_library[0] && done_system < 2) {
        attribute(b, "mpi_library", xt_proc.mpi_library);
        done_system = 2;
    }
    /* the tick rate measured so far; the last CLOCK record of a process is the one readers use */
    struct {
        uint32_t process, reserved;
        double tps;
        uint64_t origin;
    } cb = {proc, 0, ticks_per_second_so_far(), xt_tick0()};
    record(b, ELG_DEF_CLOCK, &cb, sizeof cb);
    attribute(b, "complete", "no (read from the spool file: the events flushed before the process ended)");
}

static int write_at(int fd, const void *p, size_t len, uint64_t at)
{
    const char *c = p;
    while (len) {
        ssize_t k = pwrite(fd, c, len, (off_t)at);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k, len -= (size_t)k, at += (uint64_t)k;
    }
    return 0;
}

/* one block at the end of the spool; returns the payload's offset, or UINT64_MAX */
static uint64_t append_block(uint16_t kind, uint32_t location, const void *payload, uint64_t len, uint32_t count)
{
    unsigned char h[ELG_BLOCK_HEADER_SIZE];
    xt_elg_block_header(h, kind, location, payload, len, count);
    static const char pad[8] = {0};
    size_t padding = len % ELG_BLOCK_ALIGN ? ELG_BLOCK_ALIGN - len % ELG_BLOCK_ALIGN : 0;
    uint64_t at = spool_pos;
    if (write_at(spool_fd, h, sizeof h, at) || write_at(spool_fd, payload, len, at + sizeof h) ||
        (padding && write_at(spool_fd, pad, padding, at + sizeof h + len)))
        return UINT64_MAX;
    spool_pos = at + sizeof h + len + padding;
    return at + sizeof h;
}

static int open_spool(void)
{
    char path[4200];
    xt_own_output(path, sizeof path);
    if (xt_path_replaceable(path)) {
        char tmp[4300];
        /* write the header under a temporary name first: a crash in between leaves no half file */
        snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
        int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            unsigned char hdr[ELG_FILE_HEADER_SIZE];
            xt_elg_file_header(hdr, 0);
            if (write_at(fd, hdr, sizeof hdr, 0) == 0 && rename(tmp, path) == 0) {
                spool_fd = fd;
                spool_named = 1;
                snprintf(spool_path, sizeof spool_path, "%s", path);
            } else {
                close(fd);
                unlink(tmp);
            }
        }
    }
    if (spool_fd < 0) { /* no spool at the output's path: an unlinked file in $TMPDIR */
        char path[1100];
        snprintf(path, sizeof path, "%s/expert-spool-XXXXXX", xt_cfg.tmpdir);
        spool_fd = mkostemp(path, O_CLOEXEC);
        if (spool_fd < 0) {
            xt_warn("cannot create a spool file in %s (%s): dropping full buffers", xt_cfg.tmpdir, strerror(errno));
            return -1;
        }
        unlink(path);
        unsigned char hdr[ELG_FILE_HEADER_SIZE];
        xt_elg_file_header(hdr, 0);
        if (write_at(spool_fd, hdr, sizeof hdr, 0) != 0) return -1;
    }
    spool_pos = ELG_FILE_HEADER_SIZE;
    return 0;
}

/* Lock the spool.  On the crash path a thread that died inside a flush may hold the lock: wait a
 * little, then go on without it (the crash path is the only writer left that matters). */
static int lock_spool(void)
{
    if (!xt_sigsafe_active()) return pthread_mutex_lock(&spool_lock) == 0;
    for (int i = 0; i < 2000; i++) {
        if (pthread_mutex_trylock(&spool_lock) == 0) return 1;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}

int xt_spool_append(xt_thread *t, const elg_event *ev, uint32_t n)
{
    int locked = lock_spool();
    int ok = 0;
    if (!spool_failed && spool_fd < 0 && open_spool() != 0) spool_failed = 1;
    if (!spool_failed) {
        dbuf d = {0};
        definitions_since_last(&d);
        uint64_t at = append_block(ELG_BLOCK_DEFINITIONS, ELG_NO_ID, d.p, d.len, d.count);
        xt_mem_free(d.p);
        if (at != UINT64_MAX) at = append_block(ELG_BLOCK_EVENTS, t->thread_num, ev, (uint64_t)n * sizeof *ev, n);
        if (at != UINT64_MAX) {
            if (t->n_blocks == t->cap_blocks) {
                t->cap_blocks = t->cap_blocks ? 2 * t->cap_blocks : 16;
                t->blocks = xt_mem_realloc(t->blocks, t->cap_blocks * sizeof *t->blocks);
            }
            if (t->blocks) {
                t->blocks[t->n_blocks].offset = at;
                t->blocks[t->n_blocks].first = t->spooled;
                t->n_blocks++;
                ok = 1;
            }
        }
        if (!ok) xt_warn("writing the spool file failed (%s): dropping %u events", strerror(errno), n);
    }
    if (locked) pthread_mutex_unlock(&spool_lock);
    return ok;
}

uint64_t xt_spool_read(const xt_thread *t, uint64_t first, elg_event *out, uint64_t max)
{
    uint64_t got = 0;
    for (uint32_t b = 0; b < t->n_blocks && got < max; b++) {
        uint64_t begin = t->blocks[b].first, end = b + 1 < t->n_blocks ? t->blocks[b + 1].first : t->spooled;
        uint64_t pos = first + got;
        if (pos < begin || pos >= end) continue;
        uint64_t want = end - pos < max - got ? end - pos : max - got;
        uint64_t at = t->blocks[b].offset + (pos - begin) * sizeof(elg_event);
        char *dst = (char *)(out + got);
        size_t left = want * sizeof(elg_event);
        while (left) {
            ssize_t k = pread(spool_fd, dst, left, (off_t)at);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) return got + (uint64_t)(dst - (char *)(out + got)) / sizeof(elg_event);
            dst += k, at += (uint64_t)k, left -= (size_t)k;
        }
        got += want;
    }
    return got;
}

void xt_spool_replaced(const char *path)
{
    if (spool_named && !strcmp(path, spool_path)) spool_named = 0; /* the path now holds the whole trace */
}

void xt_spool_detach(void)
{
    if (spool_named) unlink(spool_path);
    spool_named = 0;
}
