#include <math.h>
#include "exact.h"

double bf16_ulp_at(double m) { return bw_type_ulp_at(BW_BF16, m); }

int bw_exact_accepts_type(bw_type t, bw_exact e, uint32_t got)
{
    double g = bw_elem_to_double(t, got);
    double overflow = bw_type_overflow(t);
    if (isnan(e.value))
        return isnan(g);
    if (isnan(g))
        return 0;
    if (isinf(g))
        return signbit(g) == signbit(e.value) && fabs(e.value) >= overflow - e.slack;
    if (isinf(e.value) || fabs(e.value) >= overflow + e.slack)
        return 0;
    /* A correct kernel returns RN(v) for some v within slack of the exact
     * value, so |got - v| is at most half the spacing between |got| and |v|.
     * That spacing is the one at the smaller of the two (at a power of two the
     * spacing below is half the spacing above), and |v| <= |exact| + slack. */
    double m = fmin(fabs(g), fabs(e.value) + e.slack);
    return fabs(g - e.value) <= 0.5 * bw_type_ulp_at(t, m) + e.slack;
}

int bw_exact_accepts(bw_exact e, bf16_t got) { return bw_exact_accepts_type(BW_BF16, e, got); }
