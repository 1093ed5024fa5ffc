/* omp_nowait_end.c - worksharing constructs with nowait as the last statement of a parallel region,
 * so the next barrier is the region's own closing barrier, which must not nest into the construct.
 * 3 threads; regions in this order (tests/runtime/test_lock_recording.py knows them):
 *   1. for nowait (dynamic schedule, so GCC code shows the loop too) at the end, then 20 ms serial
 *   2. sections nowait at the end
 *   3. single nowait at the end
 *   4. for with its own barrier at the end (control: that barrier nests into the loop)
 * Prints the sum of what was written (1200 + 2 + 1 + 300 = 1503). */
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    static int a[1200], b[1200], sec[2], one;
#pragma omp parallel num_threads(3)
    {
#pragma omp for schedule(dynamic, 10) nowait
        for (int i = 0; i < 1200; i++) a[i] = 1;
    }
    usleep(20000);
#pragma omp parallel num_threads(3)
    {
#pragma omp sections nowait
        {
#pragma omp section
            sec[0] = 1;
#pragma omp section
            sec[1] = 1;
        }
    }
#pragma omp parallel num_threads(3)
    {
#pragma omp single nowait
        one = 1;
    }
#pragma omp parallel num_threads(3)
    {
#pragma omp for schedule(dynamic, 10)
        for (int i = 0; i < 300; i++) b[i] = 1;
    }
    long s = sec[0] + sec[1] + one;
    for (int i = 0; i < 1200; i++) s += a[i] + b[i];
    printf("%ld\n", s);
    return 0;
}
