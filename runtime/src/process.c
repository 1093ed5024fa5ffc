/* process.c - which process this is and where its trace goes: helper processes of MPI launchers are
 * not traced; a child made by fork() stops recording; a process that writes its trace alone (no MPI
 * merge) gets a file of its own when other processes of the same launch, or its parent, write the
 * output path; and the one-line warnings about a trace that was written (no events, OpenMP not
 * recorded, no MPI in an MPI launch) or could not be written (exit status 74). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xt.h"

XT_HIDDEN atomic_int xt_write_failed;

/* Programs of MPI launchers and their helper daemons (Open MPI / PRRTE, MPICH Hydra, Slurm).  They
 * inherit LD_PRELOAD from a traced program (Open MPI's singleton starts orted) or from a wrong
 * command order (expert-run mpirun ...); traced, they would write an empty trace over the real one. */
static int is_launcher_helper(const char *name)
{
    static const char *const exact[] = {"orted", "orterun", "prted", "prte", "prterun", "prun", "hydra_pmi_proxy",
                                        "hydra_nameserver", "hydra_persist", "ompi-server", "srun", NULL};
    static const char *const prefix[] = {"mpirun", "mpiexec", NULL}; /* mpirun.openmpi, mpiexec.hydra, ... */
    for (int i = 0; exact[i]; i++)
        if (!strcmp(name, exact[i])) return 1;
    for (int i = 0; prefix[i]; i++)
        if (!strncmp(name, prefix[i], strlen(prefix[i]))) return 1;
    return 0;
}

static const char *basename_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x < 0 || x > 1 << 30 ? dflt : (int)x;
}

static void after_fork_in_child(void)
{
    /* the child shares the spool files and the output path with its parent: it records nothing and
     * writes nothing (a child that execs a program is traced afresh, as a process of its own) */
    atomic_store(&xt_recording, 0);
    xt_proc.untraced = 1;
    xt_mark_written();
}

int xt_process_classify(void)
{
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = 0;
    if ((k > 0 && is_launcher_helper(basename_of(exe))) || is_launcher_helper(program_invocation_short_name)) {
        xt_proc.untraced = 1;
        if (xt_env_long("EXPERT_VERBOSE", 0))
            xt_warn("not tracing %s: a helper process of an MPI launcher", program_invocation_short_name);
        return 1;
    }
    /* rank and size an MPI launcher gives its processes (Open MPI, PMIx, MPICH Hydra / PMI) */
    xt_proc.launch_size = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", -1));
    xt_proc.launch_rank = env_int("OMPI_COMM_WORLD_RANK", env_int("PMIX_RANK", env_int("PMI_RANK", -1)));
    if (xt_proc.launch_rank < 0) xt_proc.launch_size = -1;
    /* EXPERT_RUN_PID names the traced program's process (expert-run execs it, so it keeps the pid);
     * a process that finds another pid there was started by the traced program */
    int root = env_int("EXPERT_RUN_PID", -1);
    if (root < 0) {
        char pid[32];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        setenv("EXPERT_RUN_PID", pid, 1);
    } else if (root != (int)getpid()) {
        xt_proc.descendant = 1;
    }
    pthread_atfork(NULL, NULL, after_fork_in_child);
    return 0;
}

/* <output> with ".<tag>" before its ".elg" (or at its end) */
static void tagged_path(char *out, size_t n, const char *output, const char *tag)
{
    size_t len = strlen(output);
    if (len > 4 && !strcmp(output + len - 4, ".elg")) snprintf(out, n, "%.*s.%s.elg", (int)(len - 4), output, tag);
    else snprintf(out, n, "%s.%s", output, tag);
}

/* events recorded so far, not counting the program root region's */
static uint64_t events_recorded(void)
{
    uint64_t total = 0;
    int nt = xt_thread_count();
    for (int i = 0; i < nt; i++) total += xt_local_event_count(i);
    uint64_t root = xt_proc.root_records / 2; /* its EXIT is not recorded yet */
    return total > root ? total - root : 0;
}

void xt_own_output(char *out, size_t n)
{
    char tag[32];
    if (xt_proc.descendant) snprintf(tag, sizeof tag, "%d", (int)getpid());
    else if (xt_proc.size > 1) snprintf(tag, sizeof tag, "%u", xt_proc.rank); /* an MPI rank */
    else if (xt_proc.launch_size > 1) snprintf(tag, sizeof tag, "%d", xt_proc.launch_rank);
    else {
        snprintf(out, n, "%s", xt_cfg.output);
        return;
    }
    tagged_path(out, n, xt_cfg.output, tag);
}

int xt_solo_output(char *out, size_t n, int crashed)
{
    if (xt_proc.descendant && !crashed && events_recorded() == 0) return 0; /* a shell, `ls`: nothing to say */
    xt_own_output(out, n);
    if (crashed) return 1;
    if (xt_proc.descendant) {
        /* started by the traced program (a shell, a helper): a trace of its own */
        xt_warn("%s (pid %d) was started by the traced program: its trace is %s", program_invocation_short_name,
                (int)getpid(), out);
    } else if (xt_proc.launch_size > 1 && xt_proc.launch_rank == 0) {
        /* one of several processes of an MPI launch that did not merge its trace over MPI */
        char last[4200], tag[32];
        snprintf(tag, sizeof tag, "%d", xt_proc.launch_size - 1);
        tagged_path(last, sizeof last, xt_cfg.output, tag);
        xt_warn("no MPI call was traced in these %d processes of one MPI launch, so each writes its own trace "
                "(%s ... %s); if the program uses MPI, see \"Launch mistakes\" in docs/runtime.md",
                xt_proc.launch_size, out, last);
    } else if (xt_proc.launch_size == 1) {
        xt_warn("started by an MPI launcher, but no MPI call was traced; if the program uses MPI, see \"Launch "
                "mistakes\" in docs/runtime.md");
    }
    return 1;
}

/* the program's OpenMP runs on GCC's libgomp (no OMPT) and no POMP instrumentation reports it */
static int openmp_unrecorded(void)
{
    if (atomic_load(&xt_pomp_active)) return 0;
    void *gomp = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!gomp) return 0;
    dlclose(gomp);
    void *omp = dlopen("libomp.so.5", RTLD_LAZY | RTLD_NOLOAD);
    if (!omp) omp = dlopen("libomp.so", RTLD_LAZY | RTLD_NOLOAD);
    if (omp) dlclose(omp);
    return omp == NULL;
}

void xt_trace_written(const char *path, int ok, int nprocs, uint64_t events, int finished)
{
    if (!ok) {
        atomic_store(&xt_write_failed, 1);
        return;
    }
    if (!finished) return;
    static const char gomp[] = "its OpenMP ran on GCC's libgomp, which has no OMPT: let expert-run start the "
                               "program itself, without --omp-runtime=native (it then runs on LLVM libomp), "
                               "or build it with expert-cc";
    uint64_t root = (uint64_t)nprocs * xt_proc.root_records; /* ranks record alike */
    if (events <= root) {
        if (openmp_unrecorded()) xt_warn("%s has no events: %s", path, gomp);
        else
            xt_warn("%s has no events: the program made no MPI call, OpenMP construct or instrumented function "
                    "call that the runtime sees (see \"What is recorded\" in docs/runtime.md)",
                    path);
    } else if (openmp_unrecorded()) {
        xt_warn("OpenMP constructs are not in %s: %s", path, gomp);
    }
}
