/* defs.c - local definitions: regions (named, and keyed by code address through a lock-free table,
 * named at the end of the run), communicators, and the measurement regions TRACING / PAUSING.
 * Locks are defined in locks.c; serialize.c reads all of them through the accessors below. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xt.h"

static pthread_mutex_t def_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- region definitions */
static xt_region *regions;
static uint32_t n_regions, cap_regions;

static uint32_t region_add(const char *name, const char *file, uint32_t line, uint8_t paradigm, uint8_t role)
{
    if (n_regions == cap_regions) {
        cap_regions = cap_regions ? 2 * cap_regions : 256;
        regions = realloc(regions, cap_regions * sizeof *regions);
    }
    xt_region *r = &regions[n_regions];
    memset(r, 0, sizeof *r);
    r->name = strdup(name ? name : "");
    r->file = strdup(file ? file : "");
    r->line = line;
    r->end_line = ELG_NO_ID;
    r->paradigm = paradigm;
    r->role = role;
    return n_regions++;
}

uint32_t xt_region_define(const char *name, const char *file, uint32_t line, uint8_t paradigm, uint8_t role)
{
    pthread_mutex_lock(&def_lock);
    uint32_t id = ELG_NO_ID;
    for (uint32_t i = 0; i < n_regions; i++) { /* named regions are few; a scan is fine */
        xt_region *r = &regions[i];
        if (!r->addr_kind && r->line == line && r->paradigm == paradigm && r->role == role &&
            strcmp(r->name, name) == 0 && strcmp(r->file, file ? file : "") == 0) {
            id = i;
            break;
        }
    }
    if (id == ELG_NO_ID) id = region_add(name, file, line, paradigm, role);
    pthread_mutex_unlock(&def_lock);
    return id;
}

/* A named region with a source range (POMP context descriptors, pomp.c): the end line is set
 * on the first definition and kept. */
uint32_t xt_region_define_range(const char *name, const char *file, uint32_t line, uint32_t end_line,
                                uint8_t paradigm, uint8_t role)
{
    uint32_t id = xt_region_define(name, file, line, paradigm, role);
    pthread_mutex_lock(&def_lock);
    if (regions[id].end_line == ELG_NO_ID) regions[id].end_line = end_line;
    pthread_mutex_unlock(&def_lock);
    return id;
}

