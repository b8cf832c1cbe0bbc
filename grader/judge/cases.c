/* The case table. Everything is derived from the seed with a splitmix64
 * generator, so the same seed always yields the same list and `--case K`
 * can rebuild case K by regenerating the list. This file holds the
 * elementwise and reduction tables (a reduction takes the elementwise
 * lengths and offsets, with values of its own) and what every shape
 * shares; a matrix's table is in cases_matrix.c. */
#include "cases_build.h"

static const int64_t small_lengths[] = {
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
    31, 33, 127, 129, 255, 257, 1023, 1025,
};

/* Medium lengths up to 2^16 get every offset; the rest a sample of them. */
static const int64_t medium_all_offsets[] = {
    2047, 2049, 2053, 4095, 4096, 4097, 8191, 8193, 10007,
    16383, 16385, 30011, 32767, 32769, 65535, 65536, 65537,
};
static const int64_t medium_some_offsets[] = {
    100003, 131071, 131073, 262143, 262145, 524287, 524289,
    1000003, 1048575, 1048576,
};
static const int medium_offsets[] = {0, 1, 7, 8, 15};

static const int64_t large_lengths[] = {
    1048577, 2097151, 2097153, 4194301, 4194303, 4194304, 4194305,
    8388607, 8388609, 16777213, 16777215, 16777216, 16777217,
};

/* The alpha classes of the special group. The tiny ones stay normal floats:
 * a subnormal alpha loses most of its digits when a kernel rounds it to
 * bf16, which the tolerance's product term does not cover. */
static const struct {
    const char *kind;
    float alpha;
} alpha_classes[] = {
    {"0", 0.0f},       {"1", 1.0f},        {"-1", -1.0f},
    {"tiny", 1e-30f},  {"tiny", -1.5e-38f}, {"huge", 1e30f},
    {"huge", -3.0e38f}, {"random", 0.0f},   {"random", 0.0f},
    {"random", 0.0f},
};
/* Multiples of 8 and ragged lengths, and (below) offsets whose count is
 * prime to the number of lengths, so that a failure confined to special
 * values is not mistaken for a tail or head problem. */
static const int64_t special_lengths[] = {7, 4096, 4097, 65539};
static const int special_offsets[] = {0, 1, 3, 8, 15};

/* Without alpha the special group varies length and offset instead. */
static const int64_t special_lengths_plain[] = {1, 7, 33, 1024, 4097, 65536, 1000003};

static void add_public(builder *b)
{
    const int max_off = bw_exercise_max_offset(b->ex);   /* 128 for bf16 */
    /* A stream apart from the data seeds, used for random alphas and offsets. */
    rng r = {bw_mix64(b->seed ^ UINT64_C(0x7075626C6963))};

    for (int i = 0; i < COUNT(small_lengths); i++)
        for (int off = 0; off < 16; off++)
            add_random(b, &r, BW_GROUP_SMALL, small_lengths[i], off);

    for (int i = 0; i < COUNT(medium_all_offsets); i++)
        for (int off = 0; off < 16; off++)
            add_random(b, &r, BW_GROUP_MEDIUM, medium_all_offsets[i], off);
    for (int i = 0; i < COUNT(medium_some_offsets); i++)
        for (int j = 0; j < COUNT(medium_offsets); j++)
            add_random(b, &r, BW_GROUP_MEDIUM, medium_some_offsets[i], medium_offsets[j]);

    /* Offset 0 plus one random one (below 256 bytes) per large length: two
     * cases each keep the total work within a few seconds of GPU time. */
    for (int i = 0; i < COUNT(large_lengths); i++) {
        add_random(b, &r, BW_GROUP_LARGE, large_lengths[i], 0);
        add_random(b, &r, BW_GROUP_LARGE, large_lengths[i], 1 + rng_below(&r, max_off - 1));
    }

    int rot = 0;
    if (b->ex->uses_alpha) {
        static const bw_value_class classes[] = {BW_VALUES_RANDOM, BW_VALUES_SPECIAL,
                                                 BW_VALUES_CANCEL};
        for (int v = 0; v < COUNT(classes); v++)
            for (int a = 0; a < COUNT(alpha_classes); a++)
                for (int l = 0; l < COUNT(special_lengths); l++) {
                    float alpha = alpha_classes[a].alpha;
                    if (strcmp(alpha_classes[a].kind, "random") == 0)
                        alpha = random_alpha(&r);
                    int off = special_offsets[rot++ % COUNT(special_offsets)];
                    add(b, BW_GROUP_SPECIAL, special_lengths[l], off, classes[v],
                        alpha_classes[a].kind, alpha);
                }
    } else {
        static const bw_value_class classes[] = {BW_VALUES_SPECIAL, BW_VALUES_CANCEL};
        for (int v = 0; v < COUNT(classes); v++)
            for (int l = 0; l < COUNT(special_lengths_plain); l++)
                for (int k = 0; k < 2; k++) {
                    int off = special_offsets[rot++ % COUNT(special_offsets)];
                    add(b, BW_GROUP_SPECIAL, special_lengths_plain[l], off, classes[v], "-",
                        0.0f);
                }
    }

    add_random(b, &r, BW_GROUP_HUGE, INT_MAX, rng_below(&r, max_off));
}

