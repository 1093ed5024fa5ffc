/*
 * pomp.h - the POMP performance interface for OpenMP (the seed paper's Table 3), as implemented
 * by the expert tracing runtime.
 *
 * Programs normally never include this by hand: expert-instrument (or expert-cc) rewrites every
 * OpenMP directive into calls of these functions, each passed the address of a context descriptor
 * that it generates per construct (construct name, sub-name, number of sections, file, line range).
 * See docs/instrument.md.
 */
#ifndef POMP_H
#define POMP_H

/* The POMP interface version (yyyymm), for `#ifdef _POMP` blocks in user code. */
#ifndef _POMP
#define _POMP 200110
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The context descriptor of one instrumented construct or user region (static storage, one per
 * construct in the compilation unit).  begin_line1/begin_lineN are the first and last line of the
 * opening directive, end_line1/end_lineN those of the construct's end (in C: its closing line). */
struct ompregdescr {
    const char *name;     /* "parallel", "for", "sections", "single", "critical", "region", ... */
    const char *sub_name; /* critical: its name ("" if unnamed); user region: the region's name */
    int num_sections;     /* sections: the number of sections, else 0 */
    const char *file_name;
    int begin_line1, begin_lineN;
    int end_line1, end_lineN;
    long data[4];         /* the runtime's per-construct cache (region and lock ids); start as 0 */
    struct ompregdescr *next;
};

/* the instrumenter's descriptors may be unused (a construct in an #if 0 block) */
#if defined(__GNUC__)
#define POMP_DESCRIPTOR __attribute__((unused))
#else
#define POMP_DESCRIPTOR
#endif

/* parallel regions (fork/join on the encountering thread, begin/end on every team member) */
void POMP_Parallel_fork(struct ompregdescr *d);
void POMP_Parallel_begin(struct ompregdescr *d);
void POMP_Parallel_end(struct ompregdescr *d);
void POMP_Parallel_join(struct ompregdescr *d);
/* work sharing */
void POMP_For_enter(struct ompregdescr *d);
void POMP_For_exit(struct ompregdescr *d);
void POMP_Do_enter(struct ompregdescr *d);
void POMP_Do_exit(struct ompregdescr *d);
void POMP_Workshare_enter(struct ompregdescr *d);
void POMP_Workshare_exit(struct ompregdescr *d);
void POMP_Sections_enter(struct ompregdescr *d);
void POMP_Sections_exit(struct ompregdescr *d);
void POMP_Section_begin(struct ompregdescr *d);
void POMP_Section_end(struct ompregdescr *d);
void POMP_Single_enter(struct ompregdescr *d);
void POMP_Single_begin(struct ompregdescr *d);
void POMP_Single_end(struct ompregdescr *d);
void POMP_Single_exit(struct ompregdescr *d);
void POMP_Master_begin(struct ompregdescr *d);
void POMP_Master_end(struct ompregdescr *d);
/* synchronisation: an explicit barrier passes its own descriptor, an implicit barrier made
 * explicit passes the descriptor of the construct it ends */
void POMP_Barrier_enter(struct ompregdescr *d);
void POMP_Barrier_exit(struct ompregdescr *d);
void POMP_Critical_enter(struct ompregdescr *d);
void POMP_Critical_begin(struct ompregdescr *d);
void POMP_Critical_end(struct ompregdescr *d);
void POMP_Critical_exit(struct ompregdescr *d);
void POMP_Atomic_enter(struct ompregdescr *d);
void POMP_Atomic_exit(struct ompregdescr *d);
void POMP_Flush_enter(struct ompregdescr *d);
void POMP_Flush_exit(struct ompregdescr *d);
/* tasks: the encountering thread creates (flags: ELG_TASK_UNTIED, ELG_TASK_MERGEABLE from the clauses) and
 * passes the returned id to the task, whose body runs between Task_begin and Task_end */
unsigned long long POMP_Task_create(struct ompregdescr *d, int flags);
void POMP_Task_begin(struct ompregdescr *d, unsigned long long task);
void POMP_Task_end(struct ompregdescr *d, unsigned long long task);
void POMP_Taskwait_enter(struct ompregdescr *d);
void POMP_Taskwait_exit(struct ompregdescr *d);
/* a taskgroup: enter, body, wait_enter at the body's end, wait_exit and exit after the construct */
void POMP_Taskgroup_enter(struct ompregdescr *d);
void POMP_Taskgroup_wait_enter(struct ompregdescr *d);
void POMP_Taskgroup_wait_exit(struct ompregdescr *d);
void POMP_Taskgroup_exit(struct ompregdescr *d);
/* the OpenMP lock API: each calls the OpenMP routine of the same name.  The lock pointers are
 * omp_lock_t * / omp_nest_lock_t *, passed as void * so the interface does not depend on omp.h. */
void POMP_Init_lock(void *lock);
void POMP_Destroy_lock(void *lock);
void POMP_Set_lock(void *lock);
void POMP_Unset_lock(void *lock);
int POMP_Test_lock(void *lock);
void POMP_Init_nest_lock(void *lock);
void POMP_Destroy_nest_lock(void *lock);
void POMP_Set_nest_lock(void *lock);
void POMP_Unset_nest_lock(void *lock);
int POMP_Test_nest_lock(void *lock);
/* measurement control and user regions */
void POMP_Init(void);
void POMP_Finalize(void);
void POMP_On(void);
void POMP_Off(void);
void POMP_Begin(struct ompregdescr *d);
void POMP_End(struct ompregdescr *d);
/* Fortran: the descriptor table that expert-instrument writes beside an instrumented Fortran source
 * registers itself with this (from a constructor); the Fortran entry points (pomp_parallel_fork_, ...)
 * take the INTEGER handle base + k of descriptor k (1-based).  base is a positive multiple of 4096. */
void POMP_Fortran_register(int base, struct ompregdescr *descr, int n);

#ifdef __cplusplus
}
#endif
#endif
