/*
 * work.c - do_work(seconds): the unit of synthetic computation.
 *
 * The paper's do_work approximates a requested time with a calibrated loop.  Here the loop
 * runs until the wall clock says `seconds` have passed, doing a calibrated amount of
 * arithmetic between clock reads: on a small, oversubscribed machine a thread that is
 * descheduled still finishes its work on time, so the designed wait states stay as designed.
 * Each call is recorded as the user region "do_work" when the tracing runtime is loaded, so
 * analyses can count the pieces of work each thread executed.
 */
#include <time.h>

#include "ats.h"
#include "expert.h"

static long steps_per_check = 64;
static volatile double sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double spin(long steps, double x)
{
    for (long i = 0; i < steps; i++) x = x * 1.0000001 + 1e-9;
    return x;
}

void ats_calibrate(void)
{
    /* aim at about one clock read per microsecond: the clock read costs ~20 ns, so < 3 % */
    long steps = 1024;
    double t0 = now();
    sink = spin(steps, 1.0);
    double dt = now() - t0;
    if (dt > 0) {
        long s = (long)(steps * 1e-6 / dt);
        steps_per_check = s < 16 ? 16 : s > 100000 ? 100000 : s;
    }
}

void do_work(double seconds)
{
    EXPERT_REGION_ENTER(region, "do_work");
    if (seconds > 0) {
        double end = now() + seconds, x = 1.0;
        while (now() < end) x = spin(steps_per_check, x);
        sink = x;
    }
    EXPERT_REGION_EXIT(region);
}