/* The instructor's extra cases: lengths and offsets nobody can tune for
 * without knowing the seed. */
static void add_hidden(builder *b)
{
    const int max_off = bw_exercise_max_offset(b->ex);
    rng r = {bw_mix64(b->seed ^ UINT64_C(0x68696464656E))};
    for (int i = 0; i < 48; i++) {
        int64_t n = 1 + rng_below(&r, 4096);
        add_random(b, &r, group_for(n), n, rng_below(&r, max_off));
    }
    for (int i = 0; i < 16; i++) {
        int64_t n = 4097 + rng_below(&r, (1 << 20) - 4096);
        add_random(b, &r, group_for(n), n, rng_below(&r, max_off));
    }
    for (int i = 0; i < 4; i++) {
        int64_t n = ((int64_t)1 << 20) + 1 + rng_below(&r, (1 << 24) - (1 << 20));
        add_random(b, &r, group_for(n), n, rng_below(&r, max_off));
    }
    for (int i = 0; i < 16; i++) {
        int64_t n = 1 + rng_below(&r, 70000);
        bw_value_class v = (i & 1) ? BW_VALUES_CANCEL : BW_VALUES_SPECIAL;
        int a = rng_below(&r, COUNT(alpha_classes));
        float alpha = alpha_classes[a].alpha;
        if (strcmp(alpha_classes[a].kind, "random") == 0)
            alpha = random_alpha(&r);
        add(b, BW_GROUP_SPECIAL, n, rng_below(&r, max_off), v, alpha_classes[a].kind, alpha);
    }
}

/* ---- a reduction: the elementwise lengths and offsets, other values ---- */

/* The value classes a reduction's ordinary cases take in turn: random
 * values, positive ones (a sum that only grows shows a short accumulator),
 * and two kinds whose every partial sum is exact in float, so that a lost or
 * doubled element shows as an exact difference (inputs.c builds them). */
static const bw_value_class sum_classes[] = {BW_VALUES_RANDOM, BW_VALUES_POSITIVE,
                                             BW_VALUES_EXACT, BW_VALUES_SPIKES};

static void add_sum(builder *b, bw_case_group g, int64_t n, int offset, int turn)
{
    add(b, g, n, offset, sum_classes[turn % COUNT(sum_classes)], "-", 0.0f);
}

static void reduction_public(builder *b)
{
    rng r = {bw_mix64(b->seed ^ UINT64_C(0x73756D73))};
    const int max_off = bw_exercise_max_offset(b->ex);
    int turn = 0;
    for (int i = 0; i < COUNT(small_lengths); i++)
        for (int off = 0; off < 16; off++)
            add_sum(b, BW_GROUP_SMALL, small_lengths[i], off, turn++);
    for (int i = 0; i < COUNT(medium_all_offsets); i++)
        for (int off = 0; off < 16; off++)
            add_sum(b, BW_GROUP_MEDIUM, medium_all_offsets[i], off, turn++);
    for (int i = 0; i < COUNT(medium_some_offsets); i++)
        for (int j = 0; j < COUNT(medium_offsets); j++)
            add_sum(b, BW_GROUP_MEDIUM, medium_some_offsets[i], medium_offsets[j], turn++);
    for (int i = 0; i < COUNT(large_lengths); i++) {
        add_sum(b, BW_GROUP_LARGE, large_lengths[i], 0, turn++);
        add_sum(b, BW_GROUP_LARGE, large_lengths[i], 1 + rng_below(&r, max_off - 1), turn++);
    }
    /* Values near the top of the range (a sum that overflows), or zeros and
     * positive values with a NaN, a +Inf, or +Inf and -Inf planted: one
     * kind after the other (values_shapes.c, by the case index). */
    int rot = 0;
    for (int l = 0; l < COUNT(special_lengths_plain); l++)
        for (int k = 0; k < 4; k++)
            add(b, BW_GROUP_SPECIAL, special_lengths_plain[l],
                special_offsets[rot++ % COUNT(special_offsets)], BW_VALUES_SPECIAL, "-", 0.0f);
    /* The largest: exact, so that an index that wraps loses or doubles a
     * spike at the head, the tail or a block edge, and shows which. */
    add(b, BW_GROUP_HUGE, INT_MAX, rng_below(&r, max_off), BW_VALUES_SPIKES, "-", 0.0f);
}

