/*
 * ats.h - an APART-Test-Suite-style library of synthetic performance properties.
 *
 * Layers (after Gerndt, Mohr, Traeff, "Evaluating OpenMP performance analysis tools with the
 * APART Test Suite"): work (do_work), distributions (who gets how much work), parallel work
 * (par_do_omp_work / par_do_mpi_work), and one property function per performance property.
 * Every property function takes its severity parameters explicitly; main_omp.c / main_mpi.c
 * read them from the command line (see docs/ats.md).
 */
#ifndef ATS_H
#define ATS_H

/* ---------------------------------------------------------------- work */
/* Busy computation for `seconds` of wall-clock time (see work.c for why wall clock). */
void do_work(double seconds);
/* Measure how many arithmetic steps fit between two clock reads; called once by main. */
void ats_calibrate(void);

/* ---------------------------------------------------------------- distributions */
typedef void distr_t; /* points at one of the descriptors below */
typedef double (*distr_func_t)(int me, int sz, double scale, distr_t *dd);

typedef struct { double val; } val1_distr_t;                 /* same */
typedef struct { double low, high; } val2_distr_t;           /* cyclic2, block2, linear */
typedef struct { double low, med, high; } val3_distr_t;      /* cyclic3, block3 */
typedef struct { double low, high; int n; } peak_distr_t;    /* peak: participant n gets high */

double df_same(int me, int sz, double scale, distr_t *dd);
double df_cyclic2(int me, int sz, double scale, distr_t *dd);
double df_block2(int me, int sz, double scale, distr_t *dd);
double df_linear(int me, int sz, double scale, distr_t *dd);
double df_peak(int me, int sz, double scale, distr_t *dd);
double df_cyclic3(int me, int sz, double scale, distr_t *dd);
double df_block3(int me, int sz, double scale, distr_t *dd);

/* Look a distribution up by name ("cyclic2", ...); NULL if unknown. */
distr_func_t ats_distr_by_name(const char *name);

/* ---------------------------------------------------------------- command line */
typedef struct {
    int reps;            /* -r: how often the property's body repeats */
    const char *distr;   /* -d: distribution name */
    double low, med, high; /* -l -m -H: seconds of work (meaning per property) */
    int n;               /* -n: a count (iterations, sections, atomics, ...) */
    int peak;            /* -p: the participant that gets `high` under the peak distribution */
    int balanced;        /* -B: run the balanced twin (no performance problem) */
    distr_func_t df;     /* resolved from distr; a balanced twin uses df_same with `high` */
    union { val1_distr_t v1; val2_distr_t v2; val3_distr_t v3; peak_distr_t pk; } dd;
} ats_args_t;

/* Parse argv; exits with a usage message naming the bad argument. */
void ats_parse_args(int argc, char **argv, const char *prog, ats_args_t *a);

/* ---------------------------------------------------------------- OpenMP */
void par_do_omp_work(distr_func_t df, distr_t *dd, double sf);

/* Table 1: synchronization */
void critical_section_locking(int n, int balanced);
void critical_section_contention(double work, int r, int balanced);
void serialization_due_to_critical_section(double work, int n, int balanced);
void frequent_atomic(int n, int balanced);
void setting_lock(int n, int balanced);
void lock_testing(int n, int balanced);
void lock_waiting(double work, int r, int balanced);
void all_threads_lock_contention(double work, int r, int balanced);
void pairwise_lock_contention(double work, int r, int balanced);
/* Table 2: load imbalance */
void imbalance_in_parallel_region(distr_func_t df, distr_t *dd, int r);
void imbalance_at_barrier(distr_func_t df, distr_t *dd, int r);
void imbalance_in_parallel_loop(distr_func_t df, distr_t *dd, int r);
void imbalance_in_parallel_loop_nowait(distr_func_t df, distr_t *dd, int r);
void imbalance_in_parallel_section(distr_func_t df, distr_t *dd, int r);
void imbalance_due_to_uneven_section_distribution(double work, int r, int balanced);
void imbalance_due_to_not_enough_sections(double work, int r, int balanced);
void unparallelized_in_master_region(double work, int r, int balanced);
void unparallelized_in_single_region(double work, int r, int balanced);
void unparallelized_in_ordered_loop(double work, int n, int balanced);
void imbalance_in_ordered_loop(distr_func_t df, distr_t *dd, int n);
/* Table 3: control of parallelism */
void dynamic_scheduling_overhead(int n, int balanced);
void scheduling_overhead_in_parallelized_inner_loop(int n, int balanced);
void insufficient_work_in_parallel_loop(int n, int balanced);
void firstprivate_initialization(int n, int balanced);
void lastprivate_overhead(int n, int balanced);
void reduction_handling(int n, int balanced);
/* Table 4: inefficient serial execution */
void false_sharing_in_parallel_region(int n, int balanced);
/* OpenMP tasks (omp_tasks.c) */
void imbalanced_task_tree(distr_func_t df, distr_t *dd, int r);
void taskwait_on_long_child(double work, int r, int balanced);
void too_fine_tasks(int n, int balanced);
void serial_task_producer(double work, int n, int r, int balanced);
void task_dependence_chain(double work, int n, int r, int balanced);
/* nested parallelism and varying team sizes (omp_nested.c) */
void imbalance_in_nested_region(distr_func_t df, distr_t *dd, int r);
void imbalance_with_varying_team_sizes(distr_func_t df, distr_t *dd, int r);

/* ---------------------------------------------------------------- MPI (mpi_props.c) */
#ifdef ATS_WITH_MPI
#include <mpi.h>
void par_do_mpi_work(distr_func_t df, distr_t *dd, double sf, MPI_Comm comm);
void late_sender(double low, double high, int r);
void late_receiver(double low, double high, int r);
void wrong_order(double work, int r, int balanced);
void imbalance_at_mpi_barrier(distr_func_t df, distr_t *dd, int r);
void imbalance_at_mpi_alltoall(distr_func_t df, distr_t *dd, int r);
void rma_late_fence(double low, double high, int r);
void rma_late_post(double low, double high, int r);
void rma_late_complete(double low, double high, int r);
void rma_lock_contention(double low, double high, int r);
void late_broadcast(double low, double high, int r);
void late_scatter(double low, double high, int r);
void late_scatterv(double low, double high, int r);
void early_reduce(double low, double high, int r);
void early_gather(double low, double high, int r);
void early_gatherv(double low, double high, int r);
#endif

#endif
