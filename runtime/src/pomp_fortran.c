/*
 * pomp_fortran.c - the POMP interface for Fortran callers (gfortran naming: lower case, trailing
 * underscore, arguments by reference).
 *
 * Fortran code cannot hold the address of a C descriptor, so expert-instrument gives every construct
 * of a Fortran source an INTEGER handle and writes the descriptors into a C table file beside the
 * instrumented source (see docs/instrument.md).  The table registers itself here from a constructor:
 * handle = base + k, where base (a multiple of POMP_F_SLOTS derived from the file) names the table
 * and k (1..n) the descriptor in it.  Lookups after start-up only read the registry.
 */
#include <stdio.h>
#include <stdlib.h>

#include "pomp.h"
#include "xt.h"

#define POMP_F_SLOTS 4096 /* descriptors per table (the instrumenter enforces it) */
#define POMP_F_TABLES 4096 /* tables per program (open addressing; registration fails beyond) */

typedef struct {
    int base; /* 0: free */
    int n;
    struct ompregdescr *descr;
} pomp_f_table;

static pomp_f_table tables[POMP_F_TABLES];

static unsigned slot_of(int base) { return ((unsigned)base / POMP_F_SLOTS * 2654435761u) % POMP_F_TABLES; }

__attribute__((visibility("default"))) void POMP_Fortran_register(int base, struct ompregdescr *descr, int n)
{
    if (base <= 0 || base % POMP_F_SLOTS || n < 0 || n >= POMP_F_SLOTS) {
        fprintf(stderr, "expert: invalid POMP Fortran descriptor table (base %d, %d entries) from %s\n", base, n,
                n > 0 ? descr[0].file_name : "?");
        abort();
    }
    for (unsigned i = slot_of(base), probes = 0; probes < POMP_F_TABLES; i = (i + 1) % POMP_F_TABLES, probes++) {
        if (tables[i].base == 0) {
            tables[i] = (pomp_f_table){base, n, descr};
            return;
        }
        if (tables[i].base == base) {
            if (tables[i].descr == descr) return;
            fprintf(stderr,
                    "expert: the POMP handles of %s and %s collide (base %d); instrument one of them again "
                    "with a different --line-path or rename it\n",
                    tables[i].n ? tables[i].descr[0].file_name : "?", n ? descr[0].file_name : "?", base);
            abort();
        }
    }
    fprintf(stderr, "expert: more than %d instrumented Fortran sources in one program\n", POMP_F_TABLES);
    abort();
}

static struct ompregdescr *descr_of(const int *handle)
{
    int h = *handle, base = h - h % POMP_F_SLOTS, k = h % POMP_F_SLOTS;
    for (unsigned i = slot_of(base), probes = 0; probes < POMP_F_TABLES && tables[i].base;
         i = (i + 1) % POMP_F_TABLES, probes++) {
        if (tables[i].base == base && k >= 1 && k <= tables[i].n) return &tables[i].descr[k - 1];
    }
    fprintf(stderr,
            "expert: POMP handle %d belongs to no descriptor table: compile and link the *.pomp_tab.c file "
            "that expert-instrument wrote beside the instrumented Fortran source (expert-cc does this)\n",
            h);
    abort();
}

#define POMP_F(fname, cname) \
    __attribute__((visibility("default"))) void fname(const int *h) { cname(descr_of(h)); }

POMP_F(pomp_parallel_fork_, POMP_Parallel_fork)
POMP_F(pomp_parallel_begin_, POMP_Parallel_begin)
POMP_F(pomp_parallel_end_, POMP_Parallel_end)
POMP_F(pomp_parallel_join_, POMP_Parallel_join)
POMP_F(pomp_do_enter_, POMP_Do_enter)
POMP_F(pomp_do_exit_, POMP_Do_exit)
POMP_F(pomp_workshare_enter_, POMP_Workshare_enter)
POMP_F(pomp_workshare_exit_, POMP_Workshare_exit)
POMP_F(pomp_sections_enter_, POMP_Sections_enter)
POMP_F(pomp_sections_exit_, POMP_Sections_exit)
POMP_F(pomp_section_begin_, POMP_Section_begin)
POMP_F(pomp_section_end_, POMP_Section_end)
POMP_F(pomp_single_enter_, POMP_Single_enter)
POMP_F(pomp_single_begin_, POMP_Single_begin)
POMP_F(pomp_single_end_, POMP_Single_end)
POMP_F(pomp_single_exit_, POMP_Single_exit)
POMP_F(pomp_master_begin_, POMP_Master_begin)
POMP_F(pomp_master_end_, POMP_Master_end)
POMP_F(pomp_barrier_enter_, POMP_Barrier_enter)
POMP_F(pomp_barrier_exit_, POMP_Barrier_exit)
POMP_F(pomp_critical_enter_, POMP_Critical_enter)
POMP_F(pomp_critical_begin_, POMP_Critical_begin)
POMP_F(pomp_critical_end_, POMP_Critical_end)
POMP_F(pomp_critical_exit_, POMP_Critical_exit)
POMP_F(pomp_atomic_enter_, POMP_Atomic_enter)
POMP_F(pomp_atomic_exit_, POMP_Atomic_exit)
POMP_F(pomp_flush_enter_, POMP_Flush_enter)
POMP_F(pomp_flush_exit_, POMP_Flush_exit)
POMP_F(pomp_begin_, POMP_Begin)
POMP_F(pomp_end_, POMP_End)
POMP_F(pomp_taskwait_enter_, POMP_Taskwait_enter)
POMP_F(pomp_taskwait_exit_, POMP_Taskwait_exit)
POMP_F(pomp_taskgroup_enter_, POMP_Taskgroup_enter)
POMP_F(pomp_taskgroup_wait_enter_, POMP_Taskgroup_wait_enter)
POMP_F(pomp_taskgroup_wait_exit_, POMP_Taskgroup_wait_exit)
POMP_F(pomp_taskgroup_exit_, POMP_Taskgroup_exit)

/* tasks: the creating thread gets the new task's id into an INTEGER(KIND=8) that the instrumenter declares in
 * a BLOCK around the task construct and hands to the task as firstprivate */
__attribute__((visibility("default"))) void pomp_task_create_(const int *h, const int *flags, long long *task)
{
    *task = (long long)POMP_Task_create(descr_of(h), *flags);
}
__attribute__((visibility("default"))) void pomp_task_begin_(const int *h, const long long *task)
{
    POMP_Task_begin(descr_of(h), (unsigned long long)*task);
}
__attribute__((visibility("default"))) void pomp_task_end_(const int *h, const long long *task)
{
    POMP_Task_end(descr_of(h), (unsigned long long)*task);
}

__attribute__((visibility("default"))) void pomp_init_(void) { POMP_Init(); }
__attribute__((visibility("default"))) void pomp_finalize_(void) { POMP_Finalize(); }
__attribute__((visibility("default"))) void pomp_on_(void) { POMP_On(); }
__attribute__((visibility("default"))) void pomp_off_(void) { POMP_Off(); }
