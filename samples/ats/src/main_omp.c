/*
 * main_omp.c - the program of one OpenMP property: compiled once per property with
 * -DATS_PROPERTY=<name>; reads the severity parameters from the command line (ats_parse_args).
 */
#include <string.h>

#include "ats.h"

#define STR2(x) #x
#define STR(x) STR2(x)

/* which parameters each kind of property function takes */
#define DISTR(f) f(a.df, &a.dd, a.reps)
#define WORK_R(f) f(a.high, a.reps, a.balanced)
#define WORK_N(f) f(a.high, a.n, a.balanced)
#define COUNT_N(f) f(a.n, a.balanced)

#define KIND_critical_section_locking COUNT_N
#define KIND_critical_section_contention WORK_R
#define KIND_serialization_due_to_critical_section WORK_N
#define KIND_frequent_atomic COUNT_N
#define KIND_setting_lock COUNT_N
#define KIND_lock_testing COUNT_N
#define KIND_lock_waiting WORK_R
#define KIND_all_threads_lock_contention WORK_R
#define KIND_pairwise_lock_contention WORK_R
#define KIND_imbalance_in_parallel_region DISTR
#define KIND_imbalance_at_barrier DISTR
#define KIND_imbalance_in_parallel_loop DISTR
#define KIND_imbalance_in_parallel_loop_nowait DISTR
#define KIND_imbalance_in_parallel_section DISTR
#define KIND_imbalance_due_to_uneven_section_distribution WORK_R
#define KIND_imbalance_due_to_not_enough_sections WORK_R
#define KIND_unparallelized_in_master_region WORK_R
#define KIND_unparallelized_in_single_region WORK_R
#define KIND_unparallelized_in_ordered_loop WORK_N
#define KIND_imbalance_in_ordered_loop(f) f(a.df, &a.dd, a.n)
#define KIND_dynamic_scheduling_overhead COUNT_N
#define KIND_scheduling_overhead_in_parallelized_inner_loop COUNT_N
#define KIND_insufficient_work_in_parallel_loop COUNT_N
#define KIND_firstprivate_initialization COUNT_N
#define KIND_lastprivate_overhead COUNT_N
#define KIND_reduction_handling COUNT_N
#define KIND_false_sharing_in_parallel_region COUNT_N
#define KIND_imbalanced_task_tree DISTR
#define KIND_taskwait_on_long_child WORK_R
#define KIND_too_fine_tasks COUNT_N
#define KIND_serial_task_producer(f) f(a.high, a.n, a.reps, a.balanced)
#define KIND_task_dependence_chain(f) f(a.high, a.n, a.reps, a.balanced)
#define KIND_imbalance_in_nested_region DISTR
#define KIND_imbalance_with_varying_team_sizes DISTR

#define CALL2(kind, f) kind(f)
#define CALL(kind, f) CALL2(kind, f)
#define KIND2(p) KIND_##p
#define KIND(p) KIND2(p)

int main(int argc, char **argv)
{
    ats_args_t a;
    ats_parse_args(argc, argv, STR(ATS_PROPERTY), &a);
    ats_calibrate();
    /* start the thread pool before the property runs: creating threads (and their trace
       buffers) takes milliseconds that would otherwise show up as waiting in the first region */
#pragma omp parallel
    do_work(0.001);
    CALL(KIND(ATS_PROPERTY), ATS_PROPERTY);
    return 0;
}
