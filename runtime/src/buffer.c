/* buffer.c - per-thread event buffers: thread attachment, flushing full buffers to the spool file
 * (spool.c), reading a thread's events back (spool first, then memory) for the writer and the MPI merge. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xt.h"

XT_HIDDEN _Thread_local xt_thread *xt_tls __attribute__((tls_model("initial-exec")));

static xt_thread *threads[XT_MAX_THREADS];
static atomic_int n_threads;
/* this OS thread was a program-created thread whose location went back to the pool (pthreads.c) */
static _Thread_local int detached __attribute__((tls_model("initial-exec")));

/* A trace buffer in 2 MiB pages where the kernel gives them (transparent huge pages on request):
 * the recording path then takes one page fault per 2 MiB instead of one per 4 KiB, which is most
 * of what a fresh buffer costs per event.  Buffers live until the process ends. */
#define HUGE_PAGE (2ul << 20)
static void *buffer_alloc(size_t bytes)
{
    size_t len = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    char *p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return malloc(bytes);
    char *aligned = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
    if (aligned > p) munmap(p, (size_t)(aligned - p));
    munmap(aligned + len, (size_t)(p + HUGE_PAGE - aligned));
    madvise(aligned, len, MADV_HUGEPAGE); /* advice only: without THP these stay 4 KiB pages */
    return aligned;
}

xt_thread *xt_thread_attach(void)
{
    xt_init(); /* returns at once once the runtime is initialised */
    if (xt_proc.untraced) return NULL;
    if (detached) return NULL; /* a program thread whose location went back to the pool */
    int i = atomic_fetch_add(&n_threads, 1);
    if (i >= XT_MAX_THREADS) {
        atomic_fetch_sub(&n_threads, 1);
        xt_warn("more than %d threads: not recording the extra ones", XT_MAX_THREADS);
        return NULL;
    }
    xt_thread *t = calloc(1, sizeof *t);
    t->size = t->cap = (uint32_t)xt_cfg.buffer_events;
    t->buf = buffer_alloc(((size_t)t->size + 2) * sizeof(elg_event)); /* +2: a flush's TRACING pair */
    if (!t->buf) {
        xt_warn("cannot allocate a %zu-byte trace buffer", (size_t)t->size * sizeof(elg_event));
        abort();
    }
    t->thread_num = (uint32_t)i;
    t->held_exit_region = ELG_NO_ID;
    t->root_region = ELG_NO_ID;
    threads[i] = t;
    xt_tls = t;
    return t;
}

/* locations whose program-created thread has ended, for the next one (pthreads.c) */
static xt_thread *pool[XT_MAX_THREADS];
static int n_pool;
static atomic_flag pool_lock = ATOMIC_FLAG_INIT; /* a spin lock: no pthread call (those are wrapped) */
xt_thread *xt_thread_attach_pooled(void)
{
    if (xt_tls) return xt_tls;
    if (detached) return NULL;
    xt_thread *t = NULL;
    while (atomic_flag_test_and_set_explicit(&pool_lock, memory_order_acquire))
        ;
    if (n_pool && xt_cfg.thread_reuse) t = pool[--n_pool];
    atomic_flag_clear_explicit(&pool_lock, memory_order_release);
    if (!t) return xt_thread_attach();
    t->held_exit_region = ELG_NO_ID;
    t->n_held_locks = 0;
    t->has_counters = 0; /* another OS thread: its counters start afresh */
    t->root_region = ELG_NO_ID;
    t->root_merged = 0;
    xt_unwind_forget(t);
    xt_tls = t;
    return t;
}

void xt_thread_release(xt_thread *t)
{
    xt_tls = NULL;
    detached = 1; /* what this OS thread does from now on (TLS destructors) is not recorded */
    while (atomic_flag_test_and_set_explicit(&pool_lock, memory_order_acquire))
        ;
    if (n_pool < XT_MAX_THREADS) pool[n_pool++] = t;
    atomic_flag_clear_explicit(&pool_lock, memory_order_release);
}

