/* An elementwise exercise's fp16 and fp32 input values: the bf16 value
 * classes of inputs.c (random, special, cancel) with each type's own range
 * and every mantissa bit random. */
#include <math.h>
#include <string.h>
#include "values.h"

typedef struct {
    int mant;        /* stored mantissa bits */
    int bias, max_biased;  /* exponent bias; the largest finite exponent field */
} layout;

static layout layout_of(bw_type t)
{
    return t == BW_F32 ? (layout){23, 127, 254} : (layout){10, 15, 30};
}

static uint32_t make_value(bw_type t, uint64_t sign, int biased_exponent, uint64_t mantissa)
{
    layout l = layout_of(t);
    uint32_t sign_bit = t == BW_F32 ? 31u : 15u;
    return (uint32_t)(((sign & 1u) << sign_bit) | ((uint64_t)biased_exponent << l.mant) |
                      (mantissa & ((UINT64_C(1) << l.mant) - 1u)));
}

/* A normal value of magnitude 2^-8 .. 2^8, random sign and mantissa. */
static uint32_t random_float(bw_type t, uint64_t h)
{
    return make_value(t, h, layout_of(t).bias - 8 + (int)((h >> 1) % 16u), h >> 8);
}

/* NaNs as kernels meet them; none quiets into the type's poison. */
static const uint32_t nan_f32[] = {0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0xFFFFFFFFu,
                                   0x7FFFFFFFu, 0xFF800001u, 0x7FA50000u, 0xFFC00000u};
static const uint32_t nan_f16[] = {0x7E00u, 0xFE01u, 0x7C01u, 0xFFFFu,
                                   0x7FFFu, 0xFC01u, 0x7D25u, 0xFE00u};

static uint32_t special_float(bw_type t, uint64_t h)
{
    layout l = layout_of(t);
    uint64_t bits = h >> 8;
    uint64_t man = bits >> 4;
    switch ((h >> 1) % 16u) {
    case 0: return make_value(t, h, 0, 0);                               /* +-0 */
    case 1:
    case 2: return make_value(t, h, 0, man | 1u);                        /* subnormal */
    case 3: return make_value(t, h, 1 + (int)(bits % 3u), man);          /* products underflow */
    case 4:
    case 5: return make_value(t, h, l.max_biased - (int)(bits % 2u), man); /* near the top */
    case 6: return make_value(t, h, l.max_biased + 1, 0);                /* +-Inf */
    case 7: return t == BW_F32 ? nan_f32[bits % 8u] : nan_f16[bits % 8u];
    default: return random_float(t, bits);
    }
}

static double value_of(bw_type t, uint32_t bits) { return bw_elem_to_double(t, bits); }

/* As inputs.c's agree_on_overflow: where alpha * x is near or past the
 * type's range and y is huge or Inf of the other sign, a fused multiply-add
 * and a product rounded first disagree legitimately; y takes the product's
 * sign. */
static uint32_t agree_on_overflow(bw_type t, float alpha, uint32_t x, uint32_t y)
{
    layout l = layout_of(t);
    double product = (double)alpha * value_of(t, x);
    int y_exp = (int)((y >> l.mant) & (uint32_t)(l.max_biased + 1));
    double top = ldexp(1.0, l.max_biased - l.bias);
    if (bw_elem_is_inf(t, x) || isnan(product) || fabs(product) < top || y_exp < l.max_biased - 1)
        return y;
    uint32_t sign_bit = t == BW_F32 ? 0x80000000u : 0x8000u;
    return (y & ~sign_bit) | (product < 0 ? sign_bit : 0u);
}

/* x such that |alpha * x| lands in 2^-8 .. 2^8, when the type's range allows. */
static uint32_t cancel_x(bw_type t, float alpha, uint64_t h)
{
    layout l = layout_of(t);
    if (alpha == 0.0f || !isfinite(alpha))
        return random_float(t, h);
    int ea;
    frexpf(alpha, &ea);
    int e = -8 + (int)((h >> 1) % 16u) - (ea - 1);
    if (e < 1 - l.bias)
        e = 1 - l.bias;
    if (e > l.max_biased - l.bias)
        e = l.max_biased - l.bias;
    return make_value(t, h, e + l.bias, h >> 8);
}

/* A value a few ulps from -p, so that p + it cancels. */
static uint32_t cancel_partner(bw_type t, double p, uint64_t h)
{
    if (p == 0.0 || !isfinite(p))
        return random_float(t, h);
    uint32_t v = bw_elem_from_float(t, (float)-p);
    uint32_t sign_bit = t == BW_F32 ? 0x80000000u : 0x8000u;
    uint32_t top = t == BW_F32 ? 0x7F7FFFFFu : 0x7BFFu;   /* the largest finite magnitude */
    int64_t moved = (int64_t)(v & ~sign_bit) + (int64_t)(h % 7u) - 3;
    if (moved >= 1 && moved <= (int64_t)top)
        v = (v & sign_bit) | (uint32_t)moved;
    return v;
}

void bw_values_float(const bw_fill_ctx *f, int64_t begin, int64_t end)
{
    const bw_exercise *ex = f->ex;
    float alpha = f->c->alpha;
    for (int64_t i = begin; i < end; i++) {
        uint32_t first = 0;
        bw_type first_type = BW_F32;
        int role = 0;
        for (int k = 0; k < ex->n_arrays; k++) {
            if (!bw_exercise_is_input(ex, k))
                continue;
            bw_type t = ex->arrays[k].type;
            uint64_t h = value_hash(f, k, i);
            uint32_t v;
            switch (f->c->values) {
            case BW_VALUES_SPECIAL:
                v = special_float(t, h);
                if (role == 1 && ex->uses_alpha && t == first_type)
                    v = agree_on_overflow(t, alpha, first, v);
                break;
            case BW_VALUES_CANCEL:
                if (role == 0)
                    v = ex->uses_alpha ? cancel_x(t, alpha, h) : random_float(t, h);
                else if (role == 1)
                    v = cancel_partner(t, (ex->uses_alpha ? (double)alpha : 1.0) *
                                              value_of(first_type, first), h);
                else
                    v = random_float(t, h);
                break;
            default:
                v = random_float(t, h);
                break;
            }
            if (role == 0) {
                first = v;
                first_type = t;
            }
            role++;
            bw_elem_store(t, f->arrays[k], i - f->origin, v);
        }
    }
}
