/* pthreads.c - POSIX threads with designed behaviour (tests/runtime/test_pthreads.py knows them).
 *   contention [ROUNDS]  4 threads (start routine contention_worker) meet at a barrier, then each takes one
 *                        mutex and holds it for 1 unit: the k-th to get it waited k units, 0 + 1 + 2 + 3 = 6
 *                        units of mutex contention per round (default 3 rounds: 18 units), in
 *                        contention_worker/pthread_mutex_lock
 *   cond [ITEMS]         a producer makes an item every unit and signals; the consumer waits for each in
 *                        pthread_cond_wait (ITEMS, default 5)
 *   recursive            a recursive mutex locked twice by its holder, a failed and a successful trylock
 *   churn [N]            N short-lived threads (default 400), created and joined two at a time, each taking a
 *                        mutex once
 *   all                  every case above with its default (the default)
 * A unit is UNIT_MS (20) ms of sleep.  Prints the number of critical sections entered. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UNIT_MS 20
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long entered;

/* ---- contention */
static pthread_barrier_t round_start;
static int rounds = 3;

static void *contention_worker(void *arg)
{
    (void)arg;
    for (int r = 0; r < rounds; r++) {
        pthread_barrier_wait(&round_start);
        pthread_mutex_lock(&lock);
        entered++;
        usleep(UNIT_MS * 1000);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void contention(int n_rounds)
{
    rounds = n_rounds;
    pthread_t th[4];
    pthread_barrier_init(&round_start, NULL, 4);
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, contention_worker, NULL);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&round_start);
}

/* ---- condition variable */
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static int items, items_total;

static void *producer(void *arg)
{
    (void)arg;
    for (int i = 0; i < items_total; i++) {
        usleep(UNIT_MS * 1000);
        pthread_mutex_lock(&lock);
        items++;
        entered++;
        pthread_cond_signal(&ready);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (int i = 0; i < items_total; i++) {
        pthread_mutex_lock(&lock);
        while (items == 0) pthread_cond_wait(&ready, &lock);
        items--;
        entered++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void cond(int n)
{
    items_total = n;
    pthread_t p, c;
    pthread_create(&c, NULL, consumer, NULL);
    pthread_create(&p, NULL, producer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
}

/* ---- recursive mutex, trylock */
static void recursive(void)
{
    pthread_mutex_t rec;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rec, &a);
    pthread_mutex_lock(&rec);
    pthread_mutex_lock(&rec); /* its holder again: no second acquisition */
    entered++;
    pthread_mutex_unlock(&rec);
    pthread_mutex_unlock(&rec);
    pthread_mutex_destroy(&rec);
    pthread_mutex_lock(&lock);
    if (pthread_mutex_trylock(&lock) == 0) abort(); /* a normal mutex held by us: trylock fails */
    pthread_mutex_unlock(&lock);
    if (pthread_mutex_trylock(&lock) != 0) abort();
    entered++;
    pthread_mutex_unlock(&lock);
}

/* ---- churn */
static void *short_lived(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    entered++;
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void churn(int n)
{
    for (int i = 0; i < n; i += 2) {
        pthread_t a, b;
        pthread_create(&a, NULL, short_lived, NULL);
        pthread_create(&b, NULL, short_lived, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
    }
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    int all = strcmp(what, "all") == 0;
    if (all || strcmp(what, "contention") == 0) contention(n > 0 ? n : 3);
    if (all || strcmp(what, "cond") == 0) cond(n > 0 ? n : 5);
    if (all || strcmp(what, "recursive") == 0) recursive();
    if (all || strcmp(what, "churn") == 0) churn(n > 0 ? n : 400);
    printf("%ld\n", entered);
    return 0;
}
