/*
 * omp_atomic.c - the frequent_atomic property, compiled with GCC (see the Makefile).
 *
 * An atomic update is visible to a tool only when the OpenMP runtime performs it.  Clang and
 * GCC turn updates of plain doubles into inline compare-and-swap loops nobody sees; GCC turns
 * an update of a long double (no lock-free 16-byte update on x86-64) into GOMP_atomic_start /
 * GOMP_atomic_end, which LLVM libomp implements with its atomic lock and reports through OMPT.
 */
#include <omp.h>

#include "ats.h"
#include "expert.h"

#define PROPERTY(name) EXPERT_REGION_ENTER(prop_region, name)
#define END_PROPERTY EXPERT_REGION_EXIT(prop_region)

static volatile double g_sink;

void frequent_atomic(int n, int balanced)
{
    PROPERTY("frequent_atomic");
    long double sum = 0;
#pragma omp parallel
    {
        if (balanced) {
            long double mine = 0;
#pragma omp for schedule(static)
            for (int i = 0; i < n; i++) mine += 1.0L;
#pragma omp atomic
            sum += mine;
        } else {
#pragma omp for schedule(static)
            for (int i = 0; i < n; i++) {
#pragma omp atomic
                sum += 1.0L;
            }
        }
    }
    g_sink = (double)sum;
    END_PROPERTY;
}
