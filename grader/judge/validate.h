/* Comparing a student's output with the CPU reference, element by element
 * (an elementwise exercise; check_elementwise.c runs it block by block).
 *
 * An element passes when it has the reference's bits, or when it is within
 * half an ulp of the output's type of the exact result plus the slack a
 * correct strategy may add (float intermediates, alpha rounded to bf16): see
 * reference/exact.h and handout/README.md, "How answers are checked". NaN
 * expected needs NaN (any payload); NaN where a number was expected is
 * always wrong; +-Inf only past the overflow threshold; the type's poison is
 * "not written". Errors are *reported* in ulps of the reference value, with
 * +-Inf counted as the next power of two past the type's range. */
#ifndef BWLAB_VALIDATE_H
#define BWLAB_VALIDATE_H
#include <stdint.h>
#include "bf16.h"
#include "exercise.h"

#define BW_REPORTED_MISMATCHES 8

/* The value as a double with +-Inf mapped to +-2^(max exponent + 1); NaN stays NaN. */
double bw_type_as_double(bw_type t, uint32_t bits);
/* Distance in ulps of expected (0 when equal or both NaN, INFINITY for NaN vs number). */
double bw_ulps_between_type(bw_type t, uint32_t expected, uint32_t got);

/* The bf16 forms of the above, and bf16's ulp (NaN for NaN). */
double bw_ulp(double magnitude);
double bw_bf16_as_double(bf16_t h);
double bw_ulps_between(bf16_t expected, bf16_t got);

/* in[]: element i of each input array in declaration order, as values;
 * expected: the reference's bits for it. */
int bw_element_ok(const bw_exercise *ex, const float *scalars, const double *in,
                  uint32_t expected, uint32_t got);

typedef struct {
    int64_t index;
    uint32_t expected, got;   /* bits of the output's type */
    double ulps;
} bw_mismatch;

typedef struct {
    int64_t mismatches;       /* elements outside tolerance (unwritten ones included) */
    int64_t unwritten;        /* elements still holding the poison */
    double max_ulps;          /* largest error over all elements, in ulps of expected */
    int64_t first_bad, last_bad;  /* -1 when none */
    int n_reported;
    bw_mismatch reported[BW_REPORTED_MISMATCHES];  /* the first mismatches by index */
} bw_compare_result;

void bw_compare_init(bw_compare_result *r);
/* The comparison of one block, elements index0 .. index0 + len - 1:
 * element j of inputs[k] (the k-th input array, in declaration order, of
 * its own type), of expected and of got (the output's type) is element
 * index0 + j. Adds what it finds to r; blocks merged in index order
 * (bw_compare_merge) give the same result as one bw_compare_output over
 * the whole range. */
void bw_compare_block(const bw_exercise *ex, const float *scalars, const void *const *inputs,
                      const void *expected, const void *got, int64_t index0, int64_t len,
                      bw_compare_result *r);
/* Appends later's findings (about higher indices) to r. */
void bw_compare_merge(bw_compare_result *r, const bw_compare_result *later);

/* inputs[k]: the k-th input array as it was before the call (for haxpy x,
 * then the original y). */
void bw_compare_output(const bw_exercise *ex, int64_t n, const float *scalars,
                       const void *const *inputs, const void *expected, const void *got,
                       bw_compare_result *r, int threads);

/* Elements of a and b (elem_bytes each) that differ bitwise: count, first
 * index (-1 if none). */
int64_t bw_count_changed_bytes(const void *a, const void *b, int64_t n, int elem_bytes,
                               int64_t *first, int threads);
/* The same for bf16 arrays. */
int64_t bw_count_changed(const bf16_t *a, const bf16_t *b, int64_t n, int64_t *first,
                         int threads);

/* FNV-1a of n elements, to tell two runs' outputs apart. */
uint64_t bw_hash_elements(const bf16_t *v, int64_t n);

#endif
