/* Input generation: reproducible, thread-count independent, never the
 * poison, and each value class really contains what it promises. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "check_support.h"
#include "inputs.h"
#include "image.h"

#define N 300000   /* several parallel_for chunks */

/* haxpy's and vector_sum's arrays, all bf16: a[k] to read them, p[k] (the
 * same pointers) to pass them to the generator. */
typedef struct {
    bf16_t *a[3];
    void *p[3];
    int64_t n;
} arrays;

static arrays alloc_arrays(int64_t n, bf16_t fill)
{
    arrays r;
    r.n = n;
    for (int k = 0; k < 3; k++) {
        r.a[k] = malloc((size_t)n * sizeof(bf16_t));
        ck_assert_ptr_nonnull(r.a[k]);
        r.p[k] = r.a[k];
        for (int64_t i = 0; i < n; i++)
            r.a[k][i] = fill;
    }
    return r;
}

static void free_arrays(arrays *r)
{
    for (int k = 0; k < 3; k++)
        free(r->a[k]);
}

static bw_case make_case(int64_t n, bw_value_class v, float alpha, uint64_t seed)
{
    bw_case c;
    memset(&c, 0, sizeof c);
    c.n = n;
    c.rows = 1;
    c.cols = n;
    c.values = v;
    c.alpha = alpha;
    c.alpha_kind = "random";
    c.group = BW_GROUP_SPECIAL;
    c.data_seed = seed;
    return c;
}

static const char *const exercises[] = {"haxpy", "vector_sum"};

/* Catches a thread-dependent generator (e.g. one sequential PRNG per chunk)
 * and nondeterminism. */
START_TEST(thread_count_independent)
{
    const bw_exercise *ex = bw_exercise_find(exercises[_i % 2]);
    bw_value_class v = (bw_value_class)(_i / 2);
    bw_case c = make_case(N, v, 0.7f, 42);
    arrays one = alloc_arrays(N, 0), four = alloc_arrays(N, 0), again = alloc_arrays(N, 0);
    bw_inputs_fill(ex, &c, one.p, 1);
    bw_inputs_fill(ex, &c, four.p, 4);
    bw_inputs_fill(ex, &c, again.p, 4);
    for (int k = 0; k < ex->n_arrays; k++) {
        ck_assert(memcmp(one.a[k], four.a[k], N * sizeof(bf16_t)) == 0);
        ck_assert(memcmp(four.a[k], again.a[k], N * sizeof(bf16_t)) == 0);
    }
    /* Another data seed, other values. */
    c.data_seed = 43;
    bw_inputs_fill(ex, &c, again.p, 2);
    int64_t same = 0;
    for (int64_t i = 0; i < N; i++)
        same += again.a[0][i] == one.a[0][i];
    ck_assert_int_lt(same, N / 4);
    free_arrays(&one);
    free_arrays(&four);
    free_arrays(&again);
}
END_TEST

/* Catches the poison appearing in the inputs, directly or as a NaN that a
 * kernel would turn into it by setting the quiet bit. */
START_TEST(never_poison)
{
    const bw_exercise *ex = bw_exercise_find(exercises[_i % 2]);
    static const float alphas[] = {0.0f, 1.0f, -1.0f, 1e-30f, 3e38f, -2.5f};
    for (int v = BW_VALUES_RANDOM; v <= BW_VALUES_CANCEL; v++)
        for (size_t a = 0; a < sizeof alphas / sizeof alphas[0]; a++) {
            bw_case c = make_case(N, (bw_value_class)v, alphas[a], 7 + a);
            arrays r = alloc_arrays(N, 0);
            bw_inputs_fill(ex, &c, r.p, 2);
            int64_t bad = 0;
            for (int k = 0; k < ex->n_arrays; k++) {
                if (!bw_exercise_is_input(ex, k))
                    continue;
                for (int64_t i = 0; i < N; i++)
                    bad += (r.a[k][i] | 0x0040) == BW_POISON;
            }
            ck_assert_int_eq(bad, 0);
            free_arrays(&r);
        }
}
END_TEST

