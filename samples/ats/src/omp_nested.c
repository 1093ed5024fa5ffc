/*
 * omp_nested.c - imbalance in nested parallel regions and in teams of varying size (issue 16: nested
 * parallelism, num_threads and if clauses).  Work per thread comes from the distribution, as in the
 * other load-imbalance properties; the twin (-B) gives every thread the same work.
 */
#include <omp.h>

#include "ats.h"
#include "expert.h"

#define PROPERTY(name) EXPERT_REGION_ENTER(prop_region, name)
#define END_PROPERTY EXPERT_REGION_EXIT(prop_region)

void imbalance_in_nested_region(distr_func_t df, distr_t *dd, int r)
{
    /* two outer threads each fork an inner team of two; inner thread j of outer thread o works
       df(2o + j) of the four.  With cyclic2 every inner team has a short and a long member and both
       outer threads end together: the waiting is at the inner teams' barriers only.  The inner teams'
       threads are started once before the property (creating them takes milliseconds, which would show
       as waiting at the outer barrier) */
    omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2)
    {
#pragma omp parallel num_threads(2)
        do_work(0.001);
    }
    PROPERTY("imbalance_in_nested_region");
    for (int k = 0; k < r; k++) {
#pragma omp parallel num_threads(2)
        {
            int o = omp_get_thread_num();
#pragma omp parallel num_threads(2)
            do_work(df(2 * o + omp_get_thread_num(), 4, 1.0, dd));
        }
    }
    END_PROPERTY;
}

void imbalance_with_varying_team_sizes(distr_func_t df, distr_t *dd, int r)
{
    PROPERTY("imbalance_with_varying_team_sizes");
    /* one parallel construct run with teams of 2 and of 3 threads (num_threads), then a second one that
       if(0) makes serial: a team of one, which waits for nobody */
    for (int k = 0; k < r; k++) {
        for (int size = 2; size <= 3; size++) {
#pragma omp parallel num_threads(size)
            par_do_omp_work(df, dd, 1.0);
        }
#pragma omp parallel if (0)
        par_do_omp_work(df, dd, 1.0);
    }
    END_PROPERTY;
}
