/* core.c - start-up (xt_init), configuration, the process-wide state, and the public C API (expert.h).
 * The other parts of the runtime, one subsystem per file, are listed in xt.h. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expert.h"
#include "xt.h"

XT_HIDDEN atomic_int xt_recording;
XT_HIDDEN xt_process_info xt_proc;
XT_HIDDEN xt_config xt_cfg;
XT_HIDDEN int (*xt_mpi_exit_hook)(int crashed);
XT_HIDDEN void (*xt_omp_stop_hook)(void);

static int initialised;

/* length of the valid UTF-8 sequence at s (0: not one) */
static int utf8_length(const unsigned char *s)
{
    int n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return n;
}

/* A warning line on stderr.  Names and paths in it are the program's bytes: control characters and
 * bytes that are not UTF-8 go out as \xNN, so a name can neither drive the terminal nor garble it. */
void xt_warn(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char line[1200];
    int n = snprintf(line, sizeof line, "expert-run[%d]: ", (int)getpid());
    const unsigned char *m = (const unsigned char *)msg;
    for (size_t i = 0; m[i] && n < (int)sizeof line - 6;) {
        int k = m[i] < 0x80 ? (m[i] >= 0x20 && m[i] != 0x7F) : utf8_length(m + i);
        if (k > 0) {
            memcpy(line + n, m + i, (size_t)k);
            n += k, i += (size_t)k;
        } else {
            n += snprintf(line + n, 5, "\\x%02x", m[i]);
            i++;
        }
    }
    line[n++] = '\n';
    (void)!write(2, line, (size_t)n);
}

/* ---------------------------------------------------------------- configuration */
long xt_env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end == 'k' || *end == 'K') x <<= 10, end++;
    else if (*end == 'm' || *end == 'M') x <<= 20, end++;
    else if (*end == 'g' || *end == 'G') x <<= 30, end++;
    if (*end) {
        xt_warn("ignoring %s=%s (not a number)", name, v);
        return dflt;
    }
    return x;
}

void xt_default_output(char *out, size_t n)
{
    char exe[4096] = "trace";
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) exe[k] = 0;
    const char *base = strrchr(exe, '/');
    snprintf(out, n, "%s.elg", base ? base + 1 : exe);
}

static void read_config(void)
{
    const char *out = getenv("EXPERT_TRACE_FILE");
    if (out && *out) snprintf(xt_cfg.output, sizeof xt_cfg.output, "%s", out);
    else xt_default_output(xt_cfg.output, sizeof xt_cfg.output);
    long bytes = xt_env_long("EXPERT_BUFFER_SIZE", 16l << 20);
    if (bytes < 64 * 1024) bytes = 64 * 1024;
    xt_cfg.buffer_events = (size_t)bytes / sizeof(elg_event);
    const char *p = getenv("EXPERT_PARADIGMS");
    if (!p || !*p) p = "mpi,omp,user,compiler,pthread";
    xt_cfg.record_mpi = strstr(p, "mpi") != NULL;
    xt_cfg.record_omp = strstr(p, "omp") != NULL;
    xt_cfg.record_user = strstr(p, "user") != NULL;
    xt_cfg.record_compiler = strstr(p, "compiler") != NULL;
    xt_cfg.record_pthread = strstr(p, "pthread") != NULL;
    xt_cfg.thread_reuse = (int)xt_env_long("EXPERT_THREAD_REUSE", 1);
    xt_cfg.resolve_names = (int)xt_env_long("EXPERT_RESOLVE", 1);
    xt_cfg.verbose = (int)xt_env_long("EXPERT_VERBOSE", 0);
    const char *filt = getenv("EXPERT_FILTER");
    if (filt) snprintf(xt_cfg.filter_file, sizeof xt_cfg.filter_file, "%s", filt);
    const char *td = getenv("TMPDIR");
    snprintf(xt_cfg.tmpdir, sizeof xt_cfg.tmpdir, "%s", td && *td ? td : "/tmp");
}

void xt_init(void)
{
    if (initialised) return;
    initialised = 1;
    if (xt_process_classify()) return; /* not traced: nothing is set up, recording stays off */
    read_config();
    xt_sigsafe_init();
    xt_clock_start();
    xt_define_measurement_regions();
    xt_proc.size = 1;
    atomic_store(&xt_recording, 1);
    xt_metrics_init(); /* the root region's ENTER carries its counters, as every ENTER does */
    xt_thread *t = xt_thread_attach(); /* the initial thread is thread 0 */
    /* the program root region: thread 0's first event, closed at the end of the measurement */
    if (t) {
        xt_push(t, xt_now(), xt_region_program(), ELG_NO_ID, ELG_NO_ID);
        xt_proc.root_records = 2 * t->n;
    }
    xt_install_exit_paths();
}

__attribute__((constructor)) static void xt_constructor(void) { xt_init(); }

/* ---------------------------------------------------------------- public C API (expert.h) */
__attribute__((visibility("default"))) expert_region_t expert_region_define(const char *name, const char *file,
                                                                            int line)
{
    return xt_region_define(name ? name : "", file, line > 0 ? (uint32_t)line : ELG_NO_ID, ELG_PARADIGM_USER,
                            ELG_ROLE_USER_REGION);
}

__attribute__((visibility("default"))) void expert_region_enter(expert_region_t region)
{
    if (!atomic_load_explicit(&xt_recording, memory_order_relaxed) || !xt_cfg.record_user) return;
    xt_thread *t = xt_self();
    if (t) xt_enter(t, xt_now(), region, ELG_NO_ID, ELG_NO_ID);
}

__attribute__((visibility("default"))) void expert_region_exit(expert_region_t region)
{
    if (!atomic_load_explicit(&xt_recording, memory_order_relaxed) || !xt_cfg.record_user) return;
    xt_thread *t = xt_self();
    if (t) xt_exit(t, xt_now(), region);
}

static _Atomic int paused;
__attribute__((visibility("default"))) void expert_pause(void)
{
    if (atomic_exchange(&paused, 1) || xt_is_stopped()) return;
    xt_thread *t = xt_self();
    if (t) xt_enter(t, xt_now(), xt_region_pausing(), ELG_NO_ID, ELG_NO_ID);
    atomic_store(&xt_recording, 0);
}

__attribute__((visibility("default"))) void expert_resume(void)
{
    if (!atomic_exchange(&paused, 0) || xt_is_stopped()) return;
    atomic_store(&xt_recording, 1);
    xt_thread *t = xt_self();
    if (t) xt_exit(t, xt_now(), xt_region_pausing());
}

__attribute__((visibility("default"))) int expert_is_active(void) { return atomic_load(&xt_recording); }