/* Catches random values that stray into NaN, Inf, zero or extreme ranges. */
START_TEST(random_values_moderate)
{
    const bw_exercise *ex = bw_exercise_find(exercises[_i]);
    bw_case c = make_case(N, BW_VALUES_RANDOM, 1.5f, 9);
    arrays r = alloc_arrays(N, 0);
    bw_inputs_fill(ex, &c, r.p, 2);
    int negative = 0, outside = 0;
    for (int k = 0; k < ex->n_arrays; k++) {
        if (!bw_exercise_is_input(ex, k))
            continue;
        for (int64_t i = 0; i < N; i++) {
            float f = bf16_to_float(r.a[k][i]);
            /* Check's assertions are slow per call: count, assert once. */
            outside += !isfinite(f) || fabsf(f) < 0x1p-8f || fabsf(f) >= 0x1p8f;
            negative += f < 0;
        }
    }
    ck_assert_int_eq(outside, 0);
    ck_assert(negative > N / 4);
    free_arrays(&r);
}
END_TEST

/* Catches a special class that lacks one of its kinds of values. */
START_TEST(special_values_present)
{
    const bw_exercise *ex = bw_exercise_find(exercises[_i]);
    bw_case c = make_case(N, BW_VALUES_SPECIAL, 2.0f, 11);
    arrays r = alloc_arrays(N, 0);
    bw_inputs_fill(ex, &c, r.p, 2);
    int nan = 0, pinf = 0, ninf = 0, psub = 0, nsub = 0, pzero = 0, nzero = 0, big = 0,
        ordinary = 0;
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; i < N; i++) {
            bf16_t h = r.a[k][i];
            float f = bf16_to_float(h);
            nan += bf16_is_nan(h);
            pinf += h == 0x7F80;
            ninf += h == 0xFF80;
            psub += (h & 0xFF80) == 0 && h != 0;
            nsub += (h & 0xFF80) == 0x8000 && h != 0x8000;
            pzero += h == 0;
            nzero += h == 0x8000;
            big += isfinite(f) && fabsf(f) >= 0x1p126f;
            ordinary += fabsf(f) >= 0x1p-8f && fabsf(f) < 0x1p8f;
        }
    ck_assert(nan > 0 && pinf > 0 && ninf > 0 && psub > 0 && nsub > 0);
    ck_assert(pzero > 0 && nzero > 0 && big > 0 && ordinary > N / 4);
    free_arrays(&r);
}
END_TEST

/* Catches cancel inputs that do not cancel (y not close to -alpha*x). */
START_TEST(cancel_cancels)
{
    static const float alphas[] = {1.0f, -1.0f, 0.8173f, 1e-30f, 1e30f, -3e38f, 1.5e-38f};
    const bw_exercise *hx = bw_exercise_find("haxpy");
    for (size_t a = 0; a < sizeof alphas / sizeof alphas[0]; a++) {
        bw_case c = make_case(N, BW_VALUES_CANCEL, alphas[a], 5 + a);
        arrays r = alloc_arrays(N, 0);
        bw_inputs_fill(hx, &c, r.p, 2);
        int64_t close = 0, degenerate = 0;
        for (int64_t i = 0; i < N; i++) {
            double p = (double)alphas[a] * bf16_to_float(r.a[0][i]);
            double s = p + bf16_to_float(r.a[1][i]);
            degenerate += !isfinite(p) || p == 0.0;
            close += fabs(s) <= fabs(p) * 0x1p-5;
        }
        ck_assert_int_eq(degenerate, 0);
        ck_assert_msg(close > N * 9 / 10, "alpha %g: %lld of %d cancel", (double)alphas[a],
                      (long long)close, N);
        free_arrays(&r);
    }
    const bw_exercise *vs = bw_exercise_find("vector_sum");
    bw_case c = make_case(N, BW_VALUES_CANCEL, 0.0f, 3);
    arrays r = alloc_arrays(N, 0);
    bw_inputs_fill(vs, &c, r.p, 2);
    int64_t far = 0;
    for (int64_t i = 0; i < N; i++) {
        float x = bf16_to_float(r.a[0][i]), y = bf16_to_float(r.a[1][i]);
        far += fabsf(x + y) > fabsf(x) * 0x1p-5f;
    }
    ck_assert_int_eq(far, 0);
    free_arrays(&r);
}
END_TEST

