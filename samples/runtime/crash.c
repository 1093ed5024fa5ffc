/* crash.c - records a few events, then dies of SIGSEGV (argument "segv") or abort() ("abort"). */
#include <expert.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    for (int i = 0; i < 5; i++) {
        EXPERT_REGION_ENTER(step, "step");
        EXPERT_REGION_EXIT(step);
    }
    EXPERT_REGION_ENTER(outer, "dying");
    if (argc > 1 && strcmp(argv[1], "abort") == 0) abort();
    raise(SIGSEGV);
    return 0;
}
