/*
 * expert.h - the user-facing C API of the expert tracing runtime.
 *
 * Mark your own regions:
 *
 *     #include <expert.h>
 *     void solve(void) {
 *         EXPERT_REGION_ENTER(r, "solve");   // defines r once, then enters it
 *         ...
 *         EXPERT_REGION_EXIT(r);
 *     }
 *
 * The functions are declared weak: a program compiled with this header runs
 * normally, untraced, when the runtime is not loaded (no expert-run), and is
 * traced when it is.  Link with -lexpert only if you want a hard dependency.
 */
#ifndef EXPERT_H
#define EXPERT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t expert_region_t;
#define EXPERT_REGION_UNDEFINED 0xFFFFFFFFu

/* Define (or look up) a user region by name; file/line may be NULL/0.  Thread-safe. */
expert_region_t expert_region_define(const char *name, const char *file, int line) __attribute__((weak));
/* Enter / exit a region on the calling thread.  Exits must nest properly. */
void expert_region_enter(expert_region_t region) __attribute__((weak));
void expert_region_exit(expert_region_t region) __attribute__((weak));
/* Stop / resume recording on all threads (events in between are dropped; a PAUSING region marks the gap). */
void expert_pause(void) __attribute__((weak));
void expert_resume(void) __attribute__((weak));
/* 1 while the runtime is loaded and recording. */
int expert_is_active(void) __attribute__((weak));

#define EXPERT_REGION_ENTER(var, name)                                                   \
    static expert_region_t var = EXPERT_REGION_UNDEFINED;                                \
    do {                                                                                 \
        if (expert_region_enter) {                                                       \
            if (var == EXPERT_REGION_UNDEFINED) var = expert_region_define(name, __FILE__, __LINE__); \
            expert_region_enter(var);                                                    \
        }                                                                                \
    } while (0)

#define EXPERT_REGION_EXIT(var)                        \
    do {                                               \
        if (expert_region_exit) expert_region_exit(var); \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
