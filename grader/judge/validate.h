/* Comparing a student's output with the CPU reference.
 *
 * An element passes when it has the reference's bits, or when it is within
 * half a bf16 ulp of the exact result plus the slack a correct strategy may
 * add (float intermediates, alpha rounded to bf16): see reference/exact.h and
 * handout/README.md, "How answers are checked". NaN expected needs NaN (any
 * payload); NaN where a number was expected is always wrong; +-Inf only past
 * the overflow threshold; BW_POISON is "not written". Errors are *reported*
 * in ulps of the reference value, with +-Inf counted as +-2^128. */
#ifndef BWLAB_VALIDATE_H
#define BWLAB_VALIDATE_H
#include <stdint.h>
#include "bf16.h"
#include "exercise.h"

#define BW_REPORTED_MISMATCHES 8

double bw_ulp(double magnitude);
/* bf16 as a double with +-Inf mapped to +-2^128; NaN stays NaN. */
double bw_bf16_as_double(bf16_t h);
/* Distance in ulps of expected (0 when equal or both NaN, INFINITY for NaN vs number). */
double bw_ulps_between(bf16_t expected, bf16_t got);
/* in[]: element i of each input array in table order (haxpy: x[i], y[i] before
 * the call); expected: the reference's bits for it. */
int bw_element_ok(const bw_exercise *ex, float alpha, const bf16_t *in, bf16_t expected,
                  bf16_t got);

typedef struct {
    int64_t index;
    bf16_t expected, got;
    double ulps;
} bw_mismatch;

typedef struct {
    int64_t mismatches;       /* elements outside tolerance (unwritten ones included) */
    int64_t unwritten;        /* elements still holding BW_POISON */
    double max_ulps;          /* largest error over all elements, in ulps of expected */
    int64_t first_bad, last_bad;  /* -1 when none */
    int n_reported;
    bw_mismatch reported[BW_REPORTED_MISMATCHES];  /* the first mismatches by index */
} bw_compare_result;

void bw_compare_init(bw_compare_result *r);
/* The comparison of one block, elements index0 .. index0 + len - 1:
 * inputs[k][j], expected[j] and got[j] are element index0 + j. Adds what it
 * finds to r; blocks merged in index order (bw_compare_merge) give the same
 * result as one bw_compare_output over the whole range. */
void bw_compare_block(const bw_exercise *ex, float alpha, const bf16_t *const *inputs,
                      const bf16_t *expected, const bf16_t *got, int64_t index0, int64_t len,
                      bw_compare_result *r);
/* Appends later's findings (about higher indices) to r. */
void bw_compare_merge(bw_compare_result *r, const bw_compare_result *later);

/* inputs[k]: the k-th input array as it was before the call, in table order
 * (bw_exercise_n_inputs(ex) of them; for haxpy x, then the original y). */
void bw_compare_output(const bw_exercise *ex, int64_t n, float alpha,
                       const bf16_t *const *inputs,
                       const bf16_t *expected, const bf16_t *got,
                       bw_compare_result *r, int threads);

/* Elements of a and b that differ bitwise: count, first index (-1 if none). */
int64_t bw_count_changed(const bf16_t *a, const bf16_t *b, int64_t n, int64_t *first,
                         int threads);

/* FNV-1a of n elements, to tell two runs' outputs apart. */
uint64_t bw_hash_elements(const bf16_t *v, int64_t n);

#endif
