/* The tolerance: wrong values are caught wherever they are, unwritten and
 * NaN mix-ups are never accepted, and every correct rounding strategy passes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check_support.h"
#include "validate.h"
#include "cases.h"
#include "inputs.h"
#include "image.h"

/* Catches an ulp off by a binade, or wrong at the range ends. */
START_TEST(ulp_values)
{
    ck_assert(bw_ulp(1.0) == 0x1p-7);
    ck_assert(bw_ulp(1.99) == 0x1p-7);
    ck_assert(bw_ulp(2.0) == 0x1p-6);
    ck_assert(bw_ulp(-3.0) == 0x1p-6);
    ck_assert(bw_ulp(0x1p-126) == 0x1p-133);
    ck_assert(bw_ulp(0x1p-127) == 0x1p-133);
    ck_assert(bw_ulp(0.0) == 0x1p-133);
    ck_assert(bw_ulp(0x1.fep127) == 0x1p120);
    ck_assert(bw_ulp(0x1p128) == 0x1p120);
    ck_assert(bw_ulp(INFINITY) == 0x1p120);
    ck_assert(bw_bf16_as_double(0x7F80) == 0x1p128);
    ck_assert(bw_bf16_as_double(0xFF80) == -0x1p128);
    ck_assert(isnan(bw_bf16_as_double(0x7FC0)));
    ck_assert(bw_bf16_as_double(0x3F80) == 1.0);
    ck_assert(bw_bf16_as_double(0x0001) == 0x1p-133);
}
END_TEST

/* vector_sum element check: in = {a, b}, as the compare passes them (values). */
static int vs_ok(bf16_t a, bf16_t b, bf16_t expected, bf16_t got)
{
    const float scalars[BW_MAX_SCALARS] = {0.0f};
    const double in[2] = {bw_elem_to_double(BW_BF16, a), bw_elem_to_double(BW_BF16, b)};
    return bw_element_ok(bw_exercise_find("vector_sum"), scalars, in, expected, got);
}

/* haxpy element check: in = {x, y}. */
static int hx_ok(float alpha, bf16_t x, bf16_t y, bf16_t expected, bf16_t got)
{
    const float scalars[BW_MAX_SCALARS] = {alpha};
    const double in[2] = {bw_elem_to_double(BW_BF16, x), bw_elem_to_double(BW_BF16, y)};
    return bw_element_ok(bw_exercise_find("haxpy"), scalars, in, expected, got);
}

/* Catches a tolerance that is too loose (a whole ulp, so truncation passes)
 * or too tight (the neighbour at a tie, or alpha rounded to bf16, rejected). */
