/* The CPU reference kernels against an exact double-precision oracle, and the
 * threaded paths against the single-threaded one, bit for bit.
 *
 * The oracle. haxpy must equal bf16(fmaf(alpha, x, y)): the exact value
 * v = alpha*x + y rounded once to float, then that float rounded to bf16.
 *  - p = (double)alpha * (double)x is exact: 24 + 8 significant bits < 53.
 *  - TwoSum(p, y) gives s = double(p + y) and e with p + y == s + e exactly
 *    (TwoSum is error-free in round-to-nearest; no overflow is possible,
 *    |p| < 2^256).
 *  - Rounding s + e to float, with e used only for its sign: every float and
 *    every float midpoint is a double, so if s is not exactly on one, s and
 *    s + e lie on the same side of every float midpoint (|e| is at most half
 *    a double ulp of s, the smallest step between s and any such point) and
 *    rounding s + e equals rounding s. If s is exactly a float midpoint, the
 *    sign of e breaks the tie, and only e == 0 is a true tie (to even). If s
 *    is exactly a float, s + e rounds to s. round_exact() does just that.
 *  - The float result is then rounded to bf16 the same way (e = 0).
 * So the oracle is exact: it must match bit for bit, no ulp tolerance.
 * vector_sum uses the same path with p = a (a + b can need more than 53 bits,
 * hence TwoSum there too). Plain "double fma, then round" would not do: an
 * exact value a hair past a float midpoint rounds to the midpoint in double
 * and then ties the wrong way (t_haxpy_fused_not_split builds such a case). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ref_kernels.h"
#include "exercise.h"
#include "check_support.h"

/* Only call into Check on failure: its passing assertions are slow in loops. */
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

/* The value of a bf16, from its fields (independent of bf16_to_float). */
static double bf16_value(uint16_t h)
{
    int e = (h >> 7) & 0xFF, m = h & 0x7F;
    double mag;
    if (e == 0xFF)
        mag = m == 0 ? INFINITY : NAN;
    else if (e == 0)
        mag = ldexp(m, -133);
    else
        mag = ldexp(128 + m, e - 134);
    return (h & 0x8000) ? -mag : mag;
}

/* Rounds the exact real s + e (s finite, |e| <= half a double ulp of s) to
 * `prec` significant bits, grid no finer than 2^qmin, overflow at 2^emax,
 * ties to even. */
static double round_exact(double s, double e, int prec, int qmin, int emax)
{
    if (s == 0)
        return s; /* then e == 0 too: an exact zero keeps its IEEE sign */
    double a = fabs(s);
    double dir = s < 0 ? -e : e; /* e seen from a: > 0 means farther from 0 */
    int E;
    (void)frexp(a, &E);
    int q = E - prec;
    if (q < qmin)
        q = qmin;
    double k = floor(ldexp(a, -q));
    double lo = ldexp(k, q), step = ldexp(1.0, q);
    double rem = a - lo, half = step / 2; /* both exact */
    int up;
    if (rem != half)
        up = rem > half; /* e cannot move a across a point it is not on */
    else if (dir != 0)
        up = dir > 0;
    else
        up = fmod(k, 2.0) != 0;
    double r = up ? lo + step : lo;
    if (r >= ldexp(1.0, emax))
        r = INFINITY;
    return copysign(r, s);
}

static void two_sum(double a, double b, double *s, double *e)
{
    double x = a + b, bv = x - a, av = x - bv;
    *s = x;
    *e = (a - av) + (b - bv);
}

/* Bits of a double holding an exact bf16 value; NaN comes back as 0x7FC0. */
static uint16_t bf16_encode(double r)
{
    if (isnan(r))
        return 0x7FC0;
    float f = (float)r; /* exact: r is a bf16 value, so a float */
    EXPECT((double)f == r && (float_bits(f) & 0xFFFF) == 0, "not a bf16: %a", r);
    return (uint16_t)(float_bits(f) >> 16);
}