int xt_thread_count(void) { return atomic_load(&n_threads); }
xt_thread *xt_thread_get(int i) { return threads[i]; }

/* A full buffer goes to the spool file (spool.c); the time spent is recorded as region TRACING.
 *
 * Event order.  The record that finds the buffer full was stamped by its caller *before* the flush,
 * and so may be the records that follow it (its COUNTERs, the frames and ENTER of one event, an MPI
 * call's SEND at the call's ENTER time).  Writing the TRACING region where the flush happens would
 * put these earlier times after it.  So the flush only measures its start and end; the ENTER/EXIT of
 * TRACING are written later, just before the first record stamped at or after the flush's start
 * (every record stamped before it precedes it in the buffer too, since a thread's own records are
 * stamped in order).  Until then the fast path's limit (cap) is 0, so each record takes the slow
 * path and is checked; that lasts only for the few records of the event that was being recorded.
 * Times are not moved, the TRACING region spans exactly the time of the write, and per-location
 * time stays non-decreasing.  At the end of the run a pair still waiting is written (settle). */
static void put(xt_thread *t, uint64_t time, uint8_t type, uint32_t region)
{
    elg_event *ev = &t->buf[t->n];
    memset(ev, 0, sizeof *ev);
    ev->time = time;
    ev->type = type;
    ev->a = region;
    if (type == ELG_ENTER) {
        ev->b = ev->c = ELG_NO_ID;
        ev->d = ELG_NO_ID;
    }
    __atomic_store_n(&t->n, t->n + 1, __ATOMIC_RELEASE);
}

/* the pending TRACING pair, at the end of the buffer (the 2 reserved slots make room for it) */
static void put_pending(xt_thread *t)
{
    uint32_t tracing = xt_region_tracing();
    put(t, t->flush_enter, ELG_ENTER, tracing);
    put(t, t->flush_exit, ELG_EXIT, tracing);
    t->flush_pending = 0;
    t->cap = t->size;
}

static void flush(xt_thread *t)
{
    uint64_t begin = xt_now();
    /* an older pair still waiting: every record in the buffer was stamped before it began */
    if (t->flush_pending) put_pending(t);
    uint32_t n = t->n;
    if (n) t->spool_last_time = t->buf[n - 1].time;
    if (n && xt_spool_append(t, t->buf, n)) t->spooled += n;
    __atomic_store_n(&t->n, 0, __ATOMIC_RELEASE);
    t->flush_enter = begin;
    t->flush_exit = xt_now();
    t->flush_pending = 1;
    t->cap = 0;
}

void xt_buffer_make_room(xt_thread *t, uint64_t time)
{
    if (t->flush_pending && time >= t->flush_enter) put_pending(t);
    if (t->n >= t->size) flush(t);
}

void xt_buffer_settle(xt_thread *t)
{
    if (t->flush_pending) put_pending(t);
}

void xt_flush_held_exit(xt_thread *t)
{
    uint32_t r = t->held_exit_region;
    t->held_exit_region = ELG_NO_ID;
    xt_record(t, t->held_exit_time, ELG_EXIT, 0, r, 0, 0, 0, 0);
    if (t->depth > 0) t->depth--;
}

uint64_t xt_local_event_count(int thread)
{
    xt_thread *t = threads[thread];
    return t ? t->spooled + t->n : 0;
}

uint64_t xt_local_events(int thread, uint64_t first, elg_event *out, uint64_t max)
{
    xt_thread *t = threads[thread];
    if (!t) return 0;
    uint64_t got = first < t->spooled ? xt_spool_read(t, first, out, max) : 0;
    if (first + got < t->spooled) return got; /* the spool could not be read */
    uint64_t pos = first + got;
    if (pos >= t->spooled) {
        uint64_t in_mem = t->n, from = pos - t->spooled;
        if (from < in_mem) {
            uint64_t take = in_mem - from;
            if (take > max - got) take = max - got;
            memcpy(out + got, t->buf + from, take * sizeof(elg_event));
            got += take;
        }
    }
    return got;
}
