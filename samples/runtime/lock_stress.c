/* lock_stress.c - lock hand-over under contention: 4 threads take an unnamed critical section, a
 * named critical section and an omp_lock_t ITER times each (default 3000), with bodies of a few
 * instructions, so the next holder's acquisition usually follows the previous release within
 * nanoseconds.  The runtime test (tests/runtime/test_lock_recording.py) checks that every lock's
 * acquisition orders are 1..n, each release carries its holder's order, and no acquisition is
 * stamped before the previous holder's release.  Prints the three counters (each 4 * ITER). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int iter = argc > 1 ? atoi(argv[1]) : 3000;
    long unnamed = 0, named = 0, locked = 0;
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel num_threads(4)
    {
        for (int i = 0; i < iter; i++) {
#pragma omp critical
            unnamed++;
#pragma omp critical(counter)
            named++;
            omp_set_lock(&lock);
            locked++;
            omp_unset_lock(&lock);
        }
    }
    omp_destroy_lock(&lock);
    printf("%ld %ld %ld\n", unnamed, named, locked);
    return 0;
}
