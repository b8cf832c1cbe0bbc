/* A reduction's benchmark changes a few elements of its input before every
 * timed call, at places and to values drawn fresh for that call, so that
 * only a read of all of x can learn the call's sum. Without it
 * each call's sum was the validated call's, or its negation: a remembered
 * sum and the sign bit of any one element (the negation flips every
 * element's, zeros too) gave every later call's result; so did the last
 * call's result, still in *sum, negated; and, with the public seed, the
 * sum itself (tests/corpus/reduce_memo_sign, reduce_negate_last,
 * reduce_public_sum). Plain C, shared by the worker and its tests. */
#ifndef BWLAB_PERTURB_H
#define BWLAB_PERTURB_H
#include <stdint.h>
#include "protocol.h"

#define BW_PERTURB_MAX 16   /* elements changed a call, at most */

typedef struct {
    int count;
    int64_t pos[BW_PERTURB_MAX];    /* distinct, in the rotated array */
    uint32_t bits[BW_PERTURB_MAX];  /* their new values, in the array's type */
    double delta;                   /* how far the sum moves: new values less old */
} bw_perturb;

/* count (at most BW_PERTURB_MAX) elements of g's array, rotated by r (element
 * i holds element (i + r) mod n of the unrotated data) and XORed with flip,
 * to be set to positive multiples of 2^-9 below 1/2 (bf16, fp16 and fp32
 * hold them exactly), drawn from *rng. unrotated: the array's data before
 * any rotation. 0, or -1 when g's array cannot take it (fewer than 4 *
 * count elements). */
int bw_perturb_plan(uint64_t *rng, const bw_array_geom *g, const void *unrotated, int64_t r,
                    uint32_t flip, int count, bw_perturb *out);

#endif
