/* reduce_sum, the sum of n bf16 values as one fp32: what counts as correct
 * (rule.h).
 *
 * A float sum in any order is correct. Adding n terms in float, each term
 * goes through at most d additions on its way to the result (d: the depth
 * of the summation tree: n - 1 for one running sum, about log2 n for a
 * tree, the loop length plus the tree depth for grid-stride partial sums),
 * and each addition's rounding is at most 2^-24 of the partial sum it
 * makes, itself at most sum|x|. So the result lies within d * 2^-24 * sum|x|
 * of the exact sum. The bound 2^-10 * sum|x| allows d = 2^14: every launch
 * that gives each thread at most 16,384 elements of a sum, whatever the
 * grid, tree or atomics after. A bf16 running sum rounds by 2^-8 of the
 * partial sum at every step, and loses whole terms once the sum is 256
 * times larger: the cases of many positive terms show it.
 *
 * Where every term is a multiple of 2^L and sum|x| <= 2^(24 + L), every
 * partial sum in any order is a float exactly: then the bound is 0, and a
 * lost or doubled element shows as an exact difference (the cases "exact"
 * and "spikes" are built so). */
#include <math.h>
#include "rule.h"

#define ANY_ORDER_BOUND 0x1p-10

static double term(const float *scalars, const double *in)
{
    (void)scalars;
    return in[0];
}

static double bound(const bw_sum_facts *f)
{
    int exact = f->abs_sum == 0.0 ||
                (f->min_lsb >= -149 && f->abs_sum <= ldexp(1.0, 24 + f->min_lsb));
    return exact ? 0.0 : ANY_ORDER_BOUND * f->abs_sum;
}

const bw_rule reduce_sum_rule = {
    .term = term,
    .bound = bound,
    .correct = "the sum of x within 2^-10 * sum|x[i]| (any float summation order), rounded "
               "to fp32; exact where every partial sum is a float",
};