START_TEST(element_rules)
{
    /* 1 + 2^-8 is exactly halfway between 1.0 (0x3F80) and 1 + 2^-7 (0x3F81):
     * both neighbours are within half an ulp. */
    ck_assert(vs_ok(0x3F80, 0x3B80, 0x3F80, 0x3F80));
    ck_assert(vs_ok(0x3F80, 0x3B80, 0x3F80, 0x3F81));
    /* 1 + 3*2^-9 rounds up to 0x3F81; chopping to 0x3F80 is 3/4 ulp off. */
    ck_assert(vs_ok(0x3F80, 0x3BC0, 0x3F81, 0x3F81));
    ck_assert(!vs_ok(0x3F80, 0x3BC0, 0x3F81, 0x3F80));
    /* 1 + 1: exact, so one ulp off is wrong. */
    ck_assert(!vs_ok(0x3F80, 0x3F80, 0x4000, 0x4001));
    ck_assert(!vs_ok(0x3F80, 0x3F80, 0x4000, 0x3FFF));
    /* Signed zeros are equal. */
    ck_assert(vs_ok(0x3F80, 0xBF80, 0x0000, 0x8000));
    /* Overflow: 2.99e38 + 2.99e38 is Inf; the largest finite is wrong. */
    ck_assert(vs_ok(0x7F62, 0x7F62, 0x7F80, 0x7F80));
    ck_assert(!vs_ok(0x7F62, 0x7F62, 0x7F80, 0x7F7F));
    ck_assert(!vs_ok(0x7F62, 0x7F62, 0x7F80, 0xFF80));
    /* ... and a finite sum must not become Inf. */
    ck_assert(!vs_ok(0x7F62, 0x0000, 0x7F62, 0x7F80));
    /* NaN for NaN only, any payload; Inf - Inf is NaN. */
    ck_assert(vs_ok(0x7F80, 0xFF80, 0x7FC0, 0xFFC1));
    ck_assert(!vs_ok(0x7F80, 0xFF80, 0x7FC0, 0x0000));
    ck_assert(!vs_ok(0x3F80, 0x0000, 0x3F80, 0x7FC0));
    /* Poison is never a written value, not even where NaN is expected. */
    ck_assert(!vs_ok(0x7FC0, 0x0000, 0x7FC0, BW_POISON));
    ck_assert(!vs_ok(0x3F80, 0x0000, 0x3F80, BW_POISON));
    /* Subnormals are kept: 3 + 1 units of 2^-133 is 4 units, not 0 or 5. */
    ck_assert(vs_ok(0x0003, 0x0001, 0x0004, 0x0004));
    ck_assert(!vs_ok(0x0003, 0x0001, 0x0004, 0x0000));
    ck_assert(!vs_ok(0x0003, 0x0001, 0x0004, 0x0005));
    /* haxpy with alpha = 0.1 (not a bf16): alpha*x + y nearly cancels, and a
     * kernel that rounds alpha to bf16 lands far away in ulps of the result.
     * x = 10 (0x4120), y = -1 (0xBF80). */
    float alpha = 0.1f;
    bf16_t x = 0x4120, y = 0xBF80;
    bf16_t exact_once = bf16_from_float(fmaf(alpha, 10.0f, -1.0f));
    bf16_t alpha_b = bf16_from_float(fmaf(bf16_to_float(bf16_from_float(alpha)), 10.0f, -1.0f));
    ck_assert(exact_once != alpha_b);
    ck_assert(hx_ok(alpha, x, y, exact_once, alpha_b));
    ck_assert(bw_ulps_between(exact_once, alpha_b) > 100.0);
    /* With alpha = 1 there is no such slack: chopping 1 + 3*2^-9 is wrong. */
    ck_assert(!hx_ok(1.0f, 0x3F80, 0x3BC0, 0x3F81, 0x3F80));
    ck_assert(bw_ulps_between(0x3F80, 0x3F82) == 2.0);
    ck_assert(isinf(bw_ulps_between(0x3F80, 0x7FC0)));
    ck_assert(isinf(bw_ulps_between(0x7FC0, 0x3F80)));
    ck_assert(bw_ulps_between(0x7FC0, 0xFFFF) == 0.0);
    ck_assert(bw_ulps_between(0x0000, 0x8000) == 0.0);
}
END_TEST

typedef struct {
    const bw_exercise *ex;
    int64_t n;
    float alpha;        /* scalars[0] */
    float scalars[BW_MAX_SCALARS];
    bf16_t *in[3];      /* inputs as generated (haxpy and vector_sum: all bf16) */
    bf16_t *expected;
} problem;

/* Inputs from the real generator, expected output from the real reference. */
static problem make_problem(const char *name, const bw_case *c)
{
    problem p;
    memset(&p, 0, sizeof p);
    p.ex = bw_exercise_find(name);
    ck_assert_ptr_nonnull(p.ex);
    ck_assert(p.ex->shape == BW_SHAPE_ELEMENTWISE);
    p.n = c->n;
    bw_case_scalars(p.ex, c, p.scalars);
    p.alpha = p.scalars[0];
    ck_assert(p.ex->n_scalars == 0 || p.alpha == c->alpha);
    void *in[3];
    for (int k = 0; k < 3; k++) {
        ck_assert(k >= p.ex->n_arrays || p.ex->arrays[k].type == BW_BF16);
        p.in[k] = calloc((size_t)c->n, sizeof(bf16_t));
        ck_assert_ptr_nonnull(p.in[k]);
        in[k] = p.in[k];
    }
    bw_inputs_fill(p.ex, c, in, 2);
    p.expected = malloc((size_t)c->n * sizeof(bf16_t));
    ck_assert_ptr_nonnull(p.expected);
    void *arrays[3];
    for (int k = 0; k < p.ex->n_arrays; k++)
        arrays[k] = p.in[k];
    memcpy(p.expected, p.in[p.ex->n_arrays - 1], (size_t)c->n * sizeof(bf16_t));
    arrays[p.ex->n_arrays - 1] = p.expected;
    p.ex->rule->reference(p.n, p.scalars, arrays, 2);
    return p;
}

