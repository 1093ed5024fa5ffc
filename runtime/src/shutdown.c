/* shutdown.c - the end of the run: closing what is still open on every thread, writing this process's
 * trace, and the paths that get there (at exit, and from the crash handlers on a fatal signal). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
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
static pid_t traced_pid; /* the process the handlers were installed in (not a vfork child sharing its memory) */

__attribute__((noreturn)) static void real_exit(int status)
{
    static void (*real)(int);
    if (!real) real = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
    if (real) real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

static void at_exit(void)
{
    if (!atomic_load(&written) && !(xt_mpi_exit_hook && xt_mpi_exit_hook(0))) {
        char path[4200];
        if (xt_solo_output(path, sizeof path, 0)) xt_write_local_trace(path, 1);
        else xt_mark_written();
    }
    if (atomic_load(&xt_write_failed)) { /* the trace is lost: a CI job must not pass */
        fflush(NULL);
        real_exit(XT_EXIT_WRITE_FAILED);
    }
}

/* _exit and _Exit skip the at-exit handlers: a program that ends with them (a common way to end a
 * child, or a program in a hurry) gets its trace written here, as at exit.  A vfork child runs in its
 * parent's memory and must not write the parent's trace: it is told apart by its pid. */
__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
    if (traced_pid && getpid() == traced_pid) at_exit();
    real_exit(status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) { _exit(status); }

/* The crash path: write what was recorded, with write(2) and memory reserved at start-up (sigsafe.c).
 * A second thread that crashes meanwhile waits for the first one's trace instead of killing the process.
 * Then the handler that was there before ours (the MPI library's, UCX's) gets the signal. */
#define N_CRASH_SIGNALS 8
static const int crash_signals[N_CRASH_SIGNALS] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT};
static struct sigaction previous[N_CRASH_SIGNALS];
static atomic_int crash_owner, crash_done;
static _Thread_local int in_handler __attribute__((tls_model("initial-exec")));

static void on_signal(int sig, siginfo_t *info, void *ctx)
{
    if (in_handler) { /* the crash path itself crashed: end as the signal would have */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    in_handler = 1;
    if (!atomic_exchange(&crash_owner, 1)) {
        if (!atomic_load(&written) && getpid() == traced_pid) {
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
    for (int i = 0; i < N_CRASH_SIGNALS; i++) {
        if (crash_signals[i] != sig) continue;
        struct sigaction *p = &previous[i];
        if (p->sa_flags & SA_SIGINFO ? p->sa_sigaction != NULL : (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN)) {
            sigaction(sig, p, NULL); /* it may re-raise the signal itself, or return */
            if (p->sa_flags & SA_SIGINFO) p->sa_sigaction(sig, info, ctx);
            else p->sa_handler(sig);
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Ours in front of every fatal signal, chaining to the handler found there (the UCX library under
 * MPICH sets SIGSEGV and SIGBUS before the program starts, Open MPI sets its own in MPI_Init: either
 * left no trace).  SIGTERM, SIGINT and SIGQUIT only where nobody handles them: a program that catches
 * them means to go on. */
void xt_install_crash_handlers(void)
{
    if (!xt_env_long("EXPERT_SIGNALS", 1)) return;
    traced_pid = getpid();
    for (int i = 0; i < N_CRASH_SIGNALS; i++) {
        int sig = crash_signals[i], fatal = sig != SIGTERM && sig != SIGINT && sig != SIGQUIT;
        struct sigaction sa, old;
        if (sigaction(sig, NULL, &old) != 0) continue;
        if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_signal) continue; /* ours already */
        if (old.sa_handler == SIG_IGN) continue;
        if (!fatal && old.sa_handler != SIG_DFL) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        previous[i] = old;
        sigaction(sig, &sa, NULL);
    }
}

void xt_install_exit_paths(void)
{
    traced_pid = getpid();
    xt_crc_init(); /* dlopen: not on the crash path */
    atexit(at_exit);
    xt_install_crash_handlers();
}
