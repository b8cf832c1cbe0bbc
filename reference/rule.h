/* What an exercise computes and what counts as correct: its rule, one const
 * bw_rule NAME_rule per exercise, defined beside its CPU reference in
 * reference/NAME.c (the exercise table, exercises/exercises.def, names it).
 * Which members a rule fills depends on the exercise's shape
 * (exercises/NAME/exercise.def):
 *
 *   ELEMENTWISE  reference + exact: output element i depends on element i of
 *                each input; correct is the exact value rounded once to the
 *                output's type, give or take the slack a correct strategy
 *                may add (exact.h).
 *   REDUCTION    term + bound: the output is the sum of one term per element;
 *                correct is within the bound of the exact sum, for every
 *                order of summation a correct program may choose.
 *   MATRIX       source: output element o is input element source(o), bit
 *                for bit (a transpose, a gather).
 *
 * Plain C11, no CUDA: the grader never runs student code. */
#ifndef BWLAB_RULE_H
#define BWLAB_RULE_H
#include <stdint.h>
#include "exact.h"

/* What the judge knows of a reduction's terms once it has summed them all,
 * in double, block by block in index order (exact for every sum the cases
 * build to be exact). */
typedef struct {
    int64_t n;
    double sum;          /* the terms' sum (finite terms only) */
    double abs_sum;      /* the sum of their magnitudes */
    int nan, pos_inf, neg_inf;  /* a NaN term, a +Inf, a -Inf */
    int min_lsb;         /* every finite term is a multiple of 2^min_lsb (INT32_MAX: all 0) */
} bw_sum_facts;

typedef struct {
    /* ELEMENTWISE: the reference over elements [0, n) of arrays (in the
     * declaration's order; an INOUT array holds its input on entry, an OUT
     * one the poison): one correct answer, bit for bit the one most kernels
     * give, so that nearly every element is checked by a compare. threads:
     * 1 for one thread, 0 for the default (parallel_for.h). */
    void (*reference)(int64_t n, const float *scalars, void *const *arrays, int threads);
    /* ELEMENTWISE: the exact result of one output element from in[], the
     * values of that element of each input array in declaration order. */
    bw_exact (*exact)(const float *scalars, const double *in);

    /* REDUCTION: element i's term from in[] as above (the sum: in[0]). */
    double (*term)(const float *scalars, const double *in);
    /* REDUCTION: how far from facts->sum a correct result may land, before
     * the rounding of the result itself to the output's type. */
    double (*bound)(const bw_sum_facts *facts);

    /* MATRIX: the index of the input element that output element o holds. */
    int64_t (*source)(int64_t o, int64_t rows, int64_t cols);

    /* One line for reports and run.py: what counts as correct. */
    const char *correct;
} bw_rule;

#endif
