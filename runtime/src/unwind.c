/* unwind.c - call-path context for uninstrumented programs (EXPERT_UNWIND): at each MPI call and
 * OpenMP event the thread's stack is walked, the frames of the program's own code are kept, and the
 * difference to the frames seen at the thread's previous event becomes EXIT / ENTER records of
 * COMPILER regions (one per function, named at the end like -finstrument-functions addresses).
 *
 * Frames of this library, the MPI and OpenMP runtimes, libc and the other system run-time
 * libraries are skipped.  A frame is the same as one seen before when its function and the return
 * address in its caller are the same (two calls from different places are two instances; repeated
 * calls from one place with no traced event between them merge into one instance).  Frames that
 * disappeared are exited, and new ones entered, at the time of the event that revealed them.
 *
 * Two stack walkers (EXPERT_UNWIND=libunwind|backtrace; 1 = libunwind when it can be loaded):
 *  - libunwind's unw_backtrace (libunwind.so.8, opened RTLD_LOCAL on demand so its _Unwind_*
 *    symbols never replace libgcc's for the program), which caches the unwind rules per address;
 *  - glibc's backtrace(), which interprets the DWARF unwind tables at every frame.
 * The function a return address lies in comes from libgcc's _Unwind_FindEnclosingFunction, once per
 * address: a lock-free table maps each return address to its region (or to "skipped").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "xt.h"

XT_HIDDEN int xt_unwinding;

#define RAW_MAX 128      /* frames walked; a deeper stack loses its outermost frames */
#define FRAMES_MAX 64    /* program frames tracked per thread */
#define SKIPPED (ELG_NO_ID - 3)
#define EXCLUDED (ELG_NO_ID - 2) /* EXPERT_FILTER (xt_region_by_addr) */

typedef struct frame {
    uint32_t region;
    int index;           /* position in the thread's region stack (xt_thread.stack) */
    uintptr_t call_site; /* return address in the caller */
} frame;

typedef struct unwind_state {
    frame f[FRAMES_MAX];
    int n;
} unwind_state;

typedef int (*walk_fn)(void **ips, int max);
static walk_fn walker;
static void *(*enclosing_function)(void *pc);

/* ---------------------------------------------------------------- which frames are the program's */
/* libraries whose frames are never part of the program's call path (matched on the file's base name) */
static const char *const system_prefixes[] = {
    "libc.so", "libc-", "libpthread", "libdl", "ld-linux", "libgcc_s", "libm.so", "librt", /* C run time */
    "libmpi", "libpmpi", "libopen-", "libmpich", "libfmpich", "libmca_", "mca_", "libpmix", "libhwloc", "libevent",
    "libucp", "libucs", "libuct", "libucm", "libfabric", "libpsm", "libibverbs", "librdmacm", "libxpmem",
    "libprrte", "libomp", "libgomp", "libiomp", "libunwind", "libpapi", "libpfm", "libgfortran", "libquadmath",
    "libstdc++", "libc++",
};

static const void *own_base;

static int is_system_object(const Dl_info *info)
{
    if (info->dli_fbase == own_base) return 1;
    const char *path = info->dli_fname ? info->dli_fname : "";
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!*base) return 0; /* the executable */
    if (strstr(path, "/openmpi/")) return 1; /* Open MPI's components (mca_*.so) and their helpers */
    if (strncmp(base, "linux-vdso", 10) == 0) return 1;
    for (size_t i = 0; i < sizeof system_prefixes / sizeof system_prefixes[0]; i++)
        if (strncmp(base, system_prefixes[i], strlen(system_prefixes[i])) == 0) return 1;
    return 0;
}

/* Stricter than the frame filter: besides the libraries above, every library installed in the system's
 * library directories is the system's (X11 or hwloc plugins that MPI_Init loads, say), so only the
 * executable and libraries from elsewhere (the program's own) count as the program; the C++ library too
 * where cxx_is_program (std::thread, std::condition_variable call the pthread functions from there). */
