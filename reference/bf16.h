/* bfloat16 <-> float conversion on the CPU, stored as uint16_t. Plain C11.
 * Inline, so that the loops of the reference and the checks vectorize. */
#ifndef BWLAB_BF16_H
#define BWLAB_BF16_H
#include <stdint.h>
#include <string.h>

typedef uint16_t bf16_t;

#define BF16_F32_ABS_MASK 0x7FFFFFFFu
#define BF16_F32_INF_BITS 0x7F800000u
#define BF16_ABS_MASK 0x7FFFu
#define BF16_INF_BITS 0x7F80u
#define BF16_QUIET_BIT 0x0040u /* top mantissa bit: float bit 22 lands here */

/* Exact: a bf16 is the top half of a float. */
static inline float bf16_to_float(bf16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f); /* memcpy, not a pointer cast: no aliasing UB */
    return f;
}

/* Round to nearest, ties to even. NaN stays NaN (made quiet, sign and the
 * top payload bits kept); values past the largest finite bf16 round to +-Inf;
 * +-0 and subnormals are kept (no flush to zero). */
static inline bf16_t bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);

    /* NaN first: the rounding add below could carry a NaN whose payload sits
     * only in the low 16 bits into the Inf pattern (or wrap the sign). */
    if ((u & BF16_F32_ABS_MASK) > BF16_F32_INF_BITS)
        return (bf16_t)((u >> 16) | BF16_QUIET_BIT);

    /* Round to nearest, ties to even, on the magnitude bits: adding just
     * under half a bf16 ulp, plus one when the kept part is odd, carries
     * exactly when the dropped half is above the midpoint, or at it with an
     * odd result. A carry out of the mantissa bumps the exponent, which is
     * the right answer, including FLT_MAX-ish values becoming Inf. Subnormals
     * follow the same rule, so nothing is flushed. The sign bit is never
     * reached: the largest finite magnitude plus 0x8000 stays below 2^31. */
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7FFFu + lsb;
    return (bf16_t)(u >> 16);
}

static inline int bf16_is_nan(bf16_t h) { return (h & BF16_ABS_MASK) > BF16_INF_BITS; }
static inline int bf16_is_inf(bf16_t h) { return (h & BF16_ABS_MASK) == BF16_INF_BITS; }

#endif