static void free_problem(problem *p)
{
    for (int k = 0; k < 3; k++)
        free(p->in[k]);
    free(p->expected);
}

static bw_case simple_case(int64_t n, bw_value_class v, float alpha, uint64_t seed)
{
    bw_case c;
    memset(&c, 0, sizeof c);
    c.n = n;
    c.rows = 1;
    c.cols = n;
    c.values = v;
    c.alpha = alpha;
    c.alpha_kind = "random";
    c.data_seed = seed;
    return c;
}

static bf16_t *copy_of(const bf16_t *v, int64_t n)
{
    bf16_t *c = malloc((size_t)n * sizeof *c);
    ck_assert_ptr_nonnull(c);
    memcpy(c, v, (size_t)n * sizeof *c);
    return c;
}

static void compare(const problem *p, const bf16_t *got, bw_compare_result *r, int threads)
{
    const void *const inputs[3] = {p->in[0], p->in[1], p->in[2]};
    bw_compare_output(p->ex, p->n, p->scalars, inputs, p->expected, got, r, threads);
}

static const char *const exercises[] = {"haxpy", "vector_sum"};

/* Catches a compare that skips the first or last element, or a block edge. */
START_TEST(one_wrong_element_anywhere)
{
    bw_case c = simple_case(200003, BW_VALUES_RANDOM, 1.75f, 5);
    problem p = make_problem(exercises[_i], &c);
    bw_compare_result r;
    bf16_t *got = copy_of(p.expected, p.n);
    compare(&p, got, &r, 4);
    ck_assert_int_eq(r.mismatches, 0);
    ck_assert_int_eq(r.first_bad, -1);
    ck_assert(r.max_ulps == 0.0);
    const int64_t where[] = {0, 65535, 65536, p.n / 2, p.n - 1};
    for (size_t w = 0; w < sizeof where / sizeof where[0]; w++) {
        int64_t i = where[w];
        /* Far off: inputs are below 2^8 and alpha below 2, so 4096 is beyond
         * any tolerance here. */
        got[i] = bf16_from_float(bf16_to_float(p.expected[i]) + 4096.0f);
        for (int threads = 1; threads <= 4; threads += 3) {
            compare(&p, got, &r, threads);
            ck_assert_int_eq(r.mismatches, 1);
            ck_assert_int_eq(r.unwritten, 0);
            ck_assert_int_eq(r.first_bad, i);
            ck_assert_int_eq(r.last_bad, i);
            ck_assert_int_eq(r.n_reported, 1);
            ck_assert_int_eq(r.reported[0].index, i);
            ck_assert_uint_eq(r.reported[0].expected, p.expected[i]);
            ck_assert_uint_eq(r.reported[0].got, got[i]);
            ck_assert(r.max_ulps > 100 && r.reported[0].ulps == r.max_ulps);
        }
        got[i] = p.expected[i];
    }
    /* A plausible but wrong value (another element's) is caught too. */
    got[10] = 0x4300;  /* 128.0 */
    p.expected[10] = 0x3F80;
    compare(&p, got, &r, 1);
    ck_assert_int_eq(r.mismatches, 1);
    free(got);
    free_problem(&p);
}
END_TEST

/* Catches unwritten (poison) elements slipping through as "NaN expected". */
START_TEST(poison_is_unwritten)
{
    bw_case c = simple_case(5000, BW_VALUES_SPECIAL, 0.0f, 8);
    problem p = make_problem("vector_sum", &c);
    bf16_t *got = copy_of(p.expected, p.n);
    int64_t nan_at = -1;
    for (int64_t i = 0; i < p.n && nan_at < 0; i++)
        if (bf16_is_nan(p.expected[i]))
            nan_at = i;
    ck_assert_int_ge(nan_at, 0);
    got[nan_at] = BW_POISON;
    got[p.n - 1] = BW_POISON;
    bw_compare_result r;
    compare(&p, got, &r, 2);
    ck_assert_int_eq(r.unwritten, 2);
    ck_assert_int_eq(r.mismatches, 2);
    ck_assert_int_eq(r.first_bad, nan_at);
    ck_assert_int_eq(r.last_bad, p.n - 1);
    free(got);
    free_problem(&p);
}
END_TEST