static void reduction_hidden(builder *b)
{
    rng r = {bw_mix64(b->seed ^ UINT64_C(0x6869646573756D))};
    const int max_off = bw_exercise_max_offset(b->ex);
    for (int i = 0; i < 48; i++) {
        int64_t n = 1 + rng_below(&r, 4096);
        add_sum(b, group_for(n), n, rng_below(&r, max_off), rng_below(&r, COUNT(sum_classes)));
    }
    for (int i = 0; i < 16; i++) {
        int64_t n = 4097 + rng_below(&r, (1 << 20) - 4096);
        add_sum(b, group_for(n), n, rng_below(&r, max_off), rng_below(&r, COUNT(sum_classes)));
    }
    for (int i = 0; i < 4; i++) {
        int64_t n = ((int64_t)1 << 20) + 1 + rng_below(&r, (1 << 24) - (1 << 20));
        add_sum(b, group_for(n), n, rng_below(&r, max_off), rng_below(&r, COUNT(sum_classes)));
    }
    for (int i = 0; i < 8; i++)
        add(b, BW_GROUP_SPECIAL, 1 + rng_below(&r, 70000), rng_below(&r, max_off),
            BW_VALUES_SPECIAL, "-", 0.0f);
}

int bw_cases_generate(const bw_exercise *ex, uint64_t seed, int hidden, bw_case_list *out)
{
    out->items = NULL;
    out->count = 0;
    builder b = {out, 0, seed, ex, 0};
    switch (ex->shape) {
    case BW_SHAPE_ELEMENTWISE:
        add_public(&b);
        if (hidden)
            add_hidden(&b);
        break;
    case BW_SHAPE_REDUCTION:
        reduction_public(&b);
        if (hidden)
            reduction_hidden(&b);
        break;
    case BW_SHAPE_MATRIX:
        bw_cases_matrix(&b, hidden);
        break;
    }
    if (b.failed) {
        bw_cases_free(out);
        return -1;
    }
    return 0;
}

void bw_cases_free(bw_case_list *list)
{
    if (!list)
        return;
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

void bw_case_scalars(const bw_exercise *ex, const bw_case *c, float out[BW_MAX_SCALARS])
{
    rng r = {bw_mix64(c->data_seed ^ UINT64_C(0x7363616C617273))};
    for (int s = 0; s < BW_MAX_SCALARS; s++)
        out[s] = s >= ex->n_scalars ? 0.0f : s == 0 ? c->alpha : random_alpha(&r);
}

const char *bw_case_group_name(bw_case_group g)
{
    switch (g) {
    case BW_GROUP_SMALL: return "small";
    case BW_GROUP_MEDIUM: return "medium";
    case BW_GROUP_LARGE: return "large";
    case BW_GROUP_SPECIAL: return "special";
    case BW_GROUP_HUGE: return "huge";
    }
    return "unknown";
}

int bw_parse_groups(const char *list, unsigned *mask)
{
    int count = 0;
    *mask = 0;
    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int g = 0; g < BW_N_GROUPS && len > 0; g++) {
            const char *name = bw_case_group_name((bw_case_group)g);
            if (strlen(name) == len && strncmp(p, name, len) == 0)
                found = g;
        }
        if (found < 0)
            return -1;
        *mask |= 1u << found;
        count++;
        p += len;
        if (*p == '\0')
            return count;
    }
}

const char *bw_value_class_name(bw_value_class v)
{
    switch (v) {
    case BW_VALUES_RANDOM: return "random";
    case BW_VALUES_SPECIAL: return "special";
    case BW_VALUES_CANCEL: return "cancel";
    case BW_VALUES_POSITIVE: return "positive";
    case BW_VALUES_EXACT: return "exact";
    case BW_VALUES_SPIKES: return "spikes";
    case BW_VALUES_EXACT_POSITIVE: return "exact_positive";
    }
    return "unknown";
}

bw_value_class bw_timed_values(const bw_exercise *ex)
{
    return ex->shape == BW_SHAPE_REDUCTION ? BW_VALUES_EXACT_POSITIVE : BW_VALUES_RANDOM;
}
