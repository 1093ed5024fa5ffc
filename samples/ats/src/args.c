/* args.c - the command line every property program shares (see docs/ats.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ats.h"

static void usage(const char *prog, const char *why)
{
    if (why) fprintf(stderr, "%s: %s\n", prog, why);
    fprintf(stderr,
            "usage: %s [-r REPS] [-d DISTR] [-l LOW] [-m MED] [-H HIGH] [-n COUNT] [-p PEAK] [-B]\n"
            "  -r REPS   repetitions of the property's body (default 1)\n"
            "  -d DISTR  same, cyclic2, block2, linear, peak, cyclic3, block3 (default cyclic2)\n"
            "  -l -m -H  seconds of work: low, medium, high (defaults 0.01, 0.02, 0.05)\n"
            "  -n COUNT  iterations / sections / operations, per property (default 1000)\n"
            "  -p PEAK   participant that gets HIGH under the peak distribution (default 0)\n"
            "  -B        run the balanced twin: the same program without the performance problem\n",
            prog);
    exit(2);
}

static double num(const char *prog, char opt, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || v < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "option -%c needs a non-negative number, got '%s'", opt, s);
        usage(prog, msg);
    }
    return v;
}

void ats_parse_args(int argc, char **argv, const char *prog, ats_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->reps = 1, a->distr = "cyclic2", a->low = 0.01, a->med = 0.02, a->high = 0.05, a->n = 1000;
    int c;
    while ((c = getopt(argc, argv, "r:d:l:m:H:n:p:Bh")) != -1) {
        switch (c) {
        case 'r': a->reps = (int)num(prog, 'r', optarg); break;
        case 'd': a->distr = optarg; break;
        case 'l': a->low = num(prog, 'l', optarg); break;
        case 'm': a->med = num(prog, 'm', optarg); break;
        case 'H': a->high = num(prog, 'H', optarg); break;
        case 'n': a->n = (int)num(prog, 'n', optarg); break;
        case 'p': a->peak = (int)num(prog, 'p', optarg); break;
        case 'B': a->balanced = 1; break;
        case 'h': usage(prog, NULL); break;
        default: usage(prog, "unknown option");
        }
    }
    if (optind < argc) {
        char msg[160];
        snprintf(msg, sizeof msg, "unexpected argument '%s'", argv[optind]);
        usage(prog, msg);
    }
    a->df = ats_distr_by_name(a->distr);
    if (!a->df) {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown distribution '%s'", a->distr);
        usage(prog, msg);
    }
    if (a->balanced) { /* the twin: everybody gets the high amount, nobody waits */
        a->df = df_same;
        a->dd.v1.val = a->high;
    } else if (a->df == df_same) {
        a->dd.v1.val = a->high;
    } else if (a->df == df_cyclic3 || a->df == df_block3) {
        a->dd.v3.low = a->low, a->dd.v3.med = a->med, a->dd.v3.high = a->high;
    } else if (a->df == df_peak) {
        a->dd.pk.low = a->low, a->dd.pk.high = a->high, a->dd.pk.n = a->peak;
    } else {
        a->dd.v2.low = a->low, a->dd.v2.high = a->high;
    }
}