/* Catches NaN lost, NaN invented and a flipped Inf sign. */
START_TEST(nan_and_inf_mixups)
{
    const bw_exercise *vs = bw_exercise_find("vector_sum");
    /* NaN + 1, 1 + 0, 2.99e38 + 2.99e38 (Inf), Inf - Inf (NaN) */
    bf16_t a[4] = {0x7FC0, 0x3F80, 0x7F62, 0x7F80};
    bf16_t b[4] = {0x3F80, 0x0000, 0x7F62, 0xFF80};
    const void *const inputs[2] = {a, b};
    const float scalars[BW_MAX_SCALARS] = {0.0f};
    bf16_t expected[4] = {0x7FC0, 0x3F80, 0x7F80, 0xFFC1};
    bf16_t good[4] = {0xFFC0, 0x3F80, 0x7F80, 0x7FC0};
    bw_compare_result r;
    bw_compare_output(vs, 4, scalars, inputs, expected, good, &r, 1);
    ck_assert_int_eq(r.mismatches, 0);
    const bf16_t bad[3][4] = {
        {0x0000, 0x3F80, 0x7F80, 0xFFC1},   /* NaN lost */
        {0x7FC0, 0x7FC0, 0x7F80, 0xFFC1},   /* NaN invented */
        {0x7FC0, 0x3F80, 0xFF80, 0xFFC1},   /* wrong sign of Inf */
    };
    for (int k = 0; k < 3; k++) {
        bw_compare_output(vs, 4, scalars, inputs, expected, bad[k], &r, 1);
        ck_assert_int_eq(r.mismatches, 1);
        ck_assert_int_eq(r.first_bad, k);
        ck_assert(r.max_ulps >= 512.0);
    }
}
END_TEST

/* Catches partial results merged out of order or reported by thread. */
START_TEST(threads_give_same_report)
{
    bw_case c = simple_case(((int64_t)1 << 20) + 7, BW_VALUES_RANDOM, 0.0f, 77);
    problem p = make_problem("vector_sum", &c);
    bf16_t *got = copy_of(p.expected, p.n);
    int64_t last = -1;
    for (int64_t i = 1000 + 3; i < p.n; i += 997) {
        got[i] = (bf16_t)(got[i] ^ 0x4000);
        last = i;
    }
    bw_compare_result one, many;
    compare(&p, got, &one, 1);
    compare(&p, got, &many, 4);
    ck_assert_int_eq(one.mismatches, many.mismatches);
    ck_assert_int_eq(one.first_bad, 1003);
    ck_assert_int_eq(many.first_bad, 1003);
    ck_assert_int_eq(many.last_bad, last);
    ck_assert(one.max_ulps == many.max_ulps);
    ck_assert_int_eq(many.n_reported, BW_REPORTED_MISMATCHES);
    for (int k = 0; k < BW_REPORTED_MISMATCHES; k++) {
        ck_assert_int_eq(many.reported[k].index, 1003 + 997 * k);
        ck_assert_int_eq(one.reported[k].index, many.reported[k].index);
    }
    free(got);
    free_problem(&p);
}
END_TEST

/* Catches a tolerance of a whole ulp (truncation would pass) and a compare
 * that lets larger steps through. Random vector_sum: a sum that is exact in
 * bf16 allows no step; one that is not allows only its two neighbours. */
