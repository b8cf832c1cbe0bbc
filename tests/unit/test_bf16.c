/* bf16 conversions checked against a slow, independent formulation in double
 * arithmetic: no bit tricks, just "find the two neighbours, take the nearer". */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "bf16.h"
#include "check_support.h"

/* Check's assertion macros log a mark point on every success, which is slow
 * in loops over millions of values: only call into Check on a failure. */
#define EXPECT(cond, ...)                \
    do {                                 \
        if (!(cond))                     \
            ck_abort_msg(__VA_ARGS__);   \
    } while (0)

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* The value a bf16 encodes, from its fields: sign, 8-bit exponent (bias 127),
 * 7-bit mantissa with an implicit 1 unless the exponent field is 0. */
static double bf16_value(uint16_t h)
{
    int e = (h >> 7) & 0xFF, m = h & 0x7F;
    double mag;
    if (e == 0xFF)
        mag = m == 0 ? INFINITY : NAN;
    else if (e == 0)
        mag = ldexp(m, -133); /* 2^-126 * m/128 */
    else
        mag = ldexp(128 + m, e - 134); /* 2^(e-127) * (128+m)/128 */
    return (h & 0x8000) ? -mag : mag;
}

/* Rounds the real number v (finite, not NaN) to a binary format with `prec`
 * significant bits, no grid finer than 2^qmin, overflowing at 2^emax; ties go
 * to the even multiple. Works on doubles, where every step here is exact. */
static double round_slow(double v, int prec, int qmin, int emax)
{
    if (v == 0)
        return v;
    double a = fabs(v);
    int E;
    (void)frexp(a, &E); /* a in [2^(E-1), 2^E) */
    int q = E - prec;   /* grid spacing 2^q in a's binade */
    if (q < qmin)
        q = qmin;
    double k = floor(ldexp(a, -q)); /* lower neighbour = k * 2^q */
    double lo = ldexp(k, q), hi = ldexp(k + 1, q);
    double dlo = a - lo, dhi = hi - a;
    double r;
    if (dlo < dhi)
        r = lo;
    else if (dhi < dlo)
        r = hi;
    else
        r = fmod(k, 2.0) == 0 ? lo : hi;
    if (r >= ldexp(1.0, emax))
        r = INFINITY;
    return copysign(r, v);
}

/* Bits of a double that holds an exact bf16 value (or +-Inf, +-0). */
static uint16_t bf16_encode(double r)
{
    uint16_t sign = signbit(r) ? 0x8000 : 0;
    double a = fabs(r);
    if (isinf(a))
        return sign | 0x7F80;
    if (a == 0)
        return sign;
    int E;
    double m = frexp(a, &E); /* a = m * 2^E, m in [0.5, 1) */
    if (E - 1 >= -126) {
        double mant = ldexp(m, 8) - 128; /* 7 bits below the implicit 1 */
        EXPECT(mant == floor(mant) && mant >= 0 && mant < 128, "not a bf16: %a", r);
        return sign | (uint16_t)((E + 126) << 7) | (uint16_t)mant;
    }
    double mant = ldexp(a, 133);
    EXPECT(mant == floor(mant) && mant >= 1 && mant < 128, "not a bf16: %a", r);
    return sign | (uint16_t)mant;
}

/* The expected bf16_from_float for any non-NaN float. */
static uint16_t oracle(float f)
{
    return bf16_encode(round_slow((double)f, 8, -133, 128));
}

/* Compares bf16_from_float with the oracle, or with the NaN rules. */
static void check_one(float f)
{
    uint32_t u = float_bits(f);
    uint16_t got = bf16_from_float(f);
    if (isnan(f)) {
        EXPECT(bf16_is_nan(got), "NaN 0x%08x -> 0x%04x is not NaN", u, got);
        EXPECT(got & 0x0040, "NaN 0x%08x -> 0x%04x is not quiet", u, got);
        EXPECT((got & 0x8000) == ((u >> 16) & 0x8000), "NaN 0x%08x -> 0x%04x lost its sign", u, got);
        /* Payload bits under the quiet bit (float bits 21..16) survive. */
        EXPECT((got & 0x3F) == ((u >> 16) & 0x3F), "NaN 0x%08x -> 0x%04x lost its payload", u, got);
        return;
    }
    uint16_t want = oracle(f);
    EXPECT(got == want, "float 0x%08x (%a) -> 0x%04x, expected 0x%04x", u, (double)f, got, want);
}

