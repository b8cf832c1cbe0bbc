/* The exact result of one output element, and how far a correct strategy may
 * legitimately land from it. This is what "correct" means to the grader; the
 * bf16 reference (ref_kernels.h) is one correct answer, not the only one. */
#ifndef BWLAB_EXACT_H
#define BWLAB_EXACT_H
#include "bf16.h"

typedef struct {
    double value;  /* the exact result (NaN, +-Inf possible), computed in double */
    double slack;  /* extra distance allowed beyond rounding value once to bf16 */
} bw_exact;

/* in[] holds element i of every input array in table order (for haxpy:
 * x[i], then y[i] as it was before the call). */
bw_exact haxpy_exact(float alpha, const bf16_t *in);
bw_exact vector_sum_exact(float alpha, const bf16_t *in);

/* Is got an acceptable bf16 for e: within e.slack plus half a bf16 ulp (the
 * rounding every strategy must do; the ulp where got lies, or where the exact
 * value plus slack lies if that is smaller) of e.value; NaN only for NaN; +-Inf
 * only where e.value reaches the overflow threshold (within slack). */
int bw_exact_accepts(bw_exact e, bf16_t got);

/* The spacing of bf16 numbers at magnitude m: 2^-133 below the normal range,
 * 2^(floor(log2 m) - 7) above it, 2^120 at and past 2^128 (Inf). */
double bf16_ulp_at(double m);

#endif
