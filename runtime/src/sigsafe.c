/* sigsafe.c - memory and messages for the crash path.
 *
 * After a fatal signal the trace is written from the signal handler, where malloc and stdio may deadlock
 * (the signal may have arrived inside them) or fail (the heap may be what crashed).  The writer therefore
 * allocates through xt_mem_*: libc normally, and after xt_sigsafe_enter() a bump allocator over address
 * space reserved at start-up (MAP_NORESERVE: it costs nothing until touched).  Memory obtained from libc
 * before the crash is never freed on that path, and a libc block that must grow is copied. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xt.h"

#define ARENA_BYTES ((size_t)1 << 32) /* reserved, not committed */
#define HDR 16                        /* block header: its size, keeping 16-byte alignment */

static char *arena;
static size_t arena_used;
static int crash_mode;

void xt_sigsafe_init(void)
{
    void *p = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    arena = p == MAP_FAILED ? NULL : p;
}

int xt_sigsafe_enter(void)
{
    crash_mode = 1;
    return arena != NULL;
}

int xt_sigsafe_active(void) { return crash_mode; }

static int in_arena(const void *p) { return arena && (const char *)p >= arena && (const char *)p < arena + ARENA_BYTES; }

void *xt_mem_alloc(size_t n)
{
    if (!crash_mode || !arena) return malloc(n);
    size_t need = HDR + ((n + 15) & ~(size_t)15);
    if (arena_used + need > ARENA_BYTES) return NULL;
    char *b = arena + arena_used;
    arena_used += need;
    memcpy(b, &n, sizeof n);
    return b + HDR; /* fresh anonymous pages: already zero */
}

void *xt_mem_calloc(size_t k, size_t n)
{
    if (!crash_mode || !arena) return calloc(k, n);
    return xt_mem_alloc(k * n);
}

void *xt_mem_realloc(void *p, size_t n)
{
    if (!crash_mode || !arena) return realloc(p, n);
    if (!p) return xt_mem_alloc(n);
    size_t old;
    if (in_arena(p)) {
        memcpy(&old, (char *)p - HDR, sizeof old);
        char *end = (char *)p + ((old + 15) & ~(size_t)15);
        if (end == arena + arena_used) { /* the last block grows in place */
            size_t need = (n + 15) & ~(size_t)15;
            if ((size_t)((char *)p - arena) + need > ARENA_BYTES) return NULL;
            arena_used = (size_t)((char *)p - arena) + need;
            memcpy((char *)p - HDR, &n, sizeof n);
            return p;
        }
    } else {
        old = malloc_usable_size(p); /* a libc block from before the crash: read, never freed */
    }
    void *q = xt_mem_alloc(n);
    if (q) memcpy(q, p, old < n ? old : n);
    return q;
}

void xt_mem_free(void *p)
{
    if (!crash_mode) free(p);
    /* on the crash path nothing is returned: the arena is dropped with the process */
}

char *xt_mem_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xt_mem_alloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* "expert-run[<pid>]: <a><number><b>\n" with write(2) only */
void xt_sigsafe_message(const char *a, long number, const char *b)
{
    char line[512];
    size_t n = 0;
    const char *parts[3] = {"expert-run[", a, b};
    long nums[2] = {(long)getpid(), number};
    for (int i = 0; i < 3; i++) {
        for (const char *c = parts[i]; *c && n < sizeof line - 32; c++) line[n++] = *c;
        if (i == 2) break;
        char digits[24];
        int k = 0;
        long v = nums[i];
        unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
        do digits[k++] = (char)('0' + u % 10); while ((u /= 10) && k < 22);
        if (v < 0) digits[k++] = '-';
        while (k) line[n++] = digits[--k];
        if (i == 0) line[n++] = ']', line[n++] = ':', line[n++] = ' ';
    }
    line[n++] = '\n';
    (void)!write(2, line, n);
}
