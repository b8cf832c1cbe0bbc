/* bfloat16 <-> float on the CPU. A bf16 is the upper 16 bits of a float, so
 * widening is a shift and narrowing is a rounding of the low 16 bits. */
#include <string.h>
#include "bf16.h"

#define F32_ABS_MASK 0x7FFFFFFFu
#define F32_INF_BITS 0x7F800000u
#define BF16_ABS_MASK 0x7FFFu
#define BF16_INF_BITS 0x7F80u
#define BF16_QUIET_BIT 0x0040u /* top mantissa bit: float bit 22 lands here */

float bf16_to_float(bf16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f); /* memcpy, not a pointer cast: no aliasing UB */
    return f;
}

bf16_t bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);

    /* NaN first: the rounding add below could carry a NaN whose payload sits
     * only in the low 16 bits into the Inf pattern (or wrap the sign). */
    if ((u & F32_ABS_MASK) > F32_INF_BITS)
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

int bf16_is_nan(bf16_t h) { return (h & BF16_ABS_MASK) > BF16_INF_BITS; }

int bf16_is_inf(bf16_t h) { return (h & BF16_ABS_MASK) == BF16_INF_BITS; }
