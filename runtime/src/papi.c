/* papi.c - hardware counters through PAPI, recorded after every ENTER and EXIT.
 *
 * EXPERT_METRICS=PAPI_L1_DCM,PAPI_SR_INS (PAPI preset or native event names, comma-separated, at
 * most XT_MAX_METRICS) turns it on.  Each metric becomes a METRIC definition (id = position in
 * the list, UINT64, ACCUMULATED) and every ENTER / EXIT on every thread is followed by one COUNTER
 * record per metric with the same time: the thread's count since its event set started (at the
 * thread's first event).  Where PAPI cannot count one of the events (no PMU in a VM, an unknown
 * name, perf_event_paranoid), the runtime prints one warning naming the event and PAPI's reason
 * and records no counters at all.  Built without PAPI (no papi.h), EXPERT_METRICS only warns.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

XT_HIDDEN void (*xt_counter_hook)(xt_thread *t, uint64_t time);

static char metric_names[XT_MAX_METRICS][64];
static char setup_problem[400];
static atomic_int problem_told;

/* Set as the hook when counting is impossible: says so once, at the process's first event, so
 * that helper processes (popen'ed addr2line inherits the preload) stay quiet. */
static void tell_problem(xt_thread *t, uint64_t time)
{
    (void)t, (void)time;
    xt_counter_hook = NULL;
    if (!atomic_exchange(&problem_told, 1)) xt_warn("%s", setup_problem);
}
static uint32_t n_metrics; /* metrics that are defined and recorded; 0 when counting is off */

uint32_t xt_metric_count(void) { return n_metrics; }

void xt_counters_repeat(xt_thread *t, uint64_t time)
{
    if (!n_metrics || !t->has_counters) return;
    for (uint32_t i = 0; i < n_metrics; i++) xt_record(t, time, ELG_COUNTER, 0, i, 0, 0, t->last_counters[i], 0);
}
const char *xt_metric_name(uint32_t i) { return i < n_metrics ? metric_names[i] : ""; }

/* split EXPERT_METRICS into names; returns how many (warns about the ones beyond the limit) */
static uint32_t parse_metrics(const char *spec, char names[][64])
{
    uint32_t n = 0;
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len > 0 && len < 64) {
            if (n == XT_MAX_METRICS) {
                xt_warn("EXPERT_METRICS: more than %d metrics, ignoring the rest from '%s'", XT_MAX_METRICS, p);
                break;
            }
            memcpy(names[n], p, len);
            names[n][len] = 0;
            n++;
        } else if (len >= 64) {
            xt_warn("EXPERT_METRICS: metric name '%.*s...' is too long, ignored", 32, p);
        }
        p += len;
        if (*p == ',') p++;
    }
    return n;
}

#ifdef XT_HAVE_PAPI
#include <papi.h>

static _Thread_local int thread_state; /* 0 not started, 1 counting, -1 failed */
static _Thread_local int thread_set = PAPI_NULL;
static atomic_int thread_warned;

/* the thread's event set with every metric, started; on failure names the event and why */
static int start_set(int *set, char *why, size_t n)
{
    *set = PAPI_NULL;
    int rc = PAPI_create_eventset(set);
    if (rc != PAPI_OK) {
        snprintf(why, n, "cannot create an event set: %s", PAPI_strerror(rc));
        return -1;
    }
    for (uint32_t i = 0; i < n_metrics; i++) {
        rc = PAPI_add_named_event(*set, metric_names[i]);
        if (rc != PAPI_OK) {
            snprintf(why, n, "event %s: %s", metric_names[i], PAPI_strerror(rc));
            return -1;
        }
    }
    rc = PAPI_start(*set);
    if (rc != PAPI_OK) {
        snprintf(why, n, "starting the counters (%s): %s", getenv("EXPERT_METRICS"), PAPI_strerror(rc));
        return -1;
    }
    return 0;
}

static void record_counters(xt_thread *t, uint64_t time)
{
    /* an event recorded for another thread (e.g. a worker's barrier end closed by the master at the
       end of the run): this thread's counters say nothing about it, so that thread's last reading
       stands (it was parked since) */
    if (t != xt_tls) {
        xt_counters_repeat(t, time);
        return;
    }
    if (XT_UNLIKELY(thread_state == 0)) {
        char why[256];
        if (PAPI_register_thread() == PAPI_OK && start_set(&thread_set, why, sizeof why) == 0) {
            thread_state = 1;
        } else {
            thread_state = -1;
            if (!atomic_exchange(&thread_warned, 1))
                xt_warn("hardware counters: thread %u records none (%s)", t->thread_num, why);
        }
    }
    if (thread_state < 0) return;
    long long v[XT_MAX_METRICS];
    if (PAPI_read(thread_set, v) != PAPI_OK) {
        xt_counters_repeat(t, time); /* every ENTER / EXIT has its counters: the last reading stands */
        return;
    }
    for (uint32_t i = 0; i < n_metrics; i++) {
        t->last_counters[i] = (uint64_t)v[i];
        xt_record(t, time, ELG_COUNTER, 0, i, 0, 0, (uint64_t)v[i], 0);
    }
    t->has_counters = 1;
}

static void papi_setup(uint32_t n)
{
    char why[256];
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT) {
        snprintf(why, sizeof why, "PAPI_library_init: %s", rc > 0 ? "PAPI version mismatch" : PAPI_strerror(rc));
    } else if ((rc = PAPI_thread_init((unsigned long (*)(void))pthread_self)) != PAPI_OK) {
        snprintf(why, sizeof why, "PAPI_thread_init: %s", PAPI_strerror(rc));
    } else {
        /* try the whole set once on this thread, so a machine without counters gets one clear
           message here instead of a failure on every thread */
        n_metrics = n;
        int set;
        if (start_set(&set, why, sizeof why) == 0) {
            long long v[XT_MAX_METRICS];
            PAPI_stop(set, v);
            PAPI_cleanup_eventset(set);
            PAPI_destroy_eventset(&set);
            xt_counter_hook = record_counters;
            return;
        }
        n_metrics = 0;
    }
    snprintf(setup_problem, sizeof setup_problem,
             "EXPERT_METRICS: PAPI cannot count here, recording no hardware counters (%s)", why);
    xt_counter_hook = tell_problem;
}
#else
static void papi_setup(uint32_t n)
{
    (void)n;
    snprintf(setup_problem, sizeof setup_problem,
             "EXPERT_METRICS: this runtime was built without PAPI (papi.h was missing), recording no "
             "hardware counters; install libpapi-dev and rebuild the runtime");
    xt_counter_hook = tell_problem;
}
#endif

/* needs nothing from core.c's start-up; xt_init calls it before the first event (the program root
 * region's ENTER), the constructor in case nothing else did */
void xt_metrics_init(void)
{
    static int done;
    if (done) return;
    done = 1;
    const char *spec = getenv("EXPERT_METRICS");
    if (!spec || !*spec) return;
    uint32_t n = parse_metrics(spec, metric_names);
    if (n) papi_setup(n);
}

__attribute__((constructor)) static void metrics_init(void) { xt_metrics_init(); }
