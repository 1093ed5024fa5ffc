/* resolve.c - code addresses to function names and file:line (addr2line at the end of the run),
 * and the function filter (names from EXPERT_FILTER turned into addresses with nm at start-up). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fnmatch.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xt.h"

static uintptr_t exe_base;
static int find_exe(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    exe_base = info->dlpi_addr; /* the first object is the program */
    return 1;
}

/* Object path and the address to hand to addr2line for it. */
static int locate(uintptr_t addr, char *path, size_t n, uintptr_t *rel)
{
    Dl_info info;
    if (!dladdr((void *)addr, &info) || !info.dli_fbase) return -1;
    const Elf64_Ehdr *eh = info.dli_fbase;
    *rel = eh->e_type == ET_EXEC ? addr : addr - (uintptr_t)info.dli_fbase;
    if (!exe_base) dl_iterate_phdr(find_exe, NULL);
    int is_exe = !info.dli_fname || !info.dli_fname[0] || (uintptr_t)info.dli_fbase == exe_base ||
                 (eh->e_type == ET_EXEC);
    if (is_exe) {
        ssize_t k = readlink("/proc/self/exe", path, n - 1);
        if (k <= 0) return -1;
        path[k] = 0;
    } else {
        snprintf(path, n, "%s", info.dli_fname);
    }
    return 0;
}

static void strip_newline(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
}

/* Resolve one address; want_function: the function's name is wanted (else only file:line). */
/* popen for the runtime's own tools (addr2line, nm): without our LD_PRELOAD, so that neither the
 * shell nor the tool loads the runtime (a start-up each, and EXPERT_METRICS warnings from each) */
static FILE *popen_untraced(const char *cmd)
{
    const char *pre = getenv("LD_PRELOAD");
    char *saved = pre ? strdup(pre) : NULL;
    if (saved) unsetenv("LD_PRELOAD");
    FILE *p = popen(cmd, "r");
    if (saved) {
        setenv("LD_PRELOAD", saved, 1);
        free(saved);
    }
    return p;
}

char *xt_resolve_addr(uintptr_t addr, int want_function, char **file, uint32_t *line)
{
    char path[4096];
    uintptr_t rel;
    *file = NULL;
    *line = ELG_NO_ID;
    if (locate(addr, path, sizeof path, &rel) != 0) return NULL;
    char *fn = NULL;
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "addr2line -f -C -e '%s' %#lx 2>/dev/null", path, (unsigned long)rel);
    FILE *p = popen_untraced(cmd);
    if (p) {
        char l1[4096], l2[4096];
        if (fgets(l1, sizeof l1, p) && fgets(l2, sizeof l2, p)) {
            strip_newline(l1);
            strip_newline(l2);
            if (want_function && strcmp(l1, "??") != 0) fn = strdup(l1);
            char *disc = strstr(l2, " (discriminator");
            if (disc) *disc = 0;
            char *colon = strrchr(l2, ':');
            if (colon && strncmp(l2, "??", 2) != 0) {
                *colon = 0;
                char *end;
                unsigned long ln = strtoul(colon + 1, &end, 10);
                if (end != colon + 1 && ln > 0) {
                    *file = strdup(l2);
                    *line = (uint32_t)ln;
                }
            }
        }
        pclose(p);
    }
    if (!fn && want_function) { /* exported symbols without debug info */
        Dl_info info;
        if (dladdr((void *)addr, &info) && info.dli_sname) fn = strdup(info.dli_sname);
    }
    return fn;
}

/* ---------------------------------------------------------------- filter */
static uintptr_t *excluded;
static size_t n_excluded;

static int cmp_addr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* Read the filter: one shell-style pattern per line (# comments); matched against demangled names. */
static void load_filter(void)
{
    static int loaded;
    if (loaded) return;
    loaded = 1;
    if (!xt_cfg.filter_file[0]) return;
    FILE *f = fopen(xt_cfg.filter_file, "r");
    if (!f) {
        xt_warn("cannot read the filter file %s (EXPERT_FILTER); recording all functions", xt_cfg.filter_file);
        return;
    }
    char *pats[1024];
    int np = 0;
    char line[1024];
    while (np < 1024 && fgets(line, sizeof line, f)) {
        strip_newline(line);
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (!*s || *s == '#') continue;
        if (strncmp(s, "EXCLUDE", 7) == 0) s += 7;
        while (*s == ' ' || *s == '\t') s++;
        if (*s) pats[np++] = strdup(s);
    }
    fclose(f);
    if (!exe_base) dl_iterate_phdr(find_exe, NULL);
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) return;
    exe[k] = 0;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)exe_base;
    uintptr_t base = exe_base && eh->e_type == ET_DYN ? exe_base : 0;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "nm --defined-only -C '%s' 2>/dev/null", exe);
    FILE *p = popen_untraced(cmd);
    if (!p) return;
    size_t cap = 0;
    while (fgets(line, sizeof line, p)) {
        strip_newline(line);
        char *sp1 = strchr(line, ' ');
        if (!sp1 || !sp1[1] || sp1[2] != ' ') continue;
        char type = sp1[1];
        if (type != 't' && type != 'T' && type != 'W' && type != 'w') continue;
        const char *name = sp1 + 3;
        char plain[1024];
        snprintf(plain, sizeof plain, "%s", name);
        char *paren = strchr(plain, '('); /* C++: match "ns::f" without the parameter list too */
        int hit = 0;
        for (int i = 0; i < np && !hit; i++) {
            hit = fnmatch(pats[i], name, 0) == 0;
            if (!hit && paren) {
                *paren = 0;
                hit = fnmatch(pats[i], plain, 0) == 0;
                *paren = '(';
            }
        }
        if (!hit) continue;
        if (n_excluded == cap) {
            cap = cap ? 2 * cap : 64;
            excluded = realloc(excluded, cap * sizeof *excluded);
        }
        excluded[n_excluded++] = base + strtoull(line, NULL, 16);
    }
    pclose(p);
    for (int i = 0; i < np; i++) free(pats[i]);
    qsort(excluded, n_excluded, sizeof *excluded, cmp_addr);
    if (xt_cfg.verbose) xt_warn("filter %s excludes %zu function(s)", xt_cfg.filter_file, n_excluded);
}

int xt_filter_excluded(uintptr_t fn)
{
    load_filter();
    if (!n_excluded) return 0;
    return bsearch(&fn, excluded, n_excluded, sizeof *excluded, cmp_addr) != NULL;
}
