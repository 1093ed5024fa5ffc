/* omp_test_locks.c - omp_test_lock / omp_test_nest_lock that fail and succeed, on 2 threads, in a
 * fixed order (barriers between the steps).  What the trace must show (tests/runtime/test_lock_recording.py):
 *   simple lock:  thread 0 sets it (acquisition 1); thread 1 tests: fails (no acquisition);
 *                 thread 0 unsets; thread 1 tests: succeeds (acquisition 2), unsets.
 *   nest lock:    thread 0 sets it (acquisition 1); thread 1 tests: fails; thread 0 tests: nesting
 *                 count 2, and sets it once more (its own lock again: no new acquisitions); thread 0
 *                 unsets three times (one release, at the last); thread 1 tests: count 1
 *                 (acquisition 2), unsets.
 * So thread 0: omp_set_lock 1, omp_unset_lock 1, omp_set_nest_lock 2, omp_test_nest_lock 1,
 *              omp_unset_nest_lock 3; 2 acquisitions, 2 releases;
 *    thread 1: omp_test_lock 2, omp_unset_lock 1, omp_test_nest_lock 2, omp_unset_nest_lock 1;
 *              2 acquisitions (each lock's order 2), 2 releases.
 * Prints the test results: "0 1 0 2 1". */
#include <omp.h>
#include <stdio.h>

int main(void)
{
    omp_lock_t lock;
    omp_nest_lock_t nest;
    omp_init_lock(&lock);
    omp_init_nest_lock(&nest);
    int r[5] = {-1, -1, -1, -1, -1};
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num();
        if (me == 0) omp_set_lock(&lock);
#pragma omp barrier
        if (me == 1) r[0] = omp_test_lock(&lock); /* held by thread 0: fails */
#pragma omp barrier
        if (me == 0) omp_unset_lock(&lock);
#pragma omp barrier
        if (me == 1) {
            r[1] = omp_test_lock(&lock); /* free: succeeds */
            if (r[1]) omp_unset_lock(&lock);
        }
#pragma omp barrier
        if (me == 0) omp_set_nest_lock(&nest);
#pragma omp barrier
        if (me == 1) r[2] = omp_test_nest_lock(&nest); /* owned by thread 0: 0 */
#pragma omp barrier
        if (me == 0) {
            r[3] = omp_test_nest_lock(&nest); /* its own: nesting count 2 */
            omp_set_nest_lock(&nest);         /* count 3 */
            omp_unset_nest_lock(&nest);
            omp_unset_nest_lock(&nest);
            omp_unset_nest_lock(&nest);
        }
#pragma omp barrier
        if (me == 1) {
            r[4] = omp_test_nest_lock(&nest); /* free: 1 */
            if (r[4]) omp_unset_nest_lock(&nest);
        }
    }
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest);
    printf("%d %d %d %d %d\n", r[0], r[1], r[2], r[3], r[4]);
    return 0;
}
