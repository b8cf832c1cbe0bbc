/* Comparing a student's output with the CPU reference, in bf16 ulps.
 *
 * Tolerance (derived in handout/README.md, "How answers are checked"):
 *   |got - expected| <= ulp(expected) + ulp(alpha * x[i])     (haxpy)
 *   |got - expected| <= ulp(expected)                         (no alpha)
 * with values taken as exact doubles, +-Inf counted as +-2^128 (one ulp past
 * the largest finite bf16), and ulp(v) the bf16 spacing at |v| (2^-133 below
 * the normal range, 2^120 for Inf). NaN expected needs NaN (any payload);
 * NaN where a number was expected is always wrong; BW_POISON is "not written". */
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
/* product: alpha * x[i] as a double (0 when the exercise has no product term). */
int bw_element_ok(bf16_t expected, bf16_t got, double product);

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

/* x: the array the product term uses (arrays[0]) when ex->uses_alpha, else NULL. */
void bw_compare_output(const bw_exercise *ex, int64_t n, float alpha, const bf16_t *x,
                       const bf16_t *expected, const bf16_t *got,
                       bw_compare_result *r, int threads);

/* Elements of a and b that differ bitwise: count, first index (-1 if none). */
int64_t bw_count_changed(const bf16_t *a, const bf16_t *b, int64_t n, int64_t *first,
                         int threads);

/* FNV-1a of n elements, to tell two runs' outputs apart. */
uint64_t bw_hash_elements(const bf16_t *v, int64_t n);

#endif
