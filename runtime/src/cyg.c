/* cyg.c - function enter/exit from -finstrument-functions (names resolved at the end of the run). */
#include "xt.h"

#define NOINSTR __attribute__((no_instrument_function, visibility("default")))
#define XT_EXCLUDED (ELG_NO_ID - 2)

static inline uint32_t function_region(uintptr_t fn)
{
    return xt_region_by_addr(fn, 0, XT_ADDR_FUNCTION, "", ELG_PARADIGM_COMPILER, ELG_ROLE_FUNCTION);
}

NOINSTR void __cyg_profile_func_enter(void *fn, void *call_site)
{
    (void)call_site;
    if (XT_UNLIKELY(!atomic_load_explicit(&xt_recording, memory_order_relaxed) || !xt_cfg.record_compiler)) return;
    xt_thread *t = xt_self();
    if (XT_UNLIKELY(!t)) return;
    uint32_t r = function_region((uintptr_t)fn);
    if (r == XT_EXCLUDED) return;
    if (XT_UNLIKELY(r == t->root_region) && t->depth == 1 && !t->root_merged) {
        t->root_merged = 1; /* a created thread's start routine, already entered (pthreads.c) */
        return;
    }
    xt_enter(t, xt_now(), r, ELG_NO_ID, ELG_NO_ID);
}

NOINSTR void __cyg_profile_func_exit(void *fn, void *call_site)
{
    (void)call_site;
    if (XT_UNLIKELY(!atomic_load_explicit(&xt_recording, memory_order_relaxed) || !xt_cfg.record_compiler)) return;
    xt_thread *t = xt_self();
    if (XT_UNLIKELY(!t || t->depth == 0)) return; /* an exit without its enter (recording began inside) */
    uint32_t r = function_region((uintptr_t)fn);
    if (r == XT_EXCLUDED) return;
    if (XT_UNLIKELY(t->root_merged) && r == t->root_region && t->depth == 1) {
        t->root_merged = 0; /* the start routine's region ends with the thread */
        return;
    }
    xt_exit(t, xt_now(), r);
}
