/* The case generator: coverage of lengths, offsets, alpha kinds and groups,
 * determinism, and the hidden cases' place in the list. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "check_support.h"
#include "cases.h"

static bw_case_list gen(const char *exercise, uint64_t seed, int hidden)
{
    const bw_exercise *ex = bw_exercise_find(exercise);
    ck_assert_ptr_nonnull(ex);
    bw_case_list l;
    ck_assert_int_eq(bw_cases_generate(ex, seed, hidden, &l), 0);
    ck_assert_int_gt(l.count, 0);
    return l;
}

static int has_case(const bw_case_list *l, int64_t n, int offset)
{
    for (int i = 0; i < l->count; i++)
        if (l->items[i].n == n && l->items[i].offset_elems == offset)
            return 1;
    return 0;
}

static int has_n(const bw_case_list *l, int64_t n)
{
    for (int i = 0; i < l->count; i++)
        if (l->items[i].n == n)
            return 1;
    return 0;
}

static const char *const exercises[] = {"haxpy", "vector_sum"};

/* Catches a generator that skips an offset (e.g. loops to < 15) or a length. */
START_TEST(small_lengths_every_offset)
{
    static const int64_t lengths[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                                      31, 33, 127, 129, 255, 257, 1023, 1025};
    bw_case_list l = gen(exercises[_i], BW_PUBLIC_SEED, 0);
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++)
        for (int off = 0; off < 16; off++)
            ck_assert_msg(has_case(&l, lengths[k], off), "missing n=%lld offset=%d",
                          (long long)lengths[k], off);
    bw_cases_free(&l);
}
END_TEST

/* Catches a missing length class: 2^k +- 1, exact powers, primes, INT_MAX. */
START_TEST(length_classes)
{
    bw_case_list l = gen(exercises[_i], BW_PUBLIC_SEED, 0);
    for (int k = 11; k <= 24; k++) {
        ck_assert_msg(has_n(&l, ((int64_t)1 << k) - 1), "missing 2^%d-1", k);
        ck_assert_msg(has_n(&l, ((int64_t)1 << k) + 1), "missing 2^%d+1", k);
    }
    ck_assert(has_n(&l, 4096) && has_n(&l, 65536) && has_n(&l, (int64_t)1 << 24));
    ck_assert(has_n(&l, 65537) && has_n(&l, 1000003) && has_n(&l, 16777213));
    /* Medium lengths up to 2^16 with every offset. */
    for (int off = 0; off < 16; off++)
        ck_assert(has_case(&l, 65535, off) && has_case(&l, 2049, off));
    int huge = 0;
    for (int i = 0; i < l.count; i++)
        if (l.items[i].n == INT_MAX) {
            huge++;
            ck_assert_int_eq(l.items[i].group, BW_GROUP_HUGE);
        }
    ck_assert_int_eq(huge, 1);
    bw_cases_free(&l);
}
END_TEST

/* Catches an empty group or a case placed in the wrong group. */
START_TEST(groups_and_invariants)
{
    for (int hidden = 0; hidden <= 1; hidden++) {
        bw_case_list l = gen(exercises[_i], BW_PUBLIC_SEED, hidden);
        int groups[5] = {0}, values[3] = {0};
        for (int i = 0; i < l.count; i++) {
            const bw_case *c = &l.items[i];
            ck_assert_int_eq(c->index, i);
            ck_assert(c->n >= 1 && c->n <= INT_MAX);
            ck_assert(c->offset_elems >= 0 && 2 * c->offset_elems < 256);
            ck_assert(c->group >= BW_GROUP_SMALL && c->group <= BW_GROUP_HUGE);
            groups[c->group]++;
            values[c->values]++;
            if (c->group == BW_GROUP_SMALL)
                ck_assert(c->n <= 1025);
            if (c->group == BW_GROUP_MEDIUM)
                ck_assert(c->n > 1025 && c->n <= (1 << 20));
            if (c->group == BW_GROUP_LARGE)
                ck_assert(c->n > (1 << 20) && c->n <= (1 << 24) + 1);
            if (c->group != BW_GROUP_SPECIAL)
                ck_assert_int_eq(c->values, BW_VALUES_RANDOM);
        }
        for (int g = 0; g < 5; g++)
            ck_assert_msg(groups[g] > 0, "group %s empty", bw_case_group_name((bw_case_group)g));
        ck_assert(values[BW_VALUES_SPECIAL] > 0 && values[BW_VALUES_CANCEL] > 0);
        bw_cases_free(&l);
    }
}
END_TEST

