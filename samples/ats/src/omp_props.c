/*
 * omp_props.c - one function per OpenMP performance property of the APART tables 1-4.
 *
 * Each function is recorded as a user region of its own name, so every finding lands under
 * main/<property>/...  `balanced` selects the twin: the same shape of program without the
 * problem.  The designed severity of each property is derived in samples/ats/properties.py.
 */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "ats.h"
#include "expert.h"

#define PROPERTY(name) EXPERT_REGION_ENTER(prop_region, name)
#define END_PROPERTY EXPERT_REGION_EXIT(prop_region)

static volatile double g_sink;

/* a few nanoseconds of arithmetic: the body of loops whose overhead is the property */
static inline double tiny(double x) { return x * 1.000001 + 0.5; }

void par_do_omp_work(distr_func_t df, distr_t *dd, double sf)
{
    int me = omp_get_thread_num(), sz = omp_get_num_threads();
    do_work(df(me, sz, sf, dd));
}

/* ================================================================ Table 1: synchronization */

void critical_section_locking(int n, int balanced)
{
    PROPERTY("critical_section_locking");
    double x = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0) { /* one thread only: nobody competes */
            for (int i = 0; i < n; i++) {
                if (balanced) {
                    x = tiny(x);
                } else {
#pragma omp critical
                    x = tiny(x);
                }
            }
        }
    }
    g_sink = x;
    END_PROPERTY;
}

void critical_section_contention(double work, int r, int balanced)
{
    PROPERTY("critical_section_contention");
#pragma omp parallel
    for (int i = 0; i < r; i++) {
        if (balanced) {
            do_work(work);
        } else {
#pragma omp critical
            do_work(work);
        }
#pragma omp barrier
    }
    END_PROPERTY;
}

void serialization_due_to_critical_section(double work, int n, int balanced)
{
    PROPERTY("serialization_due_to_critical_section");
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int i = 0; i < n; i++) {
            if (balanced) {
                do_work(work);
            } else {
#pragma omp critical
                do_work(work); /* all the loop's work is serialized */
            }
        }
    }
    END_PROPERTY;
}

void setting_lock(int n, int balanced)
{
    PROPERTY("setting_lock");
#pragma omp parallel
    {
        omp_lock_t own; /* private lock: never contended */
        omp_init_lock(&own);
        double x = 0;
        for (int i = 0; i < n; i++) {
            if (!balanced) omp_set_lock(&own);
            x = tiny(x);
            if (!balanced) omp_unset_lock(&own);
        }
        omp_destroy_lock(&own);
        g_sink = x;
    }
    END_PROPERTY;
}

void lock_testing(int n, int balanced)
{
    PROPERTY("lock_testing");
#pragma omp parallel
    {
        omp_lock_t own;
        omp_init_lock(&own);
        double x = 0;
        for (int i = 0; i < n; i++) {
            if (!balanced && omp_test_lock(&own)) {
                x = tiny(x);
                omp_unset_lock(&own);
            } else {
                x = tiny(x);
            }
        }
        omp_destroy_lock(&own);
        g_sink = x;
    }
    END_PROPERTY;
}

void lock_waiting(double work, int r, int balanced)
{
    PROPERTY("lock_waiting");
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel
    for (int i = 0; i < r; i++) {
        int me = omp_get_thread_num();
        if (me == 0) omp_set_lock(&lock); /* thread 0 holds the lock before the others ask */
        if (balanced && me == 0) omp_unset_lock(&lock);
#pragma omp barrier
        if (me == 0) {
            do_work(work);
            if (!balanced) omp_unset_lock(&lock);
        } else {
            if (balanced) do_work(work);
            omp_set_lock(&lock); /* waits `work` seconds unless balanced */
            omp_unset_lock(&lock);
        }
#pragma omp barrier
    }
    omp_destroy_lock(&lock);
    END_PROPERTY;
}

void all_threads_lock_contention(double work, int r, int balanced)
{
    PROPERTY("all_threads_lock_contention");
    omp_lock_t shared, own[256];
    omp_init_lock(&shared);
    for (int i = 0; i < 256; i++) omp_init_lock(&own[i]);
#pragma omp parallel
    for (int i = 0; i < r; i++) {
        omp_lock_t *l = balanced ? &own[omp_get_thread_num() % 256] : &shared;
        omp_set_lock(l);
        do_work(work);
        omp_unset_lock(l);
#pragma omp barrier
    }
    omp_destroy_lock(&shared);
    for (int i = 0; i < 256; i++) omp_destroy_lock(&own[i]);
    END_PROPERTY;
}

