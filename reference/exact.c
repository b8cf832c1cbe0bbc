#include <math.h>
#include "exact.h"

/* Values at or past this round to Inf under round-to-nearest-even: the
 * midpoint between the largest finite bf16, (2 - 2^-7) * 2^127, and 2^128. */
#define BF16_OVERFLOW_THRESHOLD (0x1p128 - 0x1p119)

/* Slack for float intermediates: a multiply and an add in float each round
 * by at most 2^-24 relative; 2^-22 leaves room for either order. */
#define FLOAT_SLACK 0x1p-22

double bf16_ulp_at(double m)
{
    m = fabs(m);
    if (m < 0x1p-126)
        return 0x1p-133;
    if (m >= 0x1p127)
        return 0x1p120;
    int e;
    frexp(m, &e);            /* m = f * 2^e with 0.5 <= f < 1 */
    return ldexp(1.0, e - 1 - 7);
}

bw_exact haxpy_exact(float alpha, const bf16_t *in)
{
    double x = bf16_to_float(in[0]);
    double y = bf16_to_float(in[1]);
    double p = (double)alpha * x;   /* exact: 24 + 8 significant bits */
    bw_exact e;
    e.value = p + y;
    /* A correct kernel may round alpha to bf16 first (bf16 FMA instructions
     * take bf16 operands): that moves the product by |x| * |alpha - bf16(alpha)|. */
    double alpha_b = bf16_to_float(bf16_from_float(alpha));
    double alpha_err = isfinite(alpha_b) ? fabs((double)alpha - alpha_b) : 0.0;
    e.slack = fabs(x) * alpha_err + FLOAT_SLACK * (fabs(p) + fabs(y));
    if (!isfinite(e.slack))
        e.slack = 0.0;
    return e;
}

bw_exact vector_sum_exact(float alpha, const bf16_t *in)
{
    (void)alpha;
    double a = bf16_to_float(in[0]);
    double b = bf16_to_float(in[1]);
    bw_exact e;
    e.value = a + b;
    e.slack = FLOAT_SLACK * (fabs(a) + fabs(b));
    if (!isfinite(e.slack))
        e.slack = 0.0;
    return e;
}

int bw_exact_accepts(bw_exact e, bf16_t got)
{
    double g = bf16_to_float(got);
    if (isnan(e.value))
        return isnan(g);
    if (isnan(g))
        return 0;
    if (isinf(g))
        return signbit(g) == signbit(e.value) &&
               fabs(e.value) >= BF16_OVERFLOW_THRESHOLD - e.slack;
    if (isinf(e.value) || fabs(e.value) >= BF16_OVERFLOW_THRESHOLD + e.slack)
        return 0;
    /* A correct kernel returns RN(v) for some v within slack of the exact
     * value, so |got - v| is at most half the spacing between |got| and |v|.
     * That spacing is the one at the smaller of the two (at a power of two the
     * spacing below is half the spacing above), and |v| <= |exact| + slack. */
    double m = fmin(fabs(g), fabs(e.value) + e.slack);
    return fabs(g - e.value) <= 0.5 * bf16_ulp_at(m) + e.slack;
}