/* Catches a random offset drawn from a range one too wide (it needs many
 * seeds to show up), and n out of range under any seed. */
START_TEST(offsets_in_range_for_many_seeds)
{
    int bad = 0;
    for (uint64_t seed = 0; seed < 200; seed++) {
        bw_case_list l = gen(exercises[_i], seed * UINT64_C(0x9E3779B97F4A7C15), 1);
        for (int i = 0; i < l.count; i++)
            bad += l.items[i].offset_elems < 0 || 2 * l.items[i].offset_elems >= 256 ||
                   l.items[i].n < 1 || l.items[i].n > INT_MAX;
        bw_cases_free(&l);
    }
    ck_assert_int_eq(bad, 0);
}
END_TEST

/* Catches a case table that grows too big (slow) or too thin. */
START_TEST(size_budget)
{
    bw_case_list l = gen(exercises[_i], BW_PUBLIC_SEED, 0);
    double sum = 0;
    for (int i = 0; i < l.count; i++)
        if (l.items[i].group != BW_GROUP_HUGE)
            sum += (double)l.items[i].n;
    ck_assert_int_ge(l.count, 600);
    ck_assert_int_le(l.count, 1500);
    ck_assert_msg(sum < 3e8, "sum of n %.0f", sum);
    bw_cases_free(&l);
}
END_TEST

static int has_kind(const bw_case_list *l, const char *kind, bw_value_class v)
{
    for (int i = 0; i < l->count; i++)
        if (strcmp(l->items[i].alpha_kind, kind) == 0 && l->items[i].values == v)
            return 1;
    return 0;
}

/* Catches a missing alpha class, or an alpha that does not match its kind. */
START_TEST(alpha_kinds_haxpy)
{
    static const char *const kinds[] = {"0", "1", "-1", "tiny", "huge", "random"};
    bw_case_list l = gen("haxpy", BW_PUBLIC_SEED, 0);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int v = BW_VALUES_RANDOM; v <= BW_VALUES_CANCEL; v++)
            ck_assert_msg(has_kind(&l, kinds[k], (bw_value_class)v), "no alpha %s with %s",
                          kinds[k], bw_value_class_name((bw_value_class)v));
    float first_random = NAN;
    int distinct_random = 0;
    for (int i = 0; i < l.count; i++) {
        const bw_case *c = &l.items[i];
        float a = c->alpha;
        ck_assert(isfinite(a));
        if (strcmp(c->alpha_kind, "0") == 0)
            ck_assert(a == 0.0f);
        else if (strcmp(c->alpha_kind, "1") == 0)
            ck_assert(a == 1.0f);
        else if (strcmp(c->alpha_kind, "-1") == 0)
            ck_assert(a == -1.0f);
        else if (strcmp(c->alpha_kind, "tiny") == 0)
            ck_assert(a != 0.0f && fabsf(a) < 1e-20f);
        else if (strcmp(c->alpha_kind, "huge") == 0)
            ck_assert(fabsf(a) > 1e20f);
        else {
            ck_assert_str_eq(c->alpha_kind, "random");
            ck_assert(a != 0.0f);
            if (isnan(first_random))
                first_random = a;
            else if (a != first_random)
                distinct_random++;
        }
    }
    ck_assert_int_gt(distinct_random, 100);
    bw_cases_free(&l);
}
END_TEST

/* Catches alpha leaking into an exercise that takes none. */
START_TEST(no_alpha_for_vector_sum)
{
    bw_case_list l = gen("vector_sum", BW_PUBLIC_SEED, 1);
    for (int i = 0; i < l.count; i++) {
        ck_assert(l.items[i].alpha == 0.0f);
        ck_assert_str_eq(l.items[i].alpha_kind, "-");
    }
    bw_cases_free(&l);
}
END_TEST

static void assert_same_case(const bw_case *a, const bw_case *b)
{
    ck_assert_int_eq(a->index, b->index);
    ck_assert_int_eq(a->n, b->n);
    ck_assert_int_eq(a->offset_elems, b->offset_elems);
    ck_assert(memcmp(&a->alpha, &b->alpha, sizeof a->alpha) == 0);
    ck_assert_str_eq(a->alpha_kind, b->alpha_kind);
    ck_assert_int_eq(a->values, b->values);
    ck_assert_int_eq(a->group, b->group);
    ck_assert(a->data_seed == b->data_seed);
}