int xt_system_code(const void *pc, int cxx_is_program)
{
    static const void *exe_base;
    if (!own_base) {
        Dl_info me;
        if (dladdr((void *)&xt_system_code, &me)) own_base = me.dli_fbase;
    }
    if (!exe_base) {
        Dl_info exe;
        if (dladdr((void *)getauxval(AT_ENTRY), &exe)) exe_base = exe.dli_fbase;
    }
    Dl_info info;
    if (!dladdr(pc, &info)) return 1;
    if (info.dli_fbase == own_base) return 1;
    if (info.dli_fbase == exe_base) return 0;
    const char *path = info.dli_fname ? info.dli_fname : "";
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (cxx_is_program && (strncmp(base, "libstdc++", 9) == 0 || strncmp(base, "libc++", 6) == 0)) return 0;
    static const char *const system_dirs[] = {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/"};
    for (size_t i = 0; i < sizeof system_dirs / sizeof system_dirs[0]; i++)
        if (strncmp(path, system_dirs[i], strlen(system_dirs[i])) == 0) return 1;
    return is_system_object(&info);
}

void xt_unwind_forget(xt_thread *t)
{
    unwind_state *u = t->unwind;
    if (u) u->n = 0;
    t->n_frames = 0;
}

/* return address -> region of the function it lies in, or SKIPPED; lock-free reads, inserts under a mutex */
#define CACHE_BITS 14
#define CACHE_SIZE (1u << CACHE_BITS)
typedef struct {
    _Atomic uintptr_t key;
    uint32_t region;
} cache_slot;
static cache_slot cache[CACHE_SIZE];
static unsigned cache_used;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static inline size_t slot_of(uintptr_t ip) { return (size_t)((ip * 0x9E3779B97F4A7C15ull) >> (64 - CACHE_BITS)); }

static uint32_t classify(uintptr_t ip)
{
    /* a return address: the call is the instruction before it (which may end the function) */
    void *pc = (void *)(ip - 1);
    Dl_info info;
    if (!dladdr(pc, &info) || is_system_object(&info)) return SKIPPED;
    void *start = enclosing_function ? enclosing_function(pc) : NULL;
    if (!start) start = info.dli_saddr; /* no unwind table entry: the nearest exported symbol, if any */
    /* the program's entry point (_start) is start-up code that calls libc, not part of the program */
    if (!start || (uintptr_t)start == getauxval(AT_ENTRY)) return SKIPPED;
    uint32_t r = xt_region_by_addr((uintptr_t)start, 0, XT_ADDR_FUNCTION, "", ELG_PARADIGM_COMPILER,
                                   ELG_ROLE_FUNCTION);
    return r == EXCLUDED ? SKIPPED : r;
}

static uint32_t region_of_return_address(uintptr_t ip)
{
    for (size_t i = slot_of(ip), probe = 0; probe < CACHE_SIZE; probe++, i = (i + 1) & (CACHE_SIZE - 1)) {
        uintptr_t k = atomic_load_explicit(&cache[i].key, memory_order_acquire);
        if (k == ip) return cache[i].region;
        if (k == 0) break;
    }
    pthread_mutex_lock(&cache_lock);
    uint32_t r = ELG_NO_ID;
    for (size_t i = slot_of(ip), probe = 0; probe < CACHE_SIZE; probe++, i = (i + 1) & (CACHE_SIZE - 1)) {
        uintptr_t k = atomic_load_explicit(&cache[i].key, memory_order_acquire);
        if (k == ip) {
            r = cache[i].region;
            break;
        }
        if (k == 0) {
            r = classify(ip);
            if (cache_used < CACHE_SIZE * 3 / 4) { /* a full table still answers, just slowly */
                cache[i].region = r;
                atomic_store_explicit(&cache[i].key, ip, memory_order_release);
                cache_used++;
            }
            break;
        }
    }
    if (r == ELG_NO_ID) r = classify(ip);
    pthread_mutex_unlock(&cache_lock);
    return r;
}

/* ---------------------------------------------------------------- recording the difference */
/* close frames that sit on top of the region stack (innermost first) */
static int close_frames_on_top(xt_thread *t, unwind_state *u, uint64_t time, int keep)
{
    while (u->n > keep && u->f[u->n - 1].index == t->depth - 1) {
        xt_pop(t, time, ELG_EXIT, u->f[u->n - 1].region, 0, 0, 0, 0);
        u->n--;
    }
    t->n_frames = u->n;
    return u->n;
}

void xt_unwind_close_top(xt_thread *t, uint64_t time)
{
    unwind_state *u = t->unwind;
    if (u) close_frames_on_top(t, u, time, 0);
}

void xt_unwind_sync(xt_thread *t, uint64_t time)
{
    if (t != xt_tls || !walker) return; /* only a thread's own stack can be walked */
    unwind_state *u = t->unwind;
    if (XT_UNLIKELY(!u)) {
        u = calloc(1, sizeof *u);
        if (!u) return;
        t->unwind = u;
    }
    void *ips[RAW_MAX];
    int n = walker(ips, RAW_MAX);
    /* the program's frames, outermost first, each with the return address in its caller */
    frame now[FRAMES_MAX];
    int m = 0;
    for (int i = n - 1; i >= 1 && m < FRAMES_MAX; i--) { /* ips[0] is in this library */
        uintptr_t ip = (uintptr_t)ips[i];
        if (!ip) continue;
        uint32_t r = region_of_return_address(ip);
        if (r == SKIPPED) continue;
        now[m].region = r;
        now[m].call_site = i + 1 < n ? (uintptr_t)ips[i + 1] : 0;
        m++;
    }
    int common = 0;
    while (common < m && common < u->n && u->f[common].region == now[common].region &&
           u->f[common].call_site == now[common].call_site)
        common++;
    /* Frames that are gone end now.  One that something else still open sits on (which the
     * program's real nesting rules out, but a runtime's late report could cause) stays open, and
     * then no new frame is entered below it: the nesting of the trace stays valid. */
    if (close_frames_on_top(t, u, time, common) > common) return;
    for (int i = common; i < m && t->depth < XT_STACK_MAX - 16; i++) {
        u->f[i] = now[i];
        u->f[i].index = t->depth;
        xt_push(t, time, now[i].region, ELG_NO_ID, ELG_NO_ID);
        u->n = i + 1;
    }
    t->n_frames = u->n;
}

/* ---------------------------------------------------------------- set-up */
static int glibc_walk(void **ips, int max) { return backtrace(ips, max); }

static void unwind_setup(const char *mode)
{
    Dl_info me;
    if (dladdr((void *)&unwind_setup, &me)) own_base = me.dli_fbase;
    void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
    if (gcc) enclosing_function = (void *(*)(void *))dlsym(gcc, "_Unwind_FindEnclosingFunction");
    if (!enclosing_function) xt_warn("EXPERT_UNWIND: libgcc_s has no _Unwind_FindEnclosingFunction; "
                                     "functions without exported symbols are not shown");
    if (strcmp(mode, "backtrace") != 0) {
        /* RTLD_LOCAL: libunwind also defines _Unwind_*; they must not replace libgcc's for the program */
        void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
        if (!lib) lib = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
        if (lib) walker = (walk_fn)dlsym(lib, "unw_backtrace");
        if (!walker && strcmp(mode, "libunwind") == 0)
            xt_warn("EXPERT_UNWIND=libunwind: cannot load libunwind.so.8 (install libunwind8); using glibc backtrace()");
    }
    if (!walker) {
        void *warm[4];
        backtrace(warm, 4); /* its first call loads libgcc_s: do that here, not inside a callback */
        walker = glibc_walk;
    }
    xt_unwinding = 1;
    /* -finstrument-functions events would duplicate the frames the walk finds */
    if (xt_cfg.record_compiler) xt_cfg.record_compiler = 0;
}

const char *xt_unwind_method(void) { return !walker ? "off" : walker == glibc_walk ? "backtrace" : "libunwind"; }

/* after core.c's configuration (xt_init runs from its constructor; priorities order the two) */
__attribute__((constructor(65535))) static void unwind_init(void)
{
    xt_init();
    const char *mode = getenv("EXPERT_UNWIND");
    if (!mode || !*mode || strcmp(mode, "0") == 0) return;
    if (strcmp(mode, "1") != 0 && strcmp(mode, "libunwind") != 0 && strcmp(mode, "backtrace") != 0) {
        xt_warn("ignoring EXPERT_UNWIND=%s (use 1, libunwind or backtrace)", mode);
        return;
    }
    unwind_setup(mode);
}
