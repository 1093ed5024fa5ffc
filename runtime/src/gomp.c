/* gomp.c - what OMPT cannot say about GCC code running on LLVM libomp (its GOMP_* entry points).
 *
 * GCC lowers a worksharing construct's implicit barrier and an explicit `omp barrier` alike, to a call
 * of GOMP_barrier (the static loop's barrier, the single's, an explicit one), and libomp reports every
 * one of them as the same sync-region kind.  Only the call site tells them apart: expert-run reads the
 * program's line table and sources before the start and exports EXPERT_GOMP_BARRIERS, the return
 * address of every GOMP_barrier call in the executable with its class (e: an explicit barrier, whose
 * call starts a line-table row at an `omp barrier` directive; i: every other call, the implicit barrier
 * of a construct).  The OMPT layer (ompt.c) looks the codeptr of a barrier up here.
 *
 * libomp also reports a GCC `sections` construct as a loop (without a code address): the wrappers of
 * GOMP_sections_start and GOMP_parallel_sections below note their call site, so the construct is a
 * sections construct, named as clang's is.  (The combined `parallel sections` begins its construct on
 * every thread of the new team; the OMPT layer keeps the site with the team.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xt.h"

/* ---------------------------------------------------------------- GOMP_barrier call sites */
typedef struct site {
    uintptr_t ret; /* return address of the call, relative to the executable's load address */
    char kind;     /* 'e' explicit, 'i' implicit */
} site_t;
static site_t *sites;
static size_t n_sites;
static uintptr_t exe_base;

static int by_ret(const void *a, const void *b)
{
    uintptr_t x = ((const site_t *)a)->ret, y = ((const site_t *)b)->ret;
    return x < y ? -1 : x > y;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(uintptr_t *)data = info->dlpi_addr; /* the first object is the executable */
    return 1;
}

/* EXPERT_GOMP_BARRIERS = "KIND HEX,KIND HEX,...;EXECUTABLE" (KIND e or i glued to the hex offset).  It
 * applies only to the executable it names: processes the program starts inherit the variable. */
void xt_gomp_init(void)
{
    const char *spec = getenv("EXPERT_GOMP_BARRIERS");
    if (!spec || !*spec) return;
    const char *semi = strchr(spec, ';');
    if (!semi) return;
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) return;
    exe[k] = 0;
    if (strcmp(semi + 1, exe) != 0) return;
    size_t cap = 1;
    for (const char *p = spec; p < semi; p++) cap += *p == ',';
    site_t *s = calloc(cap, sizeof *s);
    if (!s) return;
    size_t n = 0;
    for (const char *p = spec; p < semi && n < cap;) {
        char kind = *p;
        char *end;
        unsigned long long off = strtoull(p + 1, &end, 16);
        if ((kind == 'e' || kind == 'i') && end > p + 1) {
            s[n].ret = (uintptr_t)off;
            s[n].kind = kind;
            n++;
        }
        p = strchr(p, ',');
        if (!p || p > semi) break;
        p++;
    }
    qsort(s, n, sizeof *s, by_ret);
    dl_iterate_phdr(first_object, &exe_base);
    sites = s;
    n_sites = n;
}

int xt_gomp_barrier_kind(const void *codeptr)
{
    if (!n_sites || !codeptr) return 0;
    site_t key = {(uintptr_t)codeptr - exe_base, 0};
    const site_t *hit = bsearch(&key, sites, n_sites, sizeof *sites, by_ret);
    return hit ? hit->kind : 0;
}

/* ---------------------------------------------------------------- GOMP_sections_start */
static _Thread_local const void *sections_site;          /* the pending GOMP_sections_start's call site */
static _Thread_local const void *parallel_sections_site; /* the pending GOMP_parallel_sections' */

const void *xt_gomp_take_sections_site(void)
{
    const void *p = sections_site;
    sections_site = NULL;
    return p;
}

const void *xt_gomp_take_parallel_sections_site(void)
{
    const void *p = parallel_sections_site;
    parallel_sections_site = NULL;
    return p;
}

static void *next_symbol(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (!fn) {
        xt_warn("%s called, but no OpenMP runtime after the tracing library defines it", name);
        abort();
    }
    return fn;
}

/* Our library comes before the OpenMP runtime in the symbol search order (LD_PRELOAD; expert-run puts
 * it before libomp), so GCC code calls these, and they call the runtime's.  The OMPT work callback
 * runs inside the call and takes the site. */
typedef unsigned (*sections_start_fn)(unsigned);
__attribute__((visibility("default"))) unsigned GOMP_sections_start(unsigned count)
{
    static _Atomic(sections_start_fn) real;
    sections_start_fn fn = atomic_load_explicit(&real, memory_order_acquire);
    if (XT_UNLIKELY(!fn)) {
        fn = (sections_start_fn)next_symbol("GOMP_sections_start");
        atomic_store_explicit(&real, fn, memory_order_release);
    }
    sections_site = __builtin_return_address(0);
    unsigned r = fn(count);
    sections_site = NULL;
    return r;
}

typedef unsigned (*sections2_start_fn)(unsigned, uintptr_t *, void **);
__attribute__((visibility("default"))) unsigned GOMP_sections2_start(unsigned count, uintptr_t *reductions,
                                                                    void **mem)
{
    static _Atomic(sections2_start_fn) real;
    sections2_start_fn fn = atomic_load_explicit(&real, memory_order_acquire);
    if (XT_UNLIKELY(!fn)) {
        fn = (sections2_start_fn)next_symbol("GOMP_sections2_start");
        atomic_store_explicit(&real, fn, memory_order_release);
    }
    sections_site = __builtin_return_address(0);
    unsigned r = fn(count, reductions, mem);
    sections_site = NULL;
    return r;
}

/* the combined `parallel sections`: the construct begins on every thread of the team; the parallel-begin
 * callback runs inside this call, on this thread, and gives the site to the team */
typedef void (*parallel_sections_fn)(void (*)(void *), void *, unsigned, unsigned, unsigned);
__attribute__((visibility("default"))) void GOMP_parallel_sections(void (*body)(void *), void *data,
                                                                  unsigned num_threads, unsigned count,
                                                                  unsigned flags)
{
    static _Atomic(parallel_sections_fn) real;
    parallel_sections_fn fn = atomic_load_explicit(&real, memory_order_acquire);
    if (XT_UNLIKELY(!fn)) {
        fn = (parallel_sections_fn)next_symbol("GOMP_parallel_sections");
        atomic_store_explicit(&real, fn, memory_order_release);
    }
    parallel_sections_site = __builtin_return_address(0);
    fn(body, data, num_threads, count, flags);
    parallel_sections_site = NULL;
}

/* the GOMP 1.0 form: the team is started here, the master runs the body after it returns */
typedef void (*parallel_sections_start_fn)(void (*)(void *), void *, unsigned, unsigned);
__attribute__((visibility("default"))) void GOMP_parallel_sections_start(void (*body)(void *), void *data,
                                                                        unsigned num_threads, unsigned count)
{
    static _Atomic(parallel_sections_start_fn) real;
    parallel_sections_start_fn fn = atomic_load_explicit(&real, memory_order_acquire);
    if (XT_UNLIKELY(!fn)) {
        fn = (parallel_sections_start_fn)next_symbol("GOMP_parallel_sections_start");
        atomic_store_explicit(&real, fn, memory_order_release);
    }
    parallel_sections_site = __builtin_return_address(0);
    fn(body, data, num_threads, count);
    parallel_sections_site = NULL;
}