/* Catches a fill that writes the output array of a non-in-place exercise. */
START_TEST(outputs_untouched)
{
    const bw_exercise *vs = bw_exercise_find("vector_sum");
    for (int v = BW_VALUES_RANDOM; v <= BW_VALUES_CANCEL; v++) {
        bw_case c = make_case(N, (bw_value_class)v, 0.0f, 21);
        arrays r = alloc_arrays(N, BW_POISON);
        bw_inputs_fill(vs, &c, r.p, 3);
        int64_t wrong = 0;
        for (int64_t i = 0; i < N; i++)
            wrong += r.a[2][i] != BW_POISON || r.a[0][i] == BW_POISON ||
                     r.a[1][i] == BW_POISON;
        ck_assert_int_eq(wrong, 0);
        free_arrays(&r);
    }
    /* Nothing past n either. */
    const bw_exercise *hx = bw_exercise_find("haxpy");
    bw_case c = make_case(100, BW_VALUES_SPECIAL, 1.0f, 1);
    arrays r = alloc_arrays(200, 0x1234);
    bw_inputs_fill(hx, &c, r.p, 4);
    for (int64_t i = 100; i < 200; i++)
        ck_assert(r.a[0][i] == 0x1234 && r.a[1][i] == 0x1234);
    free_arrays(&r);
}
END_TEST

/* A check regenerates inputs for any element range: each range must equal
 * the same slice of a whole fill, whatever its start and end modulo the four
 * elements that share a hash, and neighbours must not repeat one another.
 * Catches groups of four counted from the range's start instead of element
 * 0, a lost head or tail of a range, and one hash lane reused for all four. */
START_TEST(any_range_matches_the_whole)
{
    const bw_exercise *ex = bw_exercise_find(exercises[_i % 2]);
    bw_case c = make_case(4096, (bw_value_class)(_i / 2), 1.25f, 77);
    arrays whole = alloc_arrays(4096, 0), part = alloc_arrays(4096, 0);
    bw_inputs_fill(ex, &c, whole.p, 1);
    int mismatched = 0;
    for (int64_t begin = 0; begin < 9; begin++)
        for (int64_t end = begin; end < begin + 23; end++) {
            bw_inputs_fill_range(ex, &c, part.p, 1000 + begin, 1000 + end);
            for (int k = 0; k < ex->n_arrays; k++)
                if (bw_exercise_is_input(ex, k))
                    mismatched += memcmp(part.a[k], whole.a[k] + 1000 + begin,
                                         (size_t)(end - begin) * sizeof(bf16_t)) != 0;
        }
    ck_assert_int_eq(mismatched, 0);
    if (c.values == BW_VALUES_RANDOM) {   /* 12 random bits a value: about one repeat */
        int64_t repeats = 0;
        for (int64_t i = 1; i < 4096; i++)
            repeats += whole.a[0][i] == whole.a[0][i - 1];
        ck_assert_int_lt(repeats, 20);
    }
    free_arrays(&whole);
    free_arrays(&part);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("inputs");
    TCase *t = tcase_create("fill");
    tcase_add_loop_test(t, thread_count_independent, 0, 6);
    tcase_add_loop_test(t, never_poison, 0, 2);
    tcase_add_loop_test(t, random_values_moderate, 0, 2);
    tcase_add_loop_test(t, special_values_present, 0, 2);
    tcase_add_loop_test(t, any_range_matches_the_whole, 0, 6);
    tcase_add_test(t, cancel_cancels);
    tcase_add_test(t, outputs_untouched);
    suite_add_tcase(s, t);
    return bw_run_suite(s);
}
