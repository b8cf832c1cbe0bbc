/* IEEE half precision (fp16) <-> float on the CPU, stored as uint16_t. Plain
 * C11, no compiler support for _Float16 needed. */
#ifndef BWLAB_FP16_H
#define BWLAB_FP16_H
#include <stdint.h>
#include <string.h>

typedef uint16_t fp16_t;

#define FP16_ABS_MASK 0x7FFFu
#define FP16_INF_BITS 0x7C00u
#define FP16_QUIET_BIT 0x0200u

/* Exact: every fp16 is a float. */
static inline float fp16_to_float(fp16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu, u;
    if (exp == 0x1Fu) {
        u = sign | 0x7F800000u | (man << 13);            /* Inf, NaN (payload kept) */
    } else if (exp != 0) {
        u = sign | ((exp + 127u - 15u) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;                                        /* +-0 */
    } else {                                             /* subnormal: normalize */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3FFu) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest, ties to even; past the largest finite fp16 (65504) to
 * +-Inf; subnormals kept; NaN stays NaN, made quiet, top payload bits kept. */
static inline fp16_t fp16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return (fp16_t)(sign | FP16_INF_BITS | FP16_QUIET_BIT | ((a >> 13) & 0x3FFu));
    if (a >= 0x477FF000u)   /* 65520 and up (Inf too): rounds to Inf */
        return (fp16_t)(sign | FP16_INF_BITS);
    if (a < 0x38800000u) {  /* below 2^-14: the subnormal range, spacing 2^-24 */
        if (a < 0x33000000u)                  /* at most 2^-25: rounds to 0 (2^-25 a tie to even 0) */
            return (fp16_t)sign;
        uint32_t man = (a & 0x7FFFFFu) | 0x800000u;
        int shift = 126 - (int)(a >> 23);     /* value = man * 2^(e-150); units of 2^-24 */
        uint32_t q = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (fp16_t)(sign | q);
    }
    /* Normal: drop 13 mantissa bits with the same carry trick as bf16. */
    uint32_t r = a - ((127u - 15u) << 23);
    r += 0xFFFu + ((r >> 13) & 1u);
    return (fp16_t)(sign | (r >> 13));
}

static inline int fp16_is_nan(fp16_t h) { return (h & FP16_ABS_MASK) > FP16_INF_BITS; }
static inline int fp16_is_inf(fp16_t h) { return (h & FP16_ABS_MASK) == FP16_INF_BITS; }

#endif
