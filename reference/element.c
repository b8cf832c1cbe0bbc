/* See element.h. One table of each type's format; the functions read it. */
#include <math.h>
#include "element.h"

typedef struct {
    const char *name;
    int mantissa_bits;      /* stored fraction bits: 7, 10, 23 */
    int max_exp;            /* the largest finite number lies in [2^max_exp, 2^(max_exp+1)) */
    int min_exp;            /* the smallest normal number is 2^min_exp */
    uint32_t abs_mask, inf_bits, sign_bit;
    uint32_t poison;
} format;

static const format formats[BW_N_TYPES] = {
    {"bf16", 7, 127, -126, 0x7FFFu, 0x7F80u, 0x8000u, 0x7FD7u},
    {"fp16", 10, 15, -14, 0x7FFFu, 0x7C00u, 0x8000u, 0x7ED7u},
    {"fp32", 23, 127, -126, 0x7FFFFFFFu, 0x7F800000u, 0x80000000u, 0x7FD7D7D7u},
};

const char *bw_type_name(bw_type t) { return formats[t].name; }
uint32_t bw_type_poison(bw_type t) { return formats[t].poison; }

double bw_elem_to_double(bw_type t, uint32_t bits)
{
    switch (t) {
    case BW_BF16: return (double)bf16_to_float((bf16_t)bits);
    case BW_F16: return (double)fp16_to_float((fp16_t)bits);
    case BW_F32: {
        float f;
        memcpy(&f, &bits, sizeof f);
        return (double)f;
    }
    }
    return NAN;
}

uint32_t bw_elem_from_float(bw_type t, float f)
{
    switch (t) {
    case BW_BF16: return bf16_from_float(f);
    case BW_F16: return fp16_from_float(f);
    case BW_F32: {
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        return u;
    }
    }
    return 0;
}

int bw_elem_is_nan(bw_type t, uint32_t bits)
{
    return (bits & formats[t].abs_mask) > formats[t].inf_bits;
}

int bw_elem_is_inf(bw_type t, uint32_t bits)
{
    return (bits & formats[t].abs_mask) == formats[t].inf_bits;
}

int bw_elem_is_tiny(bw_type t, uint32_t bits)
{
    return (bits & formats[t].inf_bits) == 0;
}

int bw_elem_sign(bw_type t, uint32_t bits) { return (bits & formats[t].sign_bit) != 0; }

double bw_type_ulp_at(bw_type t, double m)
{
    const format *f = &formats[t];
    m = fabs(m);
    if (m < ldexp(1.0, f->min_exp))
        return ldexp(1.0, f->min_exp - f->mantissa_bits);
    if (m >= ldexp(1.0, f->max_exp))
        return ldexp(1.0, f->max_exp - f->mantissa_bits);
    int e;
    frexp(m, &e);            /* m = g * 2^e with 0.5 <= g < 1 */
    return ldexp(1.0, e - 1 - f->mantissa_bits);
}

double bw_type_overflow(bw_type t)
{
    const format *f = &formats[t];
    return ldexp(1.0, f->max_exp + 1) - ldexp(1.0, f->max_exp - f->mantissa_bits - 1);
}

double bw_type_max(bw_type t)
{
    const format *f = &formats[t];
    return ldexp(1.0, f->max_exp + 1) - ldexp(1.0, f->max_exp - f->mantissa_bits);
}