START_TEST(ulp_steps)
{
    bw_case c = simple_case(100000, BW_VALUES_RANDOM, 0.0f, 3);
    problem p = make_problem("vector_sum", &c);
    bf16_t *one = copy_of(p.expected, p.n), *two = copy_of(p.expected, p.n);
    bf16_t *chopped = copy_of(p.expected, p.n);
    int64_t exact_sums = 0, movable = 0, rounded_away = 0;
    for (int64_t i = 0; i < p.n; i++) {
        bf16_t e = p.expected[i];
        int mant = e & 0x7F, exp = (e >> 7) & 0xFF;
        /* Move away from zero within the binade, where one step is one ulp. */
        if (exp == 0 || exp >= 0xFE || mant > 0x7D)
            continue;
        double sum = (double)bf16_to_float(p.in[0][i]) + bf16_to_float(p.in[1][i]);
        one[i] = (bf16_t)(e + 1);
        two[i] = (bf16_t)(e + 2);
        movable++;
        if (sum == (double)bf16_to_float(e))
            exact_sums++;
        /* Truncation: the float sum with its low 16 bits dropped. */
        float fs = bf16_to_float(p.in[0][i]) + bf16_to_float(p.in[1][i]);
        uint32_t bits;
        memcpy(&bits, &fs, sizeof bits);
        chopped[i] = (bf16_t)(bits >> 16);
        /* At an exact tie both neighbours are half an ulp away: allowed. */
        if (fabs((double)bf16_to_float(chopped[i])) < fabs((double)bf16_to_float(e)) &&
            (bits & 0xFFFFu) != 0x8000u)
            rounded_away++;
    }
    ck_assert_int_gt(exact_sums, 1000);
    ck_assert_int_gt(rounded_away, 1000);
    bw_compare_result r;
    compare(&p, one, &r, 2);
    ck_assert_int_ge(r.mismatches, exact_sums);
    ck_assert(r.max_ulps == 1.0);
    compare(&p, two, &r, 2);
    ck_assert_int_eq(r.mismatches, movable);
    ck_assert(r.max_ulps == 2.0);
    /* Every element where truncation is further than half an ulp is caught. */
    compare(&p, chopped, &r, 2);
    ck_assert_int_eq(r.mismatches, rounded_away);
    free(one);
    free(two);
    free(chopped);
    free_problem(&p);
}
END_TEST

/* How a kernel might compute haxpy, all legitimate. */
typedef enum { BF16_ALPHA_FMA, MUL_THEN_ADD, EXACT_ONCE } strategy;

static bf16_t haxpy_by(strategy s, float alpha, bf16_t xb, bf16_t yb)
{
    float x = bf16_to_float(xb), y = bf16_to_float(yb);
    switch (s) {
    case BF16_ALPHA_FMA:   /* __hfma with alpha converted to bf16 first */
        return bf16_from_float(fmaf(bf16_to_float(bf16_from_float(alpha)), x, y));
    case MUL_THEN_ADD: {   /* two float roundings */
        volatile float p = alpha * x;
        volatile float s2 = p + y;
        return bf16_from_float(s2);
    }
    case EXACT_ONCE:       /* exact in double, then to bf16 through float */
        return bf16_from_float((float)((double)alpha * x + y));
    }
    return 0;
}

static int64_t strategy_mismatches(strategy s, const bw_case *c)
{
    problem p = make_problem("haxpy", c);
    bf16_t *got = malloc((size_t)p.n * sizeof *got);
    ck_assert_ptr_nonnull(got);
    for (int64_t i = 0; i < p.n; i++)
        got[i] = haxpy_by(s, p.alpha, p.in[0][i], p.in[1][i]);
    bw_compare_result r;
    compare(&p, got, &r, 2);
    if (r.mismatches)
        fprintf(stderr, "strategy %d, case %d (alpha %s %g, %s): %lld wrong, e.g. index %lld "
                        "expected 0x%04x got 0x%04x x=0x%04x y=0x%04x\n",
                (int)s, c->index, c->alpha_kind, (double)c->alpha,
                bw_value_class_name(c->values), (long long)r.mismatches,
                (long long)r.reported[0].index, r.reported[0].expected, r.reported[0].got,
                p.in[0][r.reported[0].index], p.in[1][r.reported[0].index]);
    free(got);
    free_problem(&p);
    return r.mismatches;
}

/* Catches a tolerance that rejects correct kernels: alpha rounded to bf16
 * (the bf16 FMA), unfused multiply and add, and exact-then-round, on the
 * generator's own special-group cases with every alpha kind. */
