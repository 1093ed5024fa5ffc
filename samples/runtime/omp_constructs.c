/* omp_constructs.c - one of each OpenMP construct the runtime records, on 3 threads.
 * The test (tests/runtime) knows the counts: 1 parallel region, 2 loops (one nowait), 1 explicit
 * barrier, 1 critical, 1 omp_lock, 1 single, 1 master, 1 sections; a second parallel region after a
 * 20 ms serial pause (workers must not appear to wait in the first region's barrier through it). */
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    omp_lock_t lock;
    omp_init_lock(&lock);
    double s = 0;
#pragma omp parallel num_threads(3)
    {
#pragma omp for
        for (int i = 0; i < 300; i++) s += 0;
#pragma omp for nowait
        for (int i = 0; i < 300; i++) s += 0;
#pragma omp barrier
#pragma omp critical
        s += 1;
        omp_set_lock(&lock);
        s += 1;
        omp_unset_lock(&lock);
#pragma omp single
        s += 1;
#pragma omp master
        s += 1;
#pragma omp sections
        {
#pragma omp section
            s += 1;
#pragma omp section
            s += 1;
        }
    }
    usleep(20000);
#pragma omp parallel num_threads(3)
    {
        s += 0;
    }
    omp_destroy_lock(&lock);
    printf("%g\n", s);
    return 0;
}