/* Catches hidden state (time, addresses, statics) in the generator. */
START_TEST(deterministic)
{
    bw_case_list a = gen(exercises[_i], 12345, 1), b = gen(exercises[_i], 12345, 1);
    ck_assert_int_eq(a.count, b.count);
    for (int i = 0; i < a.count; i++)
        assert_same_case(&a.items[i], &b.items[i]);
    bw_cases_free(&a);
    bw_cases_free(&b);
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Catches data seeds that ignore the seed or the index. */
START_TEST(seeds_differ)
{
    bw_case_list a = gen(exercises[_i], 1, 0), b = gen(exercises[_i], 2, 0);
    ck_assert_int_eq(a.count, b.count);
    uint64_t *s = malloc((size_t)a.count * sizeof *s);
    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < a.count; i++) {
        ck_assert(a.items[i].data_seed != b.items[i].data_seed);
        s[i] = a.items[i].data_seed;
    }
    qsort(s, (size_t)a.count, sizeof *s, cmp_u64);
    for (int i = 1; i < a.count; i++)
        ck_assert(s[i] != s[i - 1]);
    free(s);
    bw_cases_free(&a);
    bw_cases_free(&b);
}
END_TEST

/* Catches hidden cases inserted among the public ones, or public cases that
 * change when the hidden ones are added (both break `--case K`). */
START_TEST(hidden_after_public)
{
    bw_case_list pub = gen(exercises[_i], BW_PUBLIC_SEED, 0);
    bw_case_list all = gen(exercises[_i], BW_PUBLIC_SEED, 1);
    ck_assert_int_gt(all.count, pub.count);
    for (int i = 0; i < pub.count; i++)
        assert_same_case(&pub.items[i], &all.items[i]);
    int new_shape = 0;
    for (int i = pub.count; i < all.count; i++)
        new_shape += !has_case(&pub, all.items[i].n, all.items[i].offset_elems);
    ck_assert_int_gt(new_shape, (all.count - pub.count) / 2);
    /* Another seed draws other hidden cases. */
    bw_case_list other = gen(exercises[_i], 99, 1);
    int same = 0;
    for (int i = pub.count; i < all.count; i++)
        same += all.items[i].n == other.items[i].n;
    ck_assert_int_lt(same, (all.count - pub.count) / 2);
    bw_cases_free(&pub);
    bw_cases_free(&all);
    bw_cases_free(&other);
}
END_TEST

/* The benchmark's "physically possible" floor: inputs always from memory,
 * the output only beyond what L2 holds. Catches a floor that counts the
 * output at every size (honest calls whose output fits in L2 refused), one
 * that forgets the in-place input, and one that subtracts L2 from reads. */
START_TEST(least_dram_traffic)
{
    const bw_exercise *haxpy = bw_exercise_find("haxpy");
    const bw_exercise *vsum = bw_exercise_find("vector_sum");
    const int64_t l2 = 50 << 20, n = 1 << 24;
    ck_assert_double_eq(bw_exercise_least_dram_bytes(haxpy, n, l2), 4.0 * n);
    ck_assert_double_eq(bw_exercise_least_dram_bytes(vsum, n, l2), 4.0 * n);
    ck_assert_double_eq(bw_exercise_least_dram_bytes(haxpy, 1 << 28, l2),
                        4.0 * (1 << 28) + 2.0 * (1 << 28) - (double)l2);
    /* With no L2 the floor is every byte a call moves: a, b read, c written. */
    ck_assert_int_eq(bw_exercise_call_bytes(vsum, 1 << 28), (int64_t)6 << 28);
    ck_assert_int_eq(bw_exercise_call_bytes(haxpy, 1 << 28), (int64_t)6 << 28);
    ck_assert_double_eq(bw_exercise_least_dram_bytes(vsum, 1 << 28, 0),
                        (double)bw_exercise_call_bytes(vsum, 1 << 28));
    ck_assert_double_eq(bw_exercise_least_dram_bytes(vsum, 1 << 28, 0), 6.0 * (1 << 28));
    /* Wider elements count their bytes (saxpy: fp32, in place); a
     * reduction's one result adds its 4 bytes, never n of them. */
    const bw_exercise *saxpy = bw_exercise_find("saxpy");
    const bw_exercise *rsum = bw_exercise_find("reduce_sum");
    ck_assert_ptr_nonnull(saxpy);
    ck_assert_ptr_nonnull(rsum);
    ck_assert_int_eq(bw_exercise_call_bytes(saxpy, n), (int64_t)12 * n);
    ck_assert_double_eq(bw_exercise_least_dram_bytes(saxpy, n, l2), 8.0 * n + 4.0 * n - (double)l2);
    ck_assert_double_eq(bw_exercise_least_dram_bytes(saxpy, 1 << 20, l2), 8.0 * (1 << 20));
    ck_assert_int_eq(bw_exercise_call_bytes(rsum, n), (int64_t)2 * n + 4);
    ck_assert_double_eq(bw_exercise_least_dram_bytes(rsum, n, l2), 2.0 * n);
    ck_assert_double_eq(bw_exercise_least_dram_bytes(rsum, n, 0), 2.0 * n + 4.0);
}
END_TEST