/* Every bf16 widens to exactly its value, and narrows back to itself. */
START_TEST(t_roundtrip_all_65536)
{
    for (uint32_t i = 0; i <= 0xFFFF; i++) {
        uint16_t h = (uint16_t)i;
        float f = bf16_to_float(h);
        double v = bf16_value(h);
        uint16_t back = bf16_from_float(f);
        if (isnan(v)) {
            EXPECT(isnan(f), "0x%04x should widen to NaN", h);
            EXPECT(bf16_is_nan(back) && (back & 0x40), "0x%04x -> 0x%04x: not a quiet NaN", h, back);
            EXPECT((back & 0x8000) == (h & 0x8000), "0x%04x -> 0x%04x: sign lost", h, back);
            /* Quiet NaNs come back bit for bit; signalling ones only gain the quiet bit. */
            EXPECT(back == (h | 0x40), "0x%04x -> 0x%04x: payload changed", h, back);
            continue;
        }
        EXPECT((double)f == v && !signbit(f) == !signbit(v),
               "0x%04x widened to %a, expected %a", h, (double)f, v);
        EXPECT(back == h, "0x%04x -> %a -> 0x%04x", h, (double)f, back);
    }
}
END_TEST

START_TEST(t_classify_all_65536)
{
    for (uint32_t i = 0; i <= 0xFFFF; i++) {
        uint16_t h = (uint16_t)i;
        double v = bf16_value(h);
        EXPECT(!!bf16_is_nan(h) == !!isnan(v), "bf16_is_nan(0x%04x)", h);
        EXPECT(!!bf16_is_inf(h) == !!isinf(v), "bf16_is_inf(0x%04x)", h);
    }
}
END_TEST

/* For every finite bf16 b of either sign, the float exactly halfway to the
 * next bf16 away from zero must go to whichever of the two is even; one float
 * ulp either side of that midpoint must go to the nearer one. */
START_TEST(t_ties_every_exponent)
{
    int ties = 0;
    for (uint32_t i = 0; i <= 0xFFFF; i++) {
        uint16_t b = (uint16_t)i;
        if ((b & 0x7FFF) > 0x7F7F)
            continue; /* Inf and NaN have no successor */
        uint16_t next = (uint16_t)(b + 1);
        double vb = bf16_value(b);
        /* The successor of the largest finite bf16 is Inf; the midpoint is
         * taken towards 2^128, where rounding would land without a limit. */
        double vn = (next & 0x7FFF) == 0x7F80 ? copysign(ldexp(1.0, 128), vb) : bf16_value(next);
        double mid = (vb + vn) / 2;
        float f = (float)mid;
        ck_assert_msg((double)f == mid, "midpoint of 0x%04x not a float", b);
        uint16_t even = (b & 1) ? next : b;
        uint16_t got = bf16_from_float(f);
        EXPECT(got == even, "tie %a (0x%08x): got 0x%04x, expected even 0x%04x",
               mid, float_bits(f), got, even);
        check_one(f);
        /* Just inside and just outside the midpoint (in magnitude). */
        float below = nextafterf(f, 0.0f);
        float above = nextafterf(f, copysignf(INFINITY, f));
        EXPECT(bf16_from_float(below) == b, "just below tie of 0x%04x: 0x%04x", b, bf16_from_float(below));
        EXPECT(bf16_from_float(above) == next, "just above tie of 0x%04x: 0x%04x", b, bf16_from_float(above));
        check_one(below);
        check_one(above);
        ties++;
    }
    ck_assert_int_eq(ties, 2 * 0x7F80);
}
END_TEST

START_TEST(t_overflow_boundary)
{
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x7F7F0000u, 0x7F7F}, /* largest finite bf16, exactly */
        {0x7F7F7FFFu, 0x7F7F}, /* just below halfway to 2^128 */
        {0x7F7F8000u, 0x7F80}, /* halfway: 0x7F7F is odd, so the tie goes up to Inf */
        {0x7F7F8001u, 0x7F80}, /* just above halfway */
        {0x7F7FFFFFu, 0x7F80}, /* FLT_MAX */
        {0x7F800000u, 0x7F80}, /* Inf stays Inf */
        {0xFF7F7FFFu, 0xFF7F},
        {0xFF7F8000u, 0xFF80},
        {0xFF7FFFFFu, 0xFF80},
        {0xFF800000u, 0xFF80},
        {0x7F7E8000u, 0x7F7E}, /* tie below, towards the even 0x7F7E */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float f = bits_float(cases[i].in);
        uint16_t got = bf16_from_float(f);
        EXPECT(got == cases[i].out, "0x%08x -> 0x%04x, expected 0x%04x", cases[i].in, got, cases[i].out);
        check_one(f);
    }
    /* Every float from the largest finite bf16 up to Inf, both signs. */
    for (uint32_t u = 0x7F7F0000u; u <= 0x7F800000u; u++) {
        check_one(bits_float(u));
        check_one(bits_float(u | 0x80000000u));
    }
}
END_TEST

/* Every float subnormal and every float of the smallest normal binade (both
 * signs): rounding down to +-0, up into the bf16 normal range, and ties. */
