/* distr.c - distribution functions: how much work participant `me` of `sz` gets. */
#include <string.h>

#include "ats.h"

double df_same(int me, int sz, double scale, distr_t *dd)
{
    (void)me, (void)sz;
    return ((val1_distr_t *)dd)->val * scale;
}

double df_cyclic2(int me, int sz, double scale, distr_t *dd)
{
    (void)sz;
    val2_distr_t *d = dd;
    return (me % 2 == 0 ? d->low : d->high) * scale;
}

double df_block2(int me, int sz, double scale, distr_t *dd)
{
    val2_distr_t *d = dd;
    return (me < sz / 2 ? d->low : d->high) * scale; /* lower half low, upper half high */
}

double df_linear(int me, int sz, double scale, distr_t *dd)
{
    val2_distr_t *d = dd;
    if (sz < 2) return d->low * scale;
    return (d->low + (d->high - d->low) * (double)me / (double)(sz - 1)) * scale;
}

double df_peak(int me, int sz, double scale, distr_t *dd)
{
    (void)sz;
    peak_distr_t *d = dd;
    return (me == d->n ? d->high : d->low) * scale;
}

double df_cyclic3(int me, int sz, double scale, distr_t *dd)
{
    (void)sz;
    val3_distr_t *d = dd;
    int k = me % 3;
    return (k == 0 ? d->low : k == 1 ? d->med : d->high) * scale;
}

double df_block3(int me, int sz, double scale, distr_t *dd)
{
    val3_distr_t *d = dd;
    int k = sz > 0 ? me * 3 / sz : 0; /* thirds of the participants */
    return (k == 0 ? d->low : k == 1 ? d->med : d->high) * scale;
}

distr_func_t ats_distr_by_name(const char *name)
{
    static const struct { const char *name; distr_func_t f; } table[] = {
        {"same", df_same},   {"cyclic2", df_cyclic2}, {"block2", df_block2}, {"linear", df_linear},
        {"peak", df_peak},   {"cyclic3", df_cyclic3}, {"block3", df_block3},
    };
    for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0) return table[i].f;
    return NULL;
}
