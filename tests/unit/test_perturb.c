/* The worker's perturbation plan (grader/protocol/perturb.c): applied to a
 * rotated, maybe negated copy of an array, it must move the sum by exactly
 * its delta, at distinct places, with values the array's type holds, and
 * differently on every call. The device half (bw_poke_array) only stores
 * the planned bits; the benchmark runs on a GPU check it end to end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "check_support.h"
#include "element.h"
#include "perturb.h"

/* n elements of type t: every 37th a multiple of 2^-9 (as the timed values
 * of a reduction), the rest 0, so that every sum here is exact. */
static void *sparse_array(bw_type t, int64_t n)
{
    void *a = calloc((size_t)n, (size_t)bw_type_bytes(t));
    ck_assert_ptr_nonnull(a);
    for (int64_t i = 0; i < n; i += 37)
        bw_elem_store(t, a, i, bw_elem_from_float(t, ldexpf((float)(1 + i % 255), -9)));
    return a;
}

static double sum_of(bw_type t, const void *a, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += bw_elem_to_double(t, bw_elem_load(t, a, i));
    return s;
}

/* Catches an old value read from the wrong place (the rotation's
 * direction), a lost negation, repeated places and values a type rounds. */
START_TEST(the_sum_moves_by_the_delta)
{
    const bw_type types[] = {BW_BF16, BW_F16, BW_F32};
    const int64_t n = 5003;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        bw_type t = types[ti];
        void *x = sparse_array(t, n);
        void *rot = malloc((size_t)n * (size_t)bw_type_bytes(t));
        ck_assert_ptr_nonnull(rot);
        bw_array_geom g;
        memset(&g, 0, sizeof g);
        g.elem_bytes = (uint32_t)bw_type_bytes(t);
        g.elem_type = (uint32_t)t;
        g.count = n;
        uint64_t rng = 12345;
        for (int call = 0; call < 40; call++) {
            const int64_t r = (call * 977) % n;
            const uint32_t flip = call % 2 ? (t == BW_F32 ? 0x80000000u : 0x8000u) : 0u;
            for (int64_t i = 0; i < n; i++)   /* dst[i] = src[(i + r) mod n], as the worker's */
                bw_elem_store(t, rot, i, bw_elem_load(t, x, (i + r) % n) ^ flip);
            double before = sum_of(t, rot, n);
            bw_perturb p;
            ck_assert_int_eq(bw_perturb_plan(&rng, &g, x, r, flip, BW_PERTURB_MAX, &p), 0);
            ck_assert_int_eq(p.count, BW_PERTURB_MAX);
            for (int j = 0; j < p.count; j++) {
                ck_assert(p.pos[j] >= 0 && p.pos[j] < n);
                for (int i = 0; i < j; i++)
                    ck_assert(p.pos[i] != p.pos[j]);
                double v = bw_elem_to_double(t, p.bits[j]);
                ck_assert(v > 0.0 && v < 0.5 && ldexp(v, 9) == floor(ldexp(v, 9)));
                bw_elem_store(t, rot, p.pos[j], p.bits[j]);
            }
            ck_assert_msg(sum_of(t, rot, n) == before + p.delta, "type %d call %d: %.9g != %.9g + %.9g",
                          (int)t, call, sum_of(t, rot, n), before, p.delta);
        }
        free(rot);
        free(x);
    }
}
END_TEST

/* Each call's plan is fresh: two calls in a row never share their places,
 * and the delta changes (a memo of the last sum learns nothing). Arrays
 * too short for a plan are refused, not half planned. */
START_TEST(plans_are_fresh_and_short_arrays_take_none)
{
    const int64_t n = 1 << 20;
    void *x = sparse_array(BW_BF16, n);
    bw_array_geom g;
    memset(&g, 0, sizeof g);
    g.elem_bytes = 2;
    g.elem_type = BW_BF16;
    g.count = n;
    uint64_t rng = 99;
    bw_perturb a, b;
    ck_assert_int_eq(bw_perturb_plan(&rng, &g, x, 5, 0u, BW_PERTURB_MAX, &a), 0);
    ck_assert_int_eq(bw_perturb_plan(&rng, &g, x, 5, 0u, BW_PERTURB_MAX, &b), 0);
    ck_assert(a.delta != b.delta);
    int shared = 0;
    for (int i = 0; i < a.count; i++)
        for (int j = 0; j < b.count; j++)
            shared += a.pos[i] == b.pos[j];
    ck_assert_int_eq(shared, 0);
    g.count = 4 * BW_PERTURB_MAX - 1;
    ck_assert_int_eq(bw_perturb_plan(&rng, &g, x, 0, 0u, BW_PERTURB_MAX, &a), -1);
    ck_assert_int_eq(a.count, 0);
    ck_assert(a.delta == 0.0);
    free(x);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("perturb");
    TCase *t = tcase_create("plan");
    tcase_add_test(t, the_sum_moves_by_the_delta);
    tcase_add_test(t, plans_are_fresh_and_short_arrays_take_none);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return bw_run_suite(suite()); }
