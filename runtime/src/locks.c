/* locks.c - lock definitions (keyed by address and kind, lock-free lookup) and the hand-over
 * between holders that keeps every release no later than the next acquisition (xt_lock_acquire,
 * xt_lock_release; used by the OMPT and POMP paths). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

/* Hand-over between holders.  OMPT reports a release only after the lock is free, so the next
 * holder's acquisition callback may run before the releasing thread's callback.  Each lock keeps a
 * small ring, indexed by acquisition order, of acquisition and release times; through it the two
 * callbacks agree on release(k) <= acquire(k+1) whichever runs first (see xt_lock_release). */
#define LOCK_RING 64     /* hand-overs a releasing thread may fall behind and still find its successor */
#define LOCK_SPINS 256   /* busy polls for a successor that is between counter and publication ... */
#define LOCK_YIELDS 1000 /* ... then polls with sched_yield (it may be descheduled on a busy machine) */
typedef struct {
    _Atomic uint64_t acq_seq, acq_time; /* acquisition acq_seq is stamped acq_time (seqlock: 0 = being written) */
    _Atomic uint64_t rel_seq, rel_time; /* the holder of acquisition rel_seq released at rel_time */
} xt_lock_slot;
typedef struct {
    uint8_t kind;
    char name[64];
    _Atomic uint64_t order; /* acquisitions so far */
    xt_lock_slot *ring;     /* LOCK_RING slots; acquisition k uses slot k % LOCK_RING */
} xt_lock;
#define MAX_LOCKS 65536
static xt_lock *locks;
static atomic_uint n_locks;
static xt_addr_slot lock_table[XT_ADDR_TABLE_SIZE];
static pthread_mutex_t lock_def_lock = PTHREAD_MUTEX_INITIALIZER; /* serialises new lock definitions */

