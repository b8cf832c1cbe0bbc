/* bfloat16 <-> float conversion on the CPU, stored as uint16_t. Plain C11. */
#ifndef BWLAB_BF16_H
#define BWLAB_BF16_H
#include <stdint.h>

typedef uint16_t bf16_t;

/* Exact: a bf16 is the top half of a float. */
float bf16_to_float(bf16_t h);

/* Round to nearest, ties to even. NaN stays NaN (made quiet, sign and the
 * top payload bits kept); values past the largest finite bf16 round to +-Inf;
 * +-0 and subnormals are kept (no flush to zero). */
bf16_t bf16_from_float(float f);

int bf16_is_nan(bf16_t h);
int bf16_is_inf(bf16_t h);

#endif
