/* The case table. Everything is derived from the seed with a splitmix64
 * generator, so the same seed always yields the same list and `--case K`
 * can rebuild case K by regenerating the list. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "mix64.h"
#include "cases.h"

typedef struct {
    uint64_t state;
} rng;

static uint64_t rng_next(rng *r)
{
    r->state += UINT64_C(0x9E3779B97F4A7C15);
    return bw_mix64(r->state);
}

/* Uniform in [0, bound); the modulo bias is irrelevant for bounds this small. */
static int rng_below(rng *r, int bound)
{
    return (int)(rng_next(r) % (uint64_t)bound);
}

/* Each case's data seed depends only on (seed, index): a case keeps its
 * input values whatever else is added to the list. */
static uint64_t data_seed_for(uint64_t seed, int index)
{
    return bw_mix64(seed ^ bw_mix64((uint64_t)index * UINT64_C(0xD1B54A32D192ED03) + 0x5EEDu));
}

/* A random alpha that is rarely exactly representable in bf16 (23 random
 * mantissa bits), magnitude 2^-4 .. 2^4, either sign. */
static float random_alpha(rng *r)
{
    uint64_t h = rng_next(r);
    uint32_t sign = (uint32_t)(h & 1u) << 31;
    uint32_t exponent = (uint32_t)(127 - 4 + (int)((h >> 1) % 9u)) << 23;
    uint32_t mantissa = (uint32_t)(h >> 8) & 0x7FFFFFu;
    uint32_t bits = sign | exponent | mantissa;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

typedef struct {
    bw_case_list *list;
    int capacity;
    uint64_t seed;
    const bw_exercise *ex;
    int failed;
} builder;

static void add(builder *b, bw_case_group g, int64_t n, int offset, bw_value_class v,
                const char *kind, float alpha)
{
    if (b->failed)
        return;
    bw_case_list *l = b->list;
    if (l->count == b->capacity) {
        int cap = b->capacity ? 2 * b->capacity : 1024;
        bw_case *p = realloc(l->items, (size_t)cap * sizeof *p);
        if (!p) {
            b->failed = 1;
            return;
        }
        l->items = p;
        b->capacity = cap;
    }
    bw_case *c = &l->items[l->count];
    c->index = l->count;
    c->n = n;
    c->offset_elems = offset;
    c->values = v;
    c->group = g;
    c->data_seed = data_seed_for(b->seed, l->count);
    if (b->ex->uses_alpha) {
        c->alpha = alpha;
        c->alpha_kind = kind;
    } else {
        c->alpha = 0.0f;
        c->alpha_kind = "-";
    }
    l->count++;
}

/* A case with random values and a random alpha (ignored without alpha). */
static void add_random(builder *b, rng *r, bw_case_group g, int64_t n, int offset)
{
    add(b, g, n, offset, BW_VALUES_RANDOM, "random", random_alpha(r));
}

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

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
        add_random(b, &r, BW_GROUP_LARGE, large_lengths[i], 1 + rng_below(&r, 127));
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

    add_random(b, &r, BW_GROUP_HUGE, INT_MAX, rng_below(&r, 128));
}

static bw_case_group group_for(int64_t n)
{
    if (n <= 1025)
        return BW_GROUP_SMALL;
    if (n <= ((int64_t)1 << 20))
        return BW_GROUP_MEDIUM;
    return BW_GROUP_LARGE;
}

/* The instructor's extra cases: lengths and offsets nobody can tune for
 * without knowing the seed. */
static void add_hidden(builder *b)
{
    rng r = {bw_mix64(b->seed ^ UINT64_C(0x68696464656E))};
    for (int i = 0; i < 48; i++) {
        int64_t n = 1 + rng_below(&r, 4096);
        add_random(b, &r, group_for(n), n, rng_below(&r, 128));
    }
    for (int i = 0; i < 16; i++) {
        int64_t n = 4097 + rng_below(&r, (1 << 20) - 4096);
        add_random(b, &r, group_for(n), n, rng_below(&r, 128));
    }
    for (int i = 0; i < 4; i++) {
        int64_t n = ((int64_t)1 << 20) + 1 + rng_below(&r, (1 << 24) - (1 << 20));
        add_random(b, &r, group_for(n), n, rng_below(&r, 128));
    }
    for (int i = 0; i < 16; i++) {
        int64_t n = 1 + rng_below(&r, 70000);
        bw_value_class v = (i & 1) ? BW_VALUES_CANCEL : BW_VALUES_SPECIAL;
        int a = rng_below(&r, COUNT(alpha_classes));
        float alpha = alpha_classes[a].alpha;
        if (strcmp(alpha_classes[a].kind, "random") == 0)
            alpha = random_alpha(&r);
        add(b, BW_GROUP_SPECIAL, n, rng_below(&r, 128), v, alpha_classes[a].kind, alpha);
    }
}

int bw_cases_generate(const bw_exercise *ex, uint64_t seed, int hidden, bw_case_list *out)
{
    out->items = NULL;
    out->count = 0;
    builder b = {out, 0, seed, ex, 0};
    add_public(&b);
    if (hidden)
        add_hidden(&b);
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
    }
    return "unknown";
}