START_TEST(t_subnormals_exhaustive)
{
    for (uint32_t u = 0; u < 0x01000000u; u++) {
        check_one(bits_float(u));
        check_one(bits_float(u | 0x80000000u));
    }
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x00000001u, 0x0000}, /* smallest float subnormal rounds to +0 */
        {0x80000001u, 0x8000}, /* ... and keeps its sign */
        {0x00008000u, 0x0000}, /* tie between 0 and the smallest bf16: even is 0 */
        {0x00008001u, 0x0001},
        {0x00010000u, 0x0001}, /* smallest bf16 subnormal survives */
        {0x80010000u, 0x8001},
        {0x00018000u, 0x0002}, /* tie, odd below: up */
        {0x007F0000u, 0x007F}, /* largest bf16 subnormal */
        {0x007F8000u, 0x0080}, /* tie at the top of the subnormals: up into normals */
        {0x007FFFFFu, 0x0080}, /* largest float subnormal rounds to the smallest normal */
        {0x807FFFFFu, 0x8080},
        {0x00800000u, 0x0080}, /* smallest normal */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = bf16_from_float(bits_float(cases[i].in));
        EXPECT(got == cases[i].out, "0x%08x -> 0x%04x, expected 0x%04x", cases[i].in, got, cases[i].out);
    }
}
END_TEST

/* Every NaN bit pattern of both signs, including signalling NaNs whose payload
 * lives only in the low 16 bits (a plain round-and-truncate turns those into
 * Inf, and an all-ones NaN into zero). */
START_TEST(t_nan_payloads_exhaustive)
{
    for (uint32_t m = 1; m < 0x00800000u; m++) {
        check_one(bits_float(0x7F800000u | m));
        check_one(bits_float(0xFF800000u | m));
    }
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x7F800001u, 0x7FC0}, /* signalling, payload in the low bits only */
        {0xFF80FFFFu, 0xFFC0},
        {0x7F810000u, 0x7FC1}, /* signalling, payload in the kept bits */
        {0x7FC00000u, 0x7FC0}, /* the default quiet NaN */
        {0xFFFFFFFFu, 0xFFFF},
        {0x7FFF8000u, 0x7FFF}, /* no rounding carry out of a NaN */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = bf16_from_float(bits_float(cases[i].in));
        EXPECT(got == cases[i].out, "0x%08x -> 0x%04x, expected 0x%04x", cases[i].in, got, cases[i].out);
    }
}
END_TEST

/* Random bit patterns cover every exponent evenly. */
START_TEST(t_random_bit_patterns)
{
    uint64_t state = 0x5EEDBF16u;
    for (int i = 0; i < 5000000; i++) {
        uint64_t r = splitmix64(&state);
        check_one(bits_float((uint32_t)r));
        check_one(bits_float((uint32_t)(r >> 32)));
    }
}
END_TEST

/* Random values near 1, where the dropped half is most often near a tie:
 * low 16 bits drawn from a handful of edge patterns. */
START_TEST(t_random_near_ties)
{
    static const uint32_t low[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
    uint64_t state = 42;
    for (int i = 0; i < 1000000; i++) {
        uint64_t r = splitmix64(&state);
        uint32_t u = ((uint32_t)r & 0xFFFF0000u) | low[(r >> 32) % 6];
        check_one(bits_float(u));
    }
}
END_TEST

/* The oracle itself, on a few values worked out by hand, so a bug there
 * cannot hide a matching bug in the code under test. */
START_TEST(t_oracle_sanity)
{
    ck_assert_uint_eq(oracle(1.0f), 0x3F80);
    ck_assert_uint_eq(oracle(-2.0f), 0xC000);
    ck_assert_uint_eq(oracle(1.0f + 0x1p-8f), 0x3F80);            /* tie, even down */
    ck_assert_uint_eq(oracle(1.0f + 0x1p-8f + 0x1p-7f), 0x3F82);  /* tie, even up */
    ck_assert_uint_eq(oracle(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
    ck_assert_uint_eq(oracle(0x1p-133f), 0x0001);
    ck_assert_uint_eq(oracle(-0x1p-134f), 0x8000);
    ck_assert_uint_eq(oracle(FLT_MAX), 0x7F80);
    ck_assert_uint_eq(oracle(-0.0f), 0x8000);
    ck_assert(bf16_value(0x3F80) == 1.0 && bf16_value(0x0001) == 0x1p-133);
    ck_assert(bf16_value(0x7F7F) == 0x1.FEp127 && bf16_value(0x0080) == 0x1p-126);
}
END_TEST

static Suite *bf16_suite(void)
{
    Suite *s = suite_create("bf16");
    TCase *tc = tcase_create("bf16");
    tcase_set_timeout(tc, 120); /* Check's own default is 4 s */
    tcase_add_test(tc, t_oracle_sanity);
    tcase_add_test(tc, t_roundtrip_all_65536);
    tcase_add_test(tc, t_classify_all_65536);
    tcase_add_test(tc, t_ties_every_exponent);
    tcase_add_test(tc, t_overflow_boundary);
    tcase_add_test(tc, t_subnormals_exhaustive);
    tcase_add_test(tc, t_nan_payloads_exhaustive);
    tcase_add_test(tc, t_random_bit_patterns);
    tcase_add_test(tc, t_random_near_ties);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bw_run_suite(bf16_suite()); }
