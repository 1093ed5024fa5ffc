/* user_functions.c - compiled with -finstrument-functions: fib(5) calls, a filtered function, a user region. */
#include <expert.h>
#include <stdio.h>

int skipped_helper(int x) { return x + 1; }

int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int main(void)
{
    EXPERT_REGION_ENTER(phase, "phase one");
    int r = fib(5);
    for (int i = 0; i < 3; i++) r = skipped_helper(r);
    EXPERT_REGION_EXIT(phase);
    printf("%d\n", r);
    return 0;
}