/* Expected bf16 of the exact real p + y, rounded to float then to bf16. */
static uint16_t oracle_sum(double p, double y)
{
    if (!isfinite(p) || !isfinite(y))
        return bf16_encode(p + y); /* Inf or NaN: double follows the float rules */
    double s, e;
    two_sum(p, y, &s, &e);
    double f = round_exact(s, e, 24, -149, 128);
    if (isinf(f))
        return bf16_encode(f);
    return bf16_encode(round_exact(f, 0.0, 8, -133, 128));
}

static uint16_t oracle_haxpy(float alpha, uint16_t x, uint16_t y)
{
    return oracle_sum((double)alpha * bf16_value(x), bf16_value(y));
}

static uint16_t oracle_vsum(uint16_t a, uint16_t b)
{
    return oracle_sum(bf16_value(a), bf16_value(b));
}

/* NaN must give some quiet NaN (which payload fmaf or + propagates is up to
 * the platform); everything else must match to the bit. */
static int same_result(uint16_t got, uint16_t want)
{
    if (bf16_is_nan(want))
        return bf16_is_nan(got) && (got & 0x40);
    return got == want;
}

static bf16_t *alloc_bf16(int64_t n)
{
    bf16_t *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* Runs haxpy single-threaded on copies and compares every element. */
static void check_haxpy(int64_t n, float alpha, const bf16_t *x, const bf16_t *y0)
{
    bf16_t *y = alloc_bf16(n);
    memcpy(y, y0, (size_t)n * sizeof *y);
    haxpy_ref_threads(n, alpha, x, y, 1);
    for (int64_t i = 0; i < n; i++) {
        uint16_t want = oracle_haxpy(alpha, x[i], y0[i]);
        EXPECT(same_result(y[i], want),
               "haxpy alpha=%a (0x%08x) x=0x%04x y=0x%04x: got 0x%04x, expected 0x%04x",
               (double)alpha, float_bits(alpha), x[i], y0[i], y[i], want);
    }
    free(y);
}

static void check_vsum(int64_t n, const bf16_t *a, const bf16_t *b)
{
    bf16_t *c = alloc_bf16(n);
    vector_sum_ref_threads(n, a, b, c, 1);
    for (int64_t i = 0; i < n; i++) {
        uint16_t want = oracle_vsum(a[i], b[i]);
        EXPECT(same_result(c[i], want), "vector_sum 0x%04x + 0x%04x: got 0x%04x, expected 0x%04x",
               a[i], b[i], c[i], want);
    }
    free(c);
}

/* Alphas with something to say: signed zeros, units, powers of two at both
 * ends of the range, subnormals, FLT_MAX, Inf, NaN, and odd mantissas. */
static const uint32_t special_alphas[] = {
    0x00000000u, 0x80000000u, 0x3F800000u, 0xBF800000u, 0x3F000000u, 0x40400000u,
    0x3EAAAAABu, 0x3F800001u, 0x3FFFFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x00000001u,
    0x80000001u, 0x007FFFFFu, 0x00800000u, 0x0D800000u, 0x71000000u, 0x7F800000u,
    0xFF800000u, 0x7FC00000u, 0x7F800001u, 0x4B000001u, 0x33800001u,
};
#define N_SPECIAL_ALPHAS (sizeof special_alphas / sizeof special_alphas[0])

/* An exact value a hair past a float midpoint, which itself is a bf16
 * midpoint after float rounding: only a truly fused multiply-add with one
 * rounding to float, then one to bf16, gets all three right.
 * alpha = 5614251 * 2^-24, x = 3: alpha*x = 1 + 2^-8 + 2^-24, half a float
 * ulp above 1 + 2^-8 (a float with an even last bit, and the bf16 midpoint
 * between 1 and 1 + 2^-7). */
START_TEST(t_haxpy_fused_not_split)
{
    const float alpha = 5614251.0f * 0x1p-24f;
    ck_assert((double)alpha * 3.0 == 1.0 + 0x1p-8 + 0x1p-24);
    static const struct {
        uint16_t y, want;
    } cases[] = {
        {0x2180, 0x3F81}, /* y = +2^-60: past the float midpoint, float rounds up, bf16 up */
        {0xA180, 0x3F80}, /* y = -2^-60: float rounds down to the bf16 tie, even is 1.0 */
        {0x0000, 0x3F80}, /* y = 0: float tie to even, then bf16 tie to even */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bf16_t x = 0x4040, y = cases[i].y; /* x = 3.0 */
        haxpy_ref_threads(1, alpha, &x, &y, 1);
        EXPECT(y == cases[i].want, "y=0x%04x: got 0x%04x, expected 0x%04x", cases[i].y, y, cases[i].want);
        EXPECT(oracle_haxpy(alpha, 0x4040, cases[i].y) == cases[i].want, "oracle disagrees on y=0x%04x",
               cases[i].y);
    }
}
END_TEST

/* Specials worked out by hand, then also through the oracle. */
START_TEST(t_haxpy_specials)
{
    static const struct {
        uint32_t alpha;
        uint16_t x, y, want;
    } cases[] = {
        {0x3F800000u, 0x7FC0, 0x3F80, 0x7FC0}, /* NaN x */
        {0x3F800000u, 0x3F80, 0xFFC1, 0x7FC0}, /* NaN y */
        {0x7FC00000u, 0x3F80, 0x3F80, 0x7FC0}, /* NaN alpha */
        {0x00000000u, 0x7F80, 0x3F80, 0x7FC0}, /* 0 * Inf */
        {0x7F800000u, 0x3F80, 0xFF80, 0x7FC0}, /* Inf - Inf */
        {0x40000000u, 0x7F80, 0x3F80, 0x7F80}, /* 2 * Inf + 1 */
        {0x3F800000u, 0x3F80, 0xFF80, 0xFF80}, /* 1 - Inf */
        {0x7F7FFFFFu, 0x4000, 0x0000, 0x7F80}, /* FLT_MAX * 2: overflow */
        {0x3F800000u, 0x7F7F, 0x7F7F, 0x7F80}, /* max bf16 + max bf16 */
        {0xBF800000u, 0x7F7F, 0xFF7F, 0xFF80}, /* ... negative */
        {0x3F800000u, 0x7F7F, 0x0000, 0x7F7F}, /* max bf16 stays finite */
        {0x3F000000u, 0x0001, 0x0000, 0x0000}, /* 2^-134: tie to even zero */
        {0x3F400000u, 0x0001, 0x0000, 0x0001}, /* 0.75 * 2^-133: up to the smallest subnormal */
        {0xBF400000u, 0x0001, 0x0000, 0x8001},
        {0x3E800000u, 0x0001, 0x8000, 0x0000}, /* 2^-135 + -0 rounds to +0 */
        {0xBE800000u, 0x0001, 0x0000, 0x8000}, /* -2^-135 rounds to -0 */
        {0x3F800000u, 0x007F, 0x0001, 0x0080}, /* subnormal + subnormal = smallest normal */
        {0x3F800000u, 0x3F80, 0xBF80, 0x0000}, /* exact cancellation: +0 */
        {0xBF800000u, 0x0000, 0x8000, 0x8000}, /* -0 + -0 = -0 */
        {0x3F800000u, 0x0000, 0x8000, 0x0000}, /* +0 + -0 = +0 */
        {0x00000001u, 0x7F7F, 0x0000, 0x34FF}, /* 2^-149 * 0x1.FEp127 = 0x1.FEp-22 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float alpha = bits_float(cases[i].alpha);
        bf16_t x = cases[i].x, y = cases[i].y;
        haxpy_ref_threads(1, alpha, &x, &y, 1);
        EXPECT(same_result(y, cases[i].want), "case %zu: got 0x%04x, expected 0x%04x", i, y, cases[i].want);
        uint16_t o = oracle_haxpy(alpha, cases[i].x, cases[i].y);
        EXPECT(same_result(o, cases[i].want), "case %zu: oracle gives 0x%04x", i, o);
    }
}
END_TEST

/* For each interesting alpha: every x against random y, every y against
 * random x. */
START_TEST(t_haxpy_exhaustive_operands)
{
    const int64_t n = 65536;
    bf16_t *x = alloc_bf16(n), *y = alloc_bf16(n);
    uint64_t st = 7;
    for (size_t k = 0; k < N_SPECIAL_ALPHAS + 16; k++) {
        float alpha = k < N_SPECIAL_ALPHAS ? bits_float(special_alphas[k])
                                           : bits_float((uint32_t)splitmix64(&st));
        for (int64_t i = 0; i < n; i++) {
            x[i] = (bf16_t)i;
            y[i] = (bf16_t)splitmix64(&st);
        }
        check_haxpy(n, alpha, x, y);
        for (int64_t i = 0; i < n; i++) {
            x[i] = (bf16_t)splitmix64(&st);
            y[i] = (bf16_t)i;
        }
        check_haxpy(n, alpha, x, y);
    }
    free(x);
    free(y);
}
END_TEST

/* Random operands, half of them within a few binades of each other so that
 * the sums actually round (fully random exponents mostly just copy y or
 * alpha*x). */
START_TEST(t_haxpy_random)
{
    const int64_t n = 4096;
    bf16_t *x = alloc_bf16(n), *y = alloc_bf16(n);
    uint64_t st = 0xA4B1;
    for (int batch = 0; batch < 1000; batch++) {
        uint32_t ab = (uint32_t)splitmix64(&st);
        if (batch % 2)
            ab = (ab & 0x807FFFFFu) | (uint32_t)(120 + batch % 16) << 23;
        float alpha = bits_float(ab);
        for (int64_t i = 0; i < n; i++) {
            uint64_t r = splitmix64(&st);
            x[i] = (bf16_t)r;
            y[i] = (bf16_t)(r >> 16);
            if (batch % 2) {
                /* exponents of x and y near 127, y a little below alpha*x */
                x[i] = (bf16_t)((x[i] & 0x807F) | (uint16_t)(124 + (r >> 32) % 8) << 7);
                y[i] = (bf16_t)((y[i] & 0x807F) | (uint16_t)(100 + (r >> 40) % 40) << 7);
            }
        }
        check_haxpy(n, alpha, x, y);
    }
    free(x);
    free(y);
}
END_TEST

START_TEST(t_vsum_specials)
{
    static const struct {
        uint16_t a, b, want;
    } cases[] = {
        {0x7FC0, 0x3F80, 0x7FC0}, {0x3F80, 0xFF81, 0x7FC0}, /* NaN in, NaN out */
        {0x7F80, 0xFF80, 0x7FC0},                           /* Inf - Inf */
        {0x7F80, 0x3F80, 0x7F80}, {0xFF80, 0x7F7F, 0xFF80}, /* Inf wins */
        {0x7F7F, 0x7F7F, 0x7F80}, {0xFF7F, 0xFF7F, 0xFF80}, /* overflow */
        {0x7F7F, 0x7A80, 0x7F7F},                           /* max + a quarter ulp: finite */
        {0x7F7F, 0x7B00, 0x7F80},                           /* max + half an ulp: tie, up to Inf */
        {0x0001, 0x0001, 0x0002}, {0x007F, 0x0001, 0x0080}, /* subnormals */
        {0x8001, 0x0001, 0x0000},                           /* x - x = +0 */
        {0x8000, 0x8000, 0x8000}, {0x0000, 0x8000, 0x0000}, /* signed zeros */
        {0x3F80, 0x3B80, 0x3F80},                           /* 1 + 2^-8: tie to even, down */
        {0x3F81, 0x3B80, 0x3F82},                           /* (1 + 2^-7) + 2^-8: tie, up */
        {0x3F80, 0x3B81, 0x3F81},                           /* just past the tie */
        {0x3F80, 0x0001, 0x3F80},                           /* far apart */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bf16_t a = cases[i].a, b = cases[i].b, c = 0x1234;
        vector_sum_ref_threads(1, &a, &b, &c, 1);
        EXPECT(same_result(c, cases[i].want), "case %zu: got 0x%04x, expected 0x%04x", i, c, cases[i].want);
        uint16_t o = oracle_vsum(a, b);
        EXPECT(same_result(o, cases[i].want), "case %zu: oracle gives 0x%04x", i, o);
    }
}
END_TEST

START_TEST(t_vsum_exhaustive_a)
{
    const int64_t n = 65536;
    bf16_t *a = alloc_bf16(n), *b = alloc_bf16(n);
    uint64_t st = 99;
    for (int pass = 0; pass < 24; pass++) {
        for (int64_t i = 0; i < n; i++) {
            a[i] = (bf16_t)i;
            uint16_t r = (uint16_t)splitmix64(&st);
            switch (pass) {
            case 0: b[i] = a[i]; break;                     /* doubling */
            case 1: b[i] = (bf16_t)(a[i] ^ 0x8000); break;  /* cancellation */
            case 2: b[i] = (bf16_t)(a[i] + 1); break;       /* neighbours */
            case 3: b[i] = (bf16_t)(a[i] - 0x0380); break;  /* 7 binades apart: ties */
            case 4: b[i] = (bf16_t)(a[i] - 0x0400); break;
            default: b[i] = r; break;
            }
        }
        check_vsum(n, a, b);
        check_vsum(n, b, a);
    }
    free(a);
    free(b);
}
END_TEST

START_TEST(t_vsum_random)
{
    const int64_t n = 1 << 20;
    bf16_t *a = alloc_bf16(n), *b = alloc_bf16(n);
    uint64_t st = 1234;
    for (int pass = 0; pass < 4; pass++) {
        for (int64_t i = 0; i < n; i++) {
            uint64_t r = splitmix64(&st);
            a[i] = (bf16_t)r;
            b[i] = (bf16_t)(r >> 16);
            if (pass % 2) /* exponents within 10 of each other */
                b[i] = (bf16_t)((b[i] & 0x807F) |
                                (uint16_t)((((a[i] >> 7) & 0xFF) + (r >> 32) % 10) & 0xFF) << 7);
        }
        check_vsum(n, a, b);
    }
    free(a);
    free(b);
}
END_TEST

/* Random inputs with a sprinkling of specials. */
static void fill_random(bf16_t *p, int64_t n, uint64_t seed)
{
    static const uint16_t specials[] = {0x7FC0, 0xFF80, 0x7F80, 0x0000, 0x8000, 0x0001, 0x7F7F, 0x8080};
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = splitmix64(&seed);
        p[i] = (r >> 60) == 0 ? specials[(r >> 20) % 8] : (bf16_t)r;
    }
}

/* Around the threshold and around the chunk edges each thread count makes,
 * every thread count must give the single-threaded bits, through every entry
 * (the grader's among them: the exercise's rule, scalars and arrays in the
 * declaration's order). */
START_TEST(t_threads_bit_identical)
{
    const bw_rule *haxpy_rule = bw_exercise_find("haxpy")->rule;
    const bw_rule *vsum_rule = bw_exercise_find("vector_sum")->rule;
    const int64_t T = REF_THREAD_THRESHOLD;
    const int64_t sizes[] = {0, 1, T - 1, T, T + 1, T + 2, T + 15, 2 * T - 1, 3 * T + 5, 7 * 65536 + 6};
    const int threads[] = {1, 2, 3, 7, 16, 0, -1};
    const int64_t nmax = 3 * T + 5;
    bf16_t *x = alloc_bf16(nmax), *y0 = alloc_bf16(nmax), *want = alloc_bf16(nmax);
    bf16_t *y = alloc_bf16(nmax), *c = alloc_bf16(nmax);
    fill_random(x, nmax, 1);
    fill_random(y0, nmax, 2);
    const float alpha = -1.3125f;

    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        size_t bytes = (size_t)n * sizeof(bf16_t);

        memcpy(want, y0, bytes);
        haxpy_ref_threads(n, alpha, x, want, 1);
        for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
            memcpy(y, y0, bytes);
            haxpy_ref_threads(n, alpha, x, y, threads[ti]);
            EXPECT(memcmp(y, want, bytes) == 0, "haxpy n=%lld threads=%d differs", (long long)n, threads[ti]);
            memcpy(y, y0, bytes);
            void *const arr[2] = {x, y};
            const float scalars[BW_MAX_SCALARS] = {alpha};
            haxpy_rule->reference(n, scalars, arr, threads[ti]);
            EXPECT(memcmp(y, want, bytes) == 0, "haxpy rule->reference n=%lld threads=%d differs",
                   (long long)n, threads[ti]);
        }
        memcpy(y, y0, bytes);
        haxpy_ref(n, alpha, x, y);
        EXPECT(memcmp(y, want, bytes) == 0, "haxpy_ref n=%lld differs", (long long)n);

        vector_sum_ref_threads(n, x, y0, want, 1);
        for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
            memset(c, 0xAB, bytes);
            vector_sum_ref_threads(n, x, y0, c, threads[ti]);
            EXPECT(memcmp(c, want, bytes) == 0, "vector_sum n=%lld threads=%d differs", (long long)n,
                   threads[ti]);
            memset(c, 0xAB, bytes);
            void *const arr[3] = {x, y0, c};
            const float scalars[BW_MAX_SCALARS] = {NAN, NAN, NAN, NAN}; /* it takes none */
            vsum_rule->reference(n, scalars, arr, threads[ti]);
            EXPECT(memcmp(c, want, bytes) == 0, "vector_sum rule->reference n=%lld threads=%d differs",
                   (long long)n, threads[ti]);
        }
        memset(c, 0xAB, bytes);
        vector_sum_ref(n, x, y0, c);
        EXPECT(memcmp(c, want, bytes) == 0, "vector_sum_ref n=%lld differs", (long long)n);
    }
    /* The single-threaded answer itself, at the largest size, against the oracle. */
    check_haxpy(nmax, alpha, x, y0);
    check_vsum(nmax, x, y0);
    free(x);
    free(y0);
    free(want);
    free(y);
    free(c);
}
END_TEST

