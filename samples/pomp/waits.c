/* waits.c - wait states by design, in sleep units of UNIT microseconds, on 3 threads.
 * Per repetition (counted by hand from the sleeps; see tests/instrument/test_pomp_vs_ompt.py):
 *   explicit barriers: 2+1+0 units (staggered arrival) twice            = 6 units
 *   implicit barriers: loop end 0+1+2, parallel end 2+1+0                = 6 units
 *   critical contention: 3 threads arrive together, each holds 1 unit    = 0+1+2 = 3 units
 *   lock API contention: the same with omp_set_lock                      = 3 units
 * Built with expert-cc (POMP, GCC/libgomp) and with clang + expert-run (OMPT, libomp), the analyses
 * must agree. */
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#ifndef UNIT
#define UNIT 10000
#endif
#define REPS 2

int main(void)
{
    omp_lock_t lock;
    omp_init_lock(&lock);
    int in_critical = 0, in_lock = 0;
    for (int rep = 0; rep < REPS; rep++) {
#pragma omp parallel num_threads(3)
        {
            int me = omp_get_thread_num();
            usleep(UNIT * me);
#pragma omp barrier
#pragma omp for schedule(static, 1)
            for (int i = 0; i < 3; i++) usleep(UNIT * (2 - i));
#pragma omp critical
            {
                usleep(UNIT);
                in_critical++;
            }
#pragma omp barrier
            omp_set_lock(&lock);
            usleep(UNIT);
            in_lock++;
            omp_unset_lock(&lock);
        }
    }
    omp_destroy_lock(&lock);
    printf("%d %d\n", in_critical, in_lock);
    return 0;
}