START_TEST(alternative_strategies_accepted)
{
    const bw_exercise *hx = bw_exercise_find("haxpy");
    bw_case_list l;
    ck_assert_int_eq(bw_cases_generate(hx, BW_PUBLIC_SEED, 0, &l), 0);
    int tried = 0;
    for (int i = 0; i < l.count; i++) {
        const bw_case *c = &l.items[i];
        if (c->group != BW_GROUP_SPECIAL)
            continue;
        for (strategy s = BF16_ALPHA_FMA; s <= EXACT_ONCE; s++) {
            ck_assert_int_eq(strategy_mismatches(s, c), 0);
            tried++;
        }
    }
    ck_assert_int_gt(tried, 100);
    bw_cases_free(&l);
}
END_TEST

/* Catches a tolerance so loose that real bugs pass: forgetting y, or
 * forgetting alpha. */
START_TEST(wrong_formulas_rejected)
{
    bw_case c = simple_case(50000, BW_VALUES_RANDOM, 0.8173f, 12);
    problem p = make_problem("haxpy", &c);
    bf16_t *got = malloc((size_t)p.n * sizeof *got);
    ck_assert_ptr_nonnull(got);
    bw_compare_result r;
    for (int64_t i = 0; i < p.n; i++)
        got[i] = bf16_from_float(p.alpha * bf16_to_float(p.in[0][i]));
    compare(&p, got, &r, 2);
    /* Where |y| is below an ulp of alpha*x, dropping it is within tolerance. */
    ck_assert_int_gt(r.mismatches, p.n * 3 / 4);
    for (int64_t i = 0; i < p.n; i++)
        got[i] = bf16_from_float(bf16_to_float(p.in[0][i]) + bf16_to_float(p.in[1][i]));
    compare(&p, got, &r, 2);
    ck_assert_int_gt(r.mismatches, p.n / 2);
    free(got);
    free_problem(&p);
}
END_TEST

/* Catches count/first errors at block edges and thread-dependent results. */
START_TEST(count_changed_and_hash)
{
    int64_t n = 3 * ((int64_t)1 << 16) + 5;
    bf16_t *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
    ck_assert(a && b);
    int64_t first = 0;
    ck_assert_int_eq(bw_count_changed(a, b, n, &first, 4), 0);
    ck_assert_int_eq(first, -1);
    uint64_t h0 = bw_hash_elements(a, n);
    ck_assert(h0 == bw_hash_elements(b, n));
    b[n - 1] = 1;
    b[65536] = 2;
    b[70000] = 0x8000;
    for (int threads = 1; threads <= 4; threads++) {
        ck_assert_int_eq(bw_count_changed(a, b, n, &first, threads), 3);
        ck_assert_int_eq(first, 65536);
    }
    b[0] = 5;
    ck_assert_int_eq(bw_count_changed(a, b, n, &first, 3), 4);
    ck_assert_int_eq(first, 0);
    ck_assert(bw_hash_elements(b, n) != h0);
    /* FNV-1a over the bytes, low byte first: 0x34 then 0x12. */
    bf16_t u = 0x1234, z = 0x0034;
    ck_assert(bw_hash_elements(&u, 1) == UINT64_C(0x07EE9E07B4B1C883));
    ck_assert(bw_hash_elements(&u, 1) != bw_hash_elements(&z, 1));
    ck_assert(bw_hash_elements(a, 0) == UINT64_C(0xCBF29CE484222325));
    free(a);
    free(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("validate");
    TCase *t = tcase_create("validate");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, ulp_values);
    tcase_add_test(t, element_rules);
    tcase_add_loop_test(t, one_wrong_element_anywhere, 0, 2);
    tcase_add_test(t, poison_is_unwritten);
    tcase_add_test(t, nan_and_inf_mixups);
    tcase_add_test(t, threads_give_same_report);
    tcase_add_test(t, ulp_steps);
    tcase_add_test(t, alternative_strategies_accepted);
    tcase_add_test(t, wrong_formulas_rejected);
    tcase_add_test(t, count_changed_and_hash);
    suite_add_tcase(s, t);
    return bw_run_suite(s);
}