void pairwise_lock_contention(double work, int r, int balanced)
{
    PROPERTY("pairwise_lock_contention");
    omp_lock_t locks[256];
    for (int i = 0; i < 256; i++) omp_init_lock(&locks[i]);
#pragma omp parallel
    for (int i = 0; i < r; i++) {
        int me = omp_get_thread_num();
        omp_lock_t *l = &locks[(balanced ? me : me / 2) % 256]; /* threads 2k and 2k+1 share lock k */
        omp_set_lock(l);
        do_work(work);
        omp_unset_lock(l);
#pragma omp barrier
    }
    for (int i = 0; i < 256; i++) omp_destroy_lock(&locks[i]);
    END_PROPERTY;
}

/* ================================================================ Table 2: load imbalance */

void imbalance_in_parallel_region(distr_func_t df, distr_t *dd, int r)
{
    PROPERTY("imbalance_in_parallel_region");
    for (int i = 0; i < r; i++) {
#pragma omp parallel
        par_do_omp_work(df, dd, 1.0);
    }
    END_PROPERTY;
}

void imbalance_at_barrier(distr_func_t df, distr_t *dd, int r)
{
    PROPERTY("imbalance_at_barrier");
#pragma omp parallel
    for (int i = 0; i < r; i++) {
        par_do_omp_work(df, dd, 1.0);
#pragma omp barrier
    }
    END_PROPERTY;
}

void imbalance_in_parallel_loop(distr_func_t df, distr_t *dd, int r)
{
    PROPERTY("imbalance_in_parallel_loop");
#pragma omp parallel
    {
        int sz = omp_get_num_threads();
        for (int k = 0; k < r; k++) {
            /* one iteration per thread (static schedule): iteration i does df(i) seconds */
#pragma omp for schedule(static)
            for (int i = 0; i < sz; i++) do_work(df(i, sz, 1.0, dd));
        }
    }
    END_PROPERTY;
}

void imbalance_in_parallel_loop_nowait(distr_func_t df, distr_t *dd, int r)
{
    PROPERTY("imbalance_in_parallel_loop_nowait");
    for (int k = 0; k < r; k++) {
#pragma omp parallel
        {
            int sz = omp_get_num_threads();
#pragma omp for schedule(static) nowait
            for (int i = 0; i < sz; i++) do_work(df(i, sz, 1.0, dd));
            /* no barrier after the loop: threads wait at the end of the parallel region */
        }
    }
    END_PROPERTY;
}

void imbalance_in_parallel_section(distr_func_t df, distr_t *dd, int r)
{
    PROPERTY("imbalance_in_parallel_section");
#pragma omp parallel
    for (int k = 0; k < r; k++) {
        /* two sections, designed for two threads: one section per thread */
#pragma omp sections
        {
#pragma omp section
            do_work(df(0, 2, 1.0, dd));
#pragma omp section
            do_work(df(1, 2, 1.0, dd));
        }
    }
    END_PROPERTY;
}

void imbalance_due_to_uneven_section_distribution(double work, int r, int balanced)
{
    PROPERTY("imbalance_due_to_uneven_section_distribution");
#pragma omp parallel
    for (int k = 0; k < r; k++) {
        if (balanced) { /* the twin: four equal sections, two per thread on two threads */
#pragma omp sections
            {
#pragma omp section
                do_work(work);
#pragma omp section
                do_work(work);
#pragma omp section
                do_work(work);
#pragma omp section
                do_work(work);
            }
        } else { /* three equal sections: on two threads one thread runs two */
#pragma omp sections
            {
#pragma omp section
                do_work(work);
#pragma omp section
                do_work(work);
#pragma omp section
                do_work(work);
            }
        }
    }
    END_PROPERTY;
}

void imbalance_due_to_not_enough_sections(double work, int r, int balanced)
{
    PROPERTY("imbalance_due_to_not_enough_sections");
#pragma omp parallel
    for (int k = 0; k < r; k++) {
        if (balanced) { /* the twin: as many sections as threads (two) */
#pragma omp sections
            {
#pragma omp section
                do_work(work);
#pragma omp section
                do_work(work);
            }
        } else { /* one section for a team of two or more: the others have nothing to do */
#pragma omp sections
            {
#pragma omp section
                do_work(work);
            }
        }
    }
    END_PROPERTY;
}

void unparallelized_in_master_region(double work, int r, int balanced)
{
    PROPERTY("unparallelized_in_master_region");
#pragma omp parallel
    for (int k = 0; k < r; k++) {
        if (balanced) {
            do_work(work); /* the twin: every thread does its share */
        } else {
#pragma omp master
            do_work(work);
        }
#pragma omp barrier
    }
    END_PROPERTY;
}

void unparallelized_in_single_region(double work, int r, int balanced)
{
    PROPERTY("unparallelized_in_single_region");
#pragma omp parallel
    for (int k = 0; k < r; k++) {
        if (balanced) {
            do_work(work);
#pragma omp barrier
        } else {
#pragma omp single
            do_work(work);
        }
    }
    END_PROPERTY;
}

