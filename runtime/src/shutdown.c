/* shutdown.c - the end of the run: closing what is still open on every thread, writing this process's
 * trace, and the paths that get there (at exit, and from the crash handlers on a fatal signal). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

static atomic_int stopped; /* xt_stop_recording ran */
static atomic_int written; /* a trace file was written (normal or emergency) */

/* ---------------------------------------------------------------- stop: close what is open */
static void close_open_regions(xt_thread *t, uint64_t stop)
{
    if (t->held_exit_region != ELG_NO_ID) {
        xt_flush_held_exit(t);
        xt_counters_repeat(t, t->held_exit_time);
    }
    xt_buffer_settle(t); /* a flush's TRACING pair still waiting for its place goes here */
    uint64_t last = (t->n || t->spooled) ? xt_last_time(t) : xt_now();
    while (t->depth > 0) {
        int i = t->depth - 1;
        if (i >= XT_STACK_MAX) { /* nesting deeper than we track: cannot name the region */
            t->depth = XT_STACK_MAX;
            continue;
        }
        xt_frame f = t->stack[i];
        if (i == 0 && f.region == xt_region_program() && t == xt_thread_get(0)) {
            /* the program root region spans the whole measurement: it ends now, not at the last event */
            uint64_t end = stop > last ? stop : last;
            xt_record(t, end, ELG_EXIT, 0, f.region, 0, 0, 0, 0);
            xt_counters_repeat(t, end);
            t->depth--;
            continue;
        }
        if (f.team != ELG_NO_ID) xt_record(t, last, ELG_OMP_COLLEXIT, 0, f.region, f.team, 0, 0, 0);
        else xt_record(t, last, ELG_EXIT, 0, f.region, 0, 0, 0, 0);
        /* stamped at the thread's last event, so its last counter reading is the value (this also
           runs on another thread, and on the crash path, where the counters cannot be read) */
        xt_counters_repeat(t, last);
        t->depth--;
    }
    t->n_frames = 0;
}

void xt_stop_recording(void)
{
    if (atomic_exchange(&stopped, 1)) return;
    if (xt_omp_stop_hook) xt_omp_stop_hook();
    atomic_store(&xt_recording, 0);
    uint64_t stop = xt_now();
    xt_clock_stop();
    int nt = xt_thread_count();
    for (int i = 0; i < nt; i++) {
        xt_thread *t = xt_thread_get(i);
        if (t) close_open_regions(t, stop);
    }
}

int xt_is_stopped(void) { return atomic_load(&stopped); }

void xt_write_local_trace(const char *path, int finished)
{
    if (atomic_exchange(&written, 1)) return;
    xt_stop_recording();
    if (finished && xt_cfg.resolve_names) xt_resolve_all();
    size_t len;
    void *ser = xt_serialize_local(&len);
    void *sers[1] = {ser};
    size_t lens[1] = {len};
    xt_write_trace(path, 1, sers, lens, NULL, NULL, finished);
    xt_mem_free(ser);
}

void xt_mark_written(void) { atomic_store(&written, 1); }

/* ---------------------------------------------------------------- exit and crash paths */
static void at_exit(void)
{
    if (!atomic_load(&written) && !(xt_mpi_exit_hook && xt_mpi_exit_hook(0))) {
        char path[4200];
        if (xt_solo_output(path, sizeof path, 0)) xt_write_local_trace(path, 1);
        else xt_mark_written();
    }
    if (atomic_load(&xt_write_failed)) { /* the trace is lost: a CI job must not pass */
        fflush(NULL);
        _exit(XT_EXIT_WRITE_FAILED);
    }
}

/* The crash path: write what was recorded, with write(2) and memory reserved at start-up (sigsafe.c).
 * A second thread that crashes meanwhile waits for the first one's trace instead of killing the process. */
static atomic_int crash_owner, crash_done;
static void on_signal(int sig)
{
    if (!atomic_exchange(&crash_owner, 1)) {
        if (!atomic_load(&written)) {
            xt_sigsafe_enter();
            xt_sigsafe_message("caught signal ", sig, ": writing the events recorded so far (trace marked incomplete)");
            char path[4200];
            if (!(xt_mpi_exit_hook && xt_mpi_exit_hook(1)) && xt_solo_output(path, sizeof path, 1))
                xt_write_local_trace(path, 0);
        }
        atomic_store(&crash_done, 1);
    } else {
        struct timespec ms = {0, 1000000};
        for (int i = 0; i < 30000 && !atomic_load(&crash_done); i++) nanosleep(&ms, NULL);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signal_handlers(void)
{
    if (!xt_env_long("EXPERT_SIGNALS", 1)) return;
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        /* respect handlers the program (or the MPI library) installed before us */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_DFL) continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

void xt_install_exit_paths(void)
{
    atexit(at_exit);
    install_signal_handlers();
}
