/* The exact result of one output element, and how far a correct strategy may
 * legitimately land from it: what "correct" means to the grader for an
 * elementwise exercise (rule.h). The CPU reference is one correct answer,
 * not the only one. */
#ifndef BWLAB_EXACT_H
#define BWLAB_EXACT_H
#include "element.h"

typedef struct {
    double value;  /* the exact result (NaN, +-Inf possible), computed in double */
    double slack;  /* extra distance allowed beyond rounding value once to the output type */
} bw_exact;

/* Is got (bits of type t) an acceptable result for e: within e.slack plus half
 * an ulp of t (the rounding every strategy must do; the ulp where got lies,
 * or where the exact value plus slack lies if that is smaller) of e.value;
 * NaN only for NaN; +-Inf only where e.value reaches t's overflow threshold
 * (within slack). */
int bw_exact_accepts_type(bw_type t, bw_exact e, uint32_t got);

/* The same for a bf16 result. */
int bw_exact_accepts(bw_exact e, bf16_t got);

/* The spacing of bf16 numbers at magnitude m (bw_type_ulp_at for bf16). */
double bf16_ulp_at(double m);

/* Slack for float intermediates: a multiply and an add in float each round
 * by at most 2^-24 relative; 2^-22 leaves room for either order. */
#define BW_FLOAT_SLACK 0x1p-22

#endif
