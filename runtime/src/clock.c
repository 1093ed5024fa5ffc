/* clock.c - the time source (rdtsc or CLOCK_MONOTONIC) and its calibration over the whole run. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

XT_HIDDEN int xt_use_tsc;

/* clock calibration: (tick, CLOCK_MONOTONIC seconds) at start and at stop */
static uint64_t tick0, tick1;
static double mono0, mono1;

double xt_mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* rdtsc only where the TSC is invariant (constant and not stopping in idle states). */
static int tsc_usable(void)
{
    const char *force = getenv("EXPERT_CLOCK");
    if (force && strcmp(force, "monotonic") == 0) return 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int constant = 0, nonstop = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0) {
            constant = strstr(line, " constant_tsc") != NULL;
            nonstop = strstr(line, " nonstop_tsc") != NULL;
            break;
        }
    }
    fclose(f);
    return constant && nonstop;
}

/* One (tick, CLOCK_MONOTONIC) pair: event times count from the tick, clock offsets from the seconds, so the
 * two must name the same instant.  A preemption between two reads would shift every offset by its length:
 * the monotonic clock is its own tick; the TSC is read between two clock reads, the tightest of a few. */
static void clock_pair(uint64_t *tick, double *mono)
{
    if (!xt_use_tsc) {
        *tick = xt_now();
        *mono = 1e-9 * (double)*tick;
        return;
    }
    double best = 1e30;
    for (int i = 0; i < 5; i++) {
        double before = xt_mono_seconds();
        uint64_t t = xt_now();
        double after = xt_mono_seconds();
        if (after - before < best) best = after - before, *tick = t, *mono = before + (after - before) / 2;
    }
}

void xt_clock_start(void)
{
    xt_use_tsc = tsc_usable();
    clock_pair(&tick0, &mono0);
}

/* the clock calibration end point; later calls keep the first value */
void xt_clock_stop(void)
{
    if (mono1 != 0) return;
    /* calibrate over at least 2 ms so a very short run still gets a usable tick rate */
    double m;
    do {
        m = xt_mono_seconds();
    } while (m - mono0 < 0.002);
    clock_pair(&tick1, &mono1);
}

double xt_ticks_per_second(void)
{
    if (!xt_use_tsc) return 1e9;
    double dt = mono1 - mono0;
    if (dt <= 0) return 1e9;
    return (double)(tick1 - tick0) / dt;
}

uint64_t xt_tick0(void) { return tick0; }
double xt_mono0(void) { return mono0; }