uint32_t xt_lock_find(uintptr_t key0, uint8_t kind)
{
    uint64_t key = ((uint64_t)key0 << 4) | kind;
    uint64_t h = xt_addr_hash(key);
    for (uint32_t probe = 0; probe < XT_ADDR_TABLE_SIZE; probe++) {
        xt_addr_slot *s = &lock_table[(h + probe) & (XT_ADDR_TABLE_SIZE - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key) return s->value;
        if (k == 0) break;
    }
    return ELG_NO_ID;
}

uint32_t xt_lock_id(uintptr_t key0, uint8_t kind, const char *name)
{
    uint32_t found = xt_lock_find(key0, kind);
    if (found != ELG_NO_ID) return found;
    uint64_t key = ((uint64_t)key0 << 4) | kind;
    uint64_t h = xt_addr_hash(key);
    pthread_mutex_lock(&lock_def_lock);
    uint32_t id = ELG_NO_ID;
    for (uint32_t probe = 0; probe < XT_ADDR_TABLE_SIZE; probe++) {
        xt_addr_slot *s = &lock_table[(h + probe) & (XT_ADDR_TABLE_SIZE - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key) {
            id = s->value;
            break;
        }
        if (k == 0) {
            uint32_t n = atomic_load(&n_locks);
            if (n >= MAX_LOCKS - 1) break;
            if (!locks) locks = calloc(MAX_LOCKS, sizeof *locks);
            locks[n].kind = kind;
            snprintf(locks[n].name, sizeof locks[n].name, "%s", name);
            atomic_store(&locks[n].order, 0);
            locks[n].ring = calloc(LOCK_RING, sizeof(xt_lock_slot)); /* NULL: orders only, no hand-over repair */
            atomic_store(&n_locks, n + 1);
            id = n;
            s->value = id;
            atomic_store_explicit(&s->key, key, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&lock_def_lock);
    return id;
}

uint32_t xt_lock_count(void) { return atomic_load(&n_locks); }
const char *xt_lock_name(uint32_t i, uint8_t *kind)
{
    *kind = locks[i].kind;
    return locks[i].name;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* The earliest time this thread may still stamp: its last event (or a held-back construct end). */
static uint64_t own_floor(const xt_thread *t)
{
    uint64_t f = xt_last_time(t);
    if (t->held_exit_region != ELG_NO_ID && t->held_exit_time > f) f = t->held_exit_time;
    return f;
}

uint64_t xt_lock_acquire(xt_thread *t, uint32_t lock, uint64_t *now)
{
    if (lock == ELG_NO_ID) return 0;
    xt_lock *l = &locks[lock];
    /* seq_cst: pairs with the release's store of rel_seq and load of the counter (xt_lock_release) */
    uint64_t order = atomic_fetch_add(&l->order, 1) + 1;
    if (l->ring) {
        xt_lock_slot *prev = &l->ring[(order - 1) % LOCK_RING];
        if (order > 1 && atomic_load(&prev->rel_seq) == order - 1) {
            /* the previous holder's release is already stamped: do not acquire before it (it was
             * taken a few ns ago on another core, so this moves our time by about that much) */
            uint64_t rel = atomic_load_explicit(&prev->rel_time, memory_order_relaxed);
            if (rel > *now) *now = rel;
        }
        xt_lock_slot *mine = &l->ring[order % LOCK_RING];
        atomic_store_explicit(&mine->acq_seq, 0, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&mine->acq_time, *now, memory_order_relaxed);
        atomic_store_explicit(&mine->acq_seq, order, memory_order_release);
    }
    int i = t->n_held_locks++;
    if (i < XT_HELD_LOCKS) {
        t->held_locks[i].lock = lock;
        t->held_locks[i].order = order;
    }
    return order;
}

/* The order this thread acquired `lock` with, removed from its held list; 0 if it was not tracked. */
static uint64_t pop_held(xt_thread *t, uint32_t lock)
{
    int top = t->n_held_locks < XT_HELD_LOCKS ? t->n_held_locks : XT_HELD_LOCKS;
    for (int i = top - 1; i >= 0; i--) {
        if (t->held_locks[i].lock != lock) continue;
        uint64_t order = t->held_locks[i].order;
        memmove(&t->held_locks[i], &t->held_locks[i + 1], (size_t)(top - i - 1) * sizeof t->held_locks[0]);
        t->n_held_locks--;
        return order;
    }
    if (t->n_held_locks > XT_HELD_LOCKS) t->n_held_locks--; /* one of the untracked ones */
    return 0;
}

/* Acquisition `order`'s time from the ring; waits (bounded) while its holder is between taking the
 * order and publishing the time.  0: not available (slot reused, or the holder did not show up). */
static int acquisition_time(xt_lock *l, uint64_t order, uint64_t *time)
{
    xt_lock_slot *s = &l->ring[order % LOCK_RING];
    for (int i = 0; i < LOCK_SPINS + LOCK_YIELDS; i++) {
        uint64_t seq = atomic_load_explicit(&s->acq_seq, memory_order_acquire);
        if (seq == order) {
            uint64_t v = atomic_load_explicit(&s->acq_time, memory_order_relaxed);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&s->acq_seq, memory_order_relaxed) != order) return 0;
            *time = v;
            return 1;
        }
        if (seq > order) return 0;
        if (i < LOCK_SPINS) cpu_relax();
        else sched_yield();
    }
    return 0;
}

uint64_t xt_lock_release(xt_thread *t, uint32_t lock, uint64_t *now)
{
    if (lock == ELG_NO_ID) return 0;
    xt_lock *l = &locks[lock];
    uint64_t order = pop_held(t, lock);
    if (!order || !l->ring) return order ? order : atomic_load(&l->order); /* untracked: best guess */
    /* Publish the release first, then look for a successor (seq_cst on both sides, like Dekker's
     * algorithm): either the successor sees this time and acquires no earlier, or we see its
     * acquisition here and stamp the release no later than it. */
    xt_lock_slot *s = &l->ring[order % LOCK_RING];
    atomic_store_explicit(&s->rel_time, *now, memory_order_relaxed);
    atomic_store(&s->rel_seq, order);
    if (atomic_load(&l->order) > order) {
        /* the lock changed hands before this callback ran: the release really happened before the
         * successor's acquisition, so take that time (the exact release instant is unknown; it lies
         * between our last event and the successor's acquisition, within ~ns under contention) */
        uint64_t acq, floor = own_floor(t);
        if (acquisition_time(l, order + 1, &acq)) {
            if (acq < *now) *now = acq;
        } else {
            *now = floor; /* successor unknown (we fell far behind): our last event is a safe bound */
        }
        /* this thread's own times never go backwards: keep the later of the two (if the successor's
         * stamp is earlier than our last event, clocks differ by ns; the order is still right) */
        if (*now < floor) *now = floor;
    }
    return order;
}
