/* The pieces every shape's case table is built with (cases.c,
 * cases_matrix.c): a splitmix64 stream, and the list
 * being built. Private to the judge's case generators. */
#ifndef BWLAB_CASES_BUILD_H
#define BWLAB_CASES_BUILD_H
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "mix64.h"
#include "cases.h"

typedef struct {
    uint64_t state;
} rng;

static inline uint64_t rng_next(rng *r)
{
    return bw_mix64_next(&r->state);
}

/* Uniform in [0, bound); the modulo bias is irrelevant for bounds this small. */
static inline int rng_below(rng *r, int bound)
{
    return (int)(rng_next(r) % (uint64_t)bound);
}

/* Each case's data seed depends only on (seed, index): a case keeps its
 * input values whatever else is added to the list. */
static inline uint64_t data_seed_for(uint64_t seed, int index)
{
    return bw_mix64(seed ^ bw_mix64((uint64_t)index * UINT64_C(0xD1B54A32D192ED03) + 0x5EEDu));
}

/* A random alpha that is rarely exactly representable in bf16 (23 random
 * mantissa bits), magnitude 2^-4 .. 2^4, either sign. */
static inline float random_alpha(rng *r)
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

/* Appends a case of rows x cols elements (a vector: 1 x n). */
static inline void add_shaped(builder *b, bw_case_group g, int64_t rows, int64_t cols, int offset,
                              bw_value_class v, const char *kind, float alpha)
{
    int64_t n = rows * cols;
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
    c->rows = rows;
    c->cols = cols;
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

static inline void add(builder *b, bw_case_group g, int64_t n, int offset, bw_value_class v,
                       const char *kind, float alpha)
{
    add_shaped(b, g, 1, n, offset, v, kind, alpha);
}

/* A case with random values and a random alpha (ignored without alpha). */
static inline void add_random(builder *b, rng *r, bw_case_group g, int64_t n, int offset)
{
    add(b, g, n, offset, BW_VALUES_RANDOM, "random", random_alpha(r));
}

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The group a length belongs to by size. */
static inline bw_case_group group_for(int64_t n)
{
    if (n <= 1025)
        return BW_GROUP_SMALL;
    if (n <= ((int64_t)1 << 20))
        return BW_GROUP_MEDIUM;
    return BW_GROUP_LARGE;
}

void bw_cases_matrix(builder *b, int hidden);

#endif