uint32_t xt_region_count(void) { return n_regions; }
/* On the crash path the thread that died may hold the lock: wait a little, then go on without it. */
int xt_defs_lock(void)
{
    if (!xt_sigsafe_active()) return pthread_mutex_lock(&def_lock) == 0;
    for (int i = 0; i < 2000; i++) {
        if (pthread_mutex_trylock(&def_lock) == 0) return 1;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}
void xt_defs_unlock(int locked)
{
    if (locked) pthread_mutex_unlock(&def_lock);
}
const xt_region *xt_region_at(uint32_t i) { return &regions[i]; }

/* Lock-free lookup of address-keyed regions: open addressing, keys published with release stores. */
static xt_addr_slot addr_table[XT_ADDR_TABLE_SIZE];
static atomic_uint addr_used;

uint32_t xt_region_by_addr(uintptr_t addr, uint32_t subkind, int kind, const char *label, uint8_t paradigm,
                           uint8_t role)
{
    uint64_t key = ((uint64_t)addr << 8) | ((uint64_t)(subkind & 0x3f) << 2) | (uint64_t)kind;
    uint64_t h = xt_addr_hash(key);
    for (uint32_t probe = 0; probe < XT_ADDR_TABLE_SIZE; probe++) {
        xt_addr_slot *s = &addr_table[(h + probe) & (XT_ADDR_TABLE_SIZE - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key) return s->value;
        if (k == 0) break;
    }
    /* slow path: insert under the definition lock */
    pthread_mutex_lock(&def_lock);
    uint32_t id = ELG_NO_ID;
    for (uint32_t probe = 0; probe < XT_ADDR_TABLE_SIZE; probe++) {
        xt_addr_slot *s = &addr_table[(h + probe) & (XT_ADDR_TABLE_SIZE - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key) {
            id = s->value;
            break;
        }
        if (k == 0) {
            if (atomic_load(&addr_used) > XT_ADDR_TABLE_SIZE * 3 / 4) break; /* full: fall through to unnamed */
            if (kind == XT_ADDR_FUNCTION && xt_filter_excluded(addr)) { /* the filter: never recorded */
                s->value = ELG_NO_ID - 2;
                atomic_store_explicit(&s->key, key, memory_order_release);
                atomic_fetch_add(&addr_used, 1);
                id = ELG_NO_ID - 2;
                break;
            }
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%s@%#lx", label ? label : "", (unsigned long)addr);
            id = region_add(tmp, "", ELG_NO_ID, paradigm, role);
            regions[id].addr = addr;
            regions[id].addr_kind = kind;
            regions[id].label = label;
            s->value = id;
            atomic_store_explicit(&s->key, key, memory_order_release);
            atomic_fetch_add(&addr_used, 1);
            break;
        }
    }
    pthread_mutex_unlock(&def_lock);
    if (id == ELG_NO_ID) id = xt_region_define("UNKNOWN", "", ELG_NO_ID, ELG_PARADIGM_MEASUREMENT, ELG_ROLE_FUNCTION);
    return id;
}

static uint32_t tracing_region = ELG_NO_ID, pausing_region = ELG_NO_ID, program_region = ELG_NO_ID;
uint32_t xt_region_tracing(void) { return tracing_region; }
uint32_t xt_region_pausing(void) { return pausing_region; }
uint32_t xt_region_program(void) { return program_region; }

void xt_define_measurement_regions(void)
{
    tracing_region = xt_region_define("TRACING", "EPIK", ELG_NO_ID, ELG_PARADIGM_MEASUREMENT, ELG_ROLE_MEASUREMENT_FLUSH);
    pausing_region = xt_region_define("PAUSING", "EPIK", ELG_NO_ID, ELG_PARADIGM_MEASUREMENT, ELG_ROLE_MEASUREMENT_PAUSE);
    /* the program root region, named like Score-P's: the executable's file name (its path and the
     * arguments are in the trace's "command" attribute).  Paradigm USER, role FUNCTION, as a function
     * "main" would be: its exclusive time is the program's computation outside every recorded region
     * (Score-P's paradigm MEASUREMENT would make it measurement overhead for the analyzer) */
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = 0;
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    program_region = xt_region_define(*base ? base : "PROGRAM", "", ELG_NO_ID, ELG_PARADIGM_USER, ELG_ROLE_FUNCTION);
}

/* Resolve names of address-keyed regions (once, at the end). */
void xt_resolve_all(void)
{
    for (uint32_t i = 0; i < n_regions; i++) {
        xt_region *r = &regions[i];
        if (!r->addr_kind) continue;
        if (!r->addr) { /* the runtime gave no code address */
            free(r->name);
            r->name = strdup(r->label ? r->label : "UNKNOWN");
            continue;
        }
        char *file = NULL;
        uint32_t line = ELG_NO_ID;
        if (r->addr_kind == XT_ADDR_FUNCTION) {
            char *fn = xt_resolve_addr(r->addr, 1, &file, &line);
            if (fn) {
                free(r->name);
                r->name = fn;
            }
        } else {
            /* a return address: the call is in the instruction before it */
            char *fn = xt_resolve_addr(r->addr - 1, 0, &file, &line);
            free(fn);
            char name[4200];
            if (file && line != ELG_NO_ID) {
                const char *base = strrchr(file, '/');
                snprintf(name, sizeof name, "%s @%s:%u", r->label, base ? base + 1 : file, line);
            } else {
                snprintf(name, sizeof name, "%s", r->label);
            }
            free(r->name);
            r->name = strdup(name);
        }
        if (file) {
            free(r->file);
            r->file = file;
            r->line = line;
        }
    }
}

/* ---------------------------------------------------------------- communicators */
static xt_comm_def *comms;
static uint32_t n_comms, cap_comms;

uint32_t xt_comm_define(uint32_t leader, uint32_t seq, uint32_t parent, uint32_t size, const uint32_t *members,
                        const char *name)
{
    pthread_mutex_lock(&def_lock);
    if (n_comms == cap_comms) {
        cap_comms = cap_comms ? 2 * cap_comms : 16;
        comms = realloc(comms, cap_comms * sizeof *comms);
    }
    xt_comm_def *c = &comms[n_comms];
    c->leader = leader;
    c->seq = seq;
    c->parent = parent;
    c->size = size;
    c->members = malloc((size ? size : 1) * sizeof(uint32_t));
    memcpy(c->members, members, size * sizeof(uint32_t));
    snprintf(c->name, sizeof c->name, "%s", name ? name : "");
    uint32_t id = n_comms++;
    pthread_mutex_unlock(&def_lock);
    return id;
}

uint32_t xt_comm_count(void) { return n_comms; }
const xt_comm_def *xt_comm_at(uint32_t i) { return &comms[i]; }

/* ---------------------------------------------------------------- RMA windows and groups (format 2.3) */
static xt_win_def *wins;
static uint32_t n_wins, cap_wins;

uint32_t xt_win_define(uint32_t comm, uint32_t seq)
{
    pthread_mutex_lock(&def_lock);
    if (n_wins == cap_wins) {
        cap_wins = cap_wins ? 2 * cap_wins : 16;
        wins = realloc(wins, cap_wins * sizeof *wins);
    }
    wins[n_wins].comm = comm;
    wins[n_wins].seq = seq;
    uint32_t id = n_wins++;
    pthread_mutex_unlock(&def_lock);
    return id;
}

uint32_t xt_win_count(void) { return n_wins; }
const xt_win_def *xt_win_at(uint32_t i) { return &wins[i]; }

typedef struct {
    uint32_t size;
    uint32_t *members;
} rma_group;
static rma_group *rgroups;
static uint32_t n_rgroups, cap_rgroups;

uint32_t xt_rma_group_define(uint32_t size, const uint32_t *members)
{
    pthread_mutex_lock(&def_lock);
    uint32_t i = 0;
    for (; i < n_rgroups; i++) /* (few: programs name the same neighbours epoch after epoch) */
        if (rgroups[i].size == size && !memcmp(rgroups[i].members, members, size * sizeof *members)) break;
    if (i == n_rgroups) {
        if (n_rgroups == cap_rgroups) {
            cap_rgroups = cap_rgroups ? 2 * cap_rgroups : 16;
            rgroups = realloc(rgroups, cap_rgroups * sizeof *rgroups);
        }
        rgroups[i].size = size;
        rgroups[i].members = malloc((size ? size : 1) * sizeof *members);
        memcpy(rgroups[i].members, members, size * sizeof *members);
        n_rgroups++;
    }
    pthread_mutex_unlock(&def_lock);
    return XT_RMA_GROUP_BASE + i;
}

uint32_t xt_rma_group_count(void) { return n_rgroups; }
const uint32_t *xt_rma_group_at(uint32_t i, uint32_t *size)
{
    *size = rgroups[i].size;
    return rgroups[i].members;
}