void unparallelized_in_ordered_loop(double work, int n, int balanced)
{
    PROPERTY("unparallelized_in_ordered_loop");
#pragma omp parallel
    {
#pragma omp for ordered schedule(static, 1)
        for (int i = 0; i < n; i++) {
            if (balanced) do_work(work); /* the twin: the work happens outside the ordered block */
#pragma omp ordered
            {
                if (!balanced) do_work(work); /* all the work is serialized */
            }
        }
    }
    END_PROPERTY;
}

void imbalance_in_ordered_loop(distr_func_t df, distr_t *dd, int n)
{
    PROPERTY("imbalance_in_ordered_loop");
#pragma omp parallel
    {
        int sz = omp_get_num_threads();
#pragma omp for ordered schedule(static, 1)
        for (int i = 0; i < n; i++) {
            do_work(df(i % sz, sz, 1.0, dd)); /* iteration i runs on thread i % sz */
#pragma omp ordered
            g_sink = i;
        }
    }
    END_PROPERTY;
}

/* ================================================================ Table 3: control of parallelism */

void dynamic_scheduling_overhead(int n, int balanced)
{
    PROPERTY("dynamic_scheduling_overhead");
    double x = 0;
#pragma omp parallel reduction(+ : x)
    {
        if (balanced) {
#pragma omp for schedule(static)
            for (int i = 0; i < n; i++) x += tiny(i);
        } else {
#pragma omp for schedule(dynamic, 1) /* one tiny iteration per dispatch */
            for (int i = 0; i < n; i++) x += tiny(i);
        }
    }
    g_sink = x;
    END_PROPERTY;
}

void scheduling_overhead_in_parallelized_inner_loop(int n, int balanced)
{
    PROPERTY("scheduling_overhead_in_parallelized_inner_loop");
    static double a[4096];
    const int inner = 4;
    if (balanced) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < inner; j++) a[(i * inner + j) % 4096] = tiny(a[(i * inner + j) % 4096]);
    } else {
        for (int i = 0; i < n; i++) {
            /* a team is forked for four iterations, n times */
#pragma omp parallel for schedule(static)
            for (int j = 0; j < inner; j++) a[(i * inner + j) % 4096] = tiny(a[(i * inner + j) % 4096]);
        }
    }
    END_PROPERTY;
}

void insufficient_work_in_parallel_loop(int n, int balanced)
{
    PROPERTY("insufficient_work_in_parallel_loop");
    static double a[64];
    if (balanced) { /* the twin: the same work in one parallel loop */
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n * 64; i++) a[i % 64] = tiny(a[i % 64]);
    } else {
        for (int k = 0; k < n; k++) {
#pragma omp parallel for schedule(static)
            for (int i = 0; i < 64; i++) a[i] = tiny(a[i]); /* far less work than the loop's overhead */
        }
    }
    END_PROPERTY;
}

#define BIG 4096
void firstprivate_initialization(int n, int balanced)
{
    PROPERTY("firstprivate_initialization");
    double big[BIG];
    for (int i = 0; i < BIG; i++) big[i] = i;
    double x = 0;
    for (int k = 0; k < n; k++) {
        if (balanced) {
#pragma omp parallel reduction(+ : x)
            x += big[omp_get_thread_num()];
        } else {
#pragma omp parallel firstprivate(big) reduction(+ : x) /* 32 KiB copied into every thread */
            x += big[omp_get_thread_num()];
        }
    }
    g_sink = x;
    END_PROPERTY;
}

void lastprivate_overhead(int n, int balanced)
{
    PROPERTY("lastprivate_overhead");
    double big[BIG];
    memset(big, 0, sizeof big);
    for (int k = 0; k < n; k++) {
        if (balanced) {
#pragma omp parallel for schedule(static)
            for (int i = 0; i < 64; i++) g_sink = i;
        } else {
#pragma omp parallel for schedule(static) lastprivate(big)
            for (int i = 0; i < 64; i++) big[i] = i; /* 32 KiB copied out of the last thread */
        }
    }
    g_sink = big[1];
    END_PROPERTY;
}

void reduction_handling(int n, int balanced)
{
    PROPERTY("reduction_handling");
    double x = 0;
    for (int k = 0; k < n; k++) {
        if (balanced) {
#pragma omp parallel
            g_sink = omp_get_thread_num();
        } else {
#pragma omp parallel reduction(+ : x)
            x += 1.0;
        }
    }
    g_sink = x;
    END_PROPERTY;
}

/* ================================================================ Table 4: inefficient serial execution */

void false_sharing_in_parallel_region(int n, int balanced)
{
    PROPERTY("false_sharing_in_parallel_region");
    /* neighbouring threads update neighbouring doubles (one cache line) or, in the twin,
       doubles 128 bytes apart */
    static volatile double cells[256 * 16];
#pragma omp parallel
    {
        int me = omp_get_thread_num() % 256;
        volatile double *mine = &cells[balanced ? me * 16 : me];
        for (int i = 0; i < n; i++) *mine += 1.0;
    }
    END_PROPERTY;
}
