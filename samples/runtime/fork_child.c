/* fork_child.c - forks a child that outlives its parent and ends with exit() (so at-exit handlers
 * run in it), while the parent records an OpenMP parallel region after the fork.  The child must
 * not write the parent's trace over the parent's.  The child keeps stdout open until it ends, so a
 * caller that reads stdout to its end waits for the child. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    int n = 0;
#pragma omp parallel num_threads(2)
#pragma omp atomic
    n++;
    fflush(stdout);
    if (fork() == 0) {
        usleep(300000); /* the parent has written its trace by now */
        printf("child done\n");
        exit(0);
    }
#pragma omp parallel num_threads(3)
#pragma omp atomic
    n++;
    printf("parent done %d\n", n);
    return 0;
}