START_TEST(group_lists)
{
    unsigned mask = 0;
    ck_assert_int_eq(bw_parse_groups("small", &mask), 1);
    ck_assert_uint_eq(mask, 1u << BW_GROUP_SMALL);
    ck_assert_int_eq(bw_parse_groups("special,small,huge", &mask), 3);
    ck_assert_uint_eq(mask, (1u << BW_GROUP_SMALL) | (1u << BW_GROUP_SPECIAL) | (1u << BW_GROUP_HUGE));
    ck_assert_int_eq(bw_parse_groups("large,medium", &mask), 2);
    ck_assert_uint_eq(mask, (1u << BW_GROUP_LARGE) | (1u << BW_GROUP_MEDIUM));
    /* unknown, empty, a prefix, a trailing comma */
    ck_assert_int_eq(bw_parse_groups("tiny", &mask), -1);
    ck_assert_int_eq(bw_parse_groups("", &mask), -1);
    ck_assert_int_eq(bw_parse_groups("smal", &mask), -1);
    ck_assert_int_eq(bw_parse_groups("small,", &mask), -1);
    ck_assert_int_eq(bw_parse_groups("small,,large", &mask), -1);
}
END_TEST

START_TEST(names)
{
    ck_assert_str_eq(bw_case_group_name(BW_GROUP_SMALL), "small");
    ck_assert_str_eq(bw_case_group_name(BW_GROUP_MEDIUM), "medium");
    ck_assert_str_eq(bw_case_group_name(BW_GROUP_LARGE), "large");
    ck_assert_str_eq(bw_case_group_name(BW_GROUP_SPECIAL), "special");
    ck_assert_str_eq(bw_case_group_name(BW_GROUP_HUGE), "huge");
    ck_assert_str_eq(bw_value_class_name(BW_VALUES_RANDOM), "random");
    ck_assert_str_eq(bw_value_class_name(BW_VALUES_SPECIAL), "special");
    ck_assert_str_eq(bw_value_class_name(BW_VALUES_CANCEL), "cancel");
    ck_assert_str_eq(bw_value_class_name(BW_VALUES_POSITIVE), "positive");
    ck_assert_str_eq(bw_value_class_name(BW_VALUES_EXACT), "exact");
    ck_assert_str_eq(bw_value_class_name(BW_VALUES_SPIKES), "spikes");
    ck_assert_str_eq(bw_value_class_name(BW_VALUES_EXACT_POSITIVE), "exact_positive");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cases");
    TCase *t = tcase_create("generator");
    tcase_add_loop_test(t, small_lengths_every_offset, 0, 2);
    tcase_add_loop_test(t, length_classes, 0, 2);
    tcase_add_loop_test(t, groups_and_invariants, 0, 2);
    tcase_add_loop_test(t, offsets_in_range_for_many_seeds, 0, 2);
    tcase_add_loop_test(t, size_budget, 0, 2);
    tcase_add_test(t, alpha_kinds_haxpy);
    tcase_add_test(t, no_alpha_for_vector_sum);
    tcase_add_loop_test(t, deterministic, 0, 2);
    tcase_add_loop_test(t, seeds_differ, 0, 2);
    tcase_add_loop_test(t, hidden_after_public, 0, 2);
    tcase_add_test(t, names);
    tcase_add_test(t, group_lists);
    tcase_add_test(t, least_dram_traffic);
    suite_add_tcase(s, t);
    return bw_run_suite(s);
}