/* Nothing past n is touched, and inputs are left alone. */
START_TEST(t_bounds_and_inputs)
{
    const int64_t n = REF_THREAD_THRESHOLD + 3, pad = 64;
    bf16_t *x = alloc_bf16(n + pad), *y = alloc_bf16(n + pad), *c = alloc_bf16(n + pad);
    bf16_t *x0 = alloc_bf16(n + pad);
    fill_random(x, n + pad, 5);
    memcpy(x0, x, (size_t)(n + pad) * sizeof *x);
    for (int64_t i = 0; i < n + pad; i++)
        y[i] = c[i] = 0x5A5A;
    haxpy_ref_threads(n, 2.0f, x, y, 4);
    vector_sum_ref_threads(n, x, x, c, 4);
    for (int64_t i = n; i < n + pad; i++)
        EXPECT(y[i] == 0x5A5A && c[i] == 0x5A5A, "wrote past n at %lld", (long long)i);
    EXPECT(memcmp(x, x0, (size_t)(n + pad) * sizeof *x) == 0, "input changed");
    free(x);
    free(y);
    free(c);
    free(x0);
}
END_TEST

static Suite *reference_suite(void)
{
    Suite *s = suite_create("reference");
    TCase *tc = tcase_create("reference");
    tcase_set_timeout(tc, 120); /* Check's own default is 4 s */
    tcase_add_test(tc, t_haxpy_fused_not_split);
    tcase_add_test(tc, t_haxpy_specials);
    tcase_add_test(tc, t_haxpy_exhaustive_operands);
    tcase_add_test(tc, t_haxpy_random);
    tcase_add_test(tc, t_vsum_specials);
    tcase_add_test(tc, t_vsum_exhaustive_a);
    tcase_add_test(tc, t_vsum_random);
    tcase_add_test(tc, t_threads_bit_identical);
    tcase_add_test(tc, t_bounds_and_inputs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bw_run_suite(reference_suite()); }
