/* The tolerance check of validate.h, run in parallel over fixed blocks whose
 * partial results are merged in index order, so the outcome (including which
 * mismatches are reported) is the same for every thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "validate.h"
#include "image.h"
#include "parallel_for.h"
#include "hot_loop.h"

/* Inputs one element can have; the exercise table stays below this. */
#define BW_MAX_INPUTS 8

double bw_ulp(double magnitude)
{
    return isnan(magnitude) ? NAN : bf16_ulp_at(magnitude);
}

double bw_bf16_as_double(bf16_t h)
{
    if (bf16_is_nan(h))
        return NAN;
    if (bf16_is_inf(h))
        return (h & 0x8000) ? -0x1p128 : 0x1p128;
    return (double)bf16_to_float(h);
}

double bw_ulps_between(bf16_t expected, bf16_t got)
{
    if (expected == got)
        return 0.0;
    int en = bf16_is_nan(expected), gn = bf16_is_nan(got);
    if (en && gn)
        return 0.0;
    if (en || gn)
        return INFINITY;
    double e = bw_bf16_as_double(expected);
    return fabs(bw_bf16_as_double(got) - e) / bw_ulp(e);
}

int bw_element_ok(const bw_exercise *ex, float alpha, const bf16_t *in, bf16_t expected,
                  bf16_t got)
{
    if (got == BW_POISON)
        return 0;
    if (expected == got)
        return 1;
    int en = bf16_is_nan(expected), gn = bf16_is_nan(got);
    if (en || gn)
        return en && gn;
    return bw_exact_accepts(ex->exact(alpha, in), got);
}

void bw_compare_init(bw_compare_result *r)
{
    r->mismatches = 0;
    r->unwritten = 0;
    r->max_ulps = 0.0;
    r->first_bad = -1;
    r->last_bad = -1;
    r->n_reported = 0;
}

/* How many of a[0..len) and b[0..len) differ. Nearly every call finds none,
 * which memcmp settles fastest; counting uses 32-bit partial sums, which
 * vectorize twice as wide as a 64-bit count of 16-bit compares. */
BW_HOT_LOOP static int64_t count_differences(const bf16_t *a, const bf16_t *b, int64_t len)
{
    if (len <= 0 || memcmp(a, b, (size_t)len * sizeof *a) == 0)
        return 0;
    int64_t k = 0;
    for (int64_t i0 = 0; i0 < len; i0 += (int64_t)1 << 20) {
        int64_t i1 = len - i0 < ((int64_t)1 << 20) ? len : i0 + ((int64_t)1 << 20);
        uint32_t part = 0;
        for (int64_t i = i0; i < i1; i++)
            part += a[i] != b[i];
        k += part;
    }
    return k;
}

void bw_compare_block(const bw_exercise *ex, float alpha, const bf16_t *const *inputs,
                      const bf16_t *expected, const bf16_t *got, int64_t index0, int64_t len,
                      bw_compare_result *r)
{
    /* Nearly every block of a working kernel is bit-exact: one vector pass. */
    if (count_differences(expected, got, len) == 0)
        return;
    int n_inputs = bw_exercise_n_inputs(ex);
    for (int64_t j = 0; j < len; j++) {
        bf16_t e = expected[j], g = got[j];
        if (e == g)
            continue;
        int64_t i = index0 + j;
        bf16_t in[BW_MAX_INPUTS];
        for (int k = 0; k < n_inputs; k++)
            in[k] = inputs[k][j];
        double u = bw_ulps_between(e, g);
        if (u > r->max_ulps)
            r->max_ulps = u;
        if (g == BW_POISON)
            r->unwritten++;
        if (bw_element_ok(ex, alpha, in, e, g))
            continue;
        if (r->first_bad < 0)
            r->first_bad = i;
        r->last_bad = i;
        if (r->n_reported < BW_REPORTED_MISMATCHES) {
            bw_mismatch *m = &r->reported[r->n_reported++];
            m->index = i;
            m->expected = e;
            m->got = g;
            m->ulps = u;
        }
        r->mismatches++;
    }
}

typedef struct {
    const bw_exercise *ex;
    const bf16_t *const *inputs;
    const bf16_t *expected, *got;
    float alpha;
    int n_inputs;
    int64_t n, block;
    bw_compare_result *parts;
} compare_ctx;

static void compare_range(const compare_ctx *c, int64_t begin, int64_t end,
                          bw_compare_result *r)
{
    const bf16_t *in[BW_MAX_INPUTS];
    for (int k = 0; k < c->n_inputs && k < BW_MAX_INPUTS; k++)
        in[k] = c->inputs[k] + begin;
    bw_compare_block(c->ex, c->alpha, in, c->expected + begin, c->got + begin, begin,
                     end - begin, r);
}

static void compare_blocks(int64_t b0, int64_t b1, void *vctx)
{
    const compare_ctx *c = vctx;
    for (int64_t b = b0; b < b1; b++) {
        int64_t begin = b * c->block;
        int64_t end = begin + c->block < c->n ? begin + c->block : c->n;
        bw_compare_init(&c->parts[b]);
        compare_range(c, begin, end, &c->parts[b]);
    }
}

void bw_compare_merge(bw_compare_result *r, const bw_compare_result *p)
{
    r->mismatches += p->mismatches;
    r->unwritten += p->unwritten;
    if (p->max_ulps > r->max_ulps)
        r->max_ulps = p->max_ulps;
    if (p->first_bad >= 0) {
        if (r->first_bad < 0)
            r->first_bad = p->first_bad;
        r->last_bad = p->last_bad;
    }
    for (int k = 0; k < p->n_reported && r->n_reported < BW_REPORTED_MISMATCHES; k++)
        r->reported[r->n_reported++] = p->reported[k];
}

/* At least 64 Ki elements per block, and at most 4096 blocks, which bounds
 * the partial results to about a megabyte even for n near 2^31. */
static int64_t block_for(int64_t n)
{
    int64_t block = (n + 4095) / 4096;
    return block < ((int64_t)1 << 16) ? ((int64_t)1 << 16) : block;
}

void bw_compare_output(const bw_exercise *ex, int64_t n, float alpha,
                       const bf16_t *const *inputs,
                       const bf16_t *expected, const bf16_t *got,
                       bw_compare_result *r, int threads)
{
    compare_ctx c = {ex, inputs, expected, got, alpha, bw_exercise_n_inputs(ex),
                     n, block_for(n), NULL};
    bw_compare_init(r);
    if (n <= 0)
        return;
    int64_t nblocks = (n + c.block - 1) / c.block;
    if (threads > 1 && nblocks > 1)
        c.parts = malloc((size_t)nblocks * sizeof *c.parts);
    if (!c.parts) {
        compare_range(&c, 0, n, r);   /* one thread, or no memory for partials */
        return;
    }
    parallel_for(nblocks, threads, 1, compare_blocks, &c);
    for (int64_t b = 0; b < nblocks; b++)
        bw_compare_merge(r, &c.parts[b]);
    free(c.parts);
}

typedef struct {
    const bf16_t *a, *b;
    int64_t n, block;
    int64_t *count, *first;
} changed_ctx;

static void changed_range(const bf16_t *a, const bf16_t *b, int64_t begin, int64_t end,
                          int64_t *count, int64_t *first)
{
    *count = count_differences(a + begin, b + begin, end - begin);
    *first = -1;
    for (int64_t i = begin; *count > 0 && i < end; i++)
        if (a[i] != b[i]) {
            *first = i;
            break;
        }
}

static void changed_blocks(int64_t b0, int64_t b1, void *vctx)
{
    const changed_ctx *c = vctx;
    for (int64_t blk = b0; blk < b1; blk++) {
        int64_t begin = blk * c->block;
        int64_t end = begin + c->block < c->n ? begin + c->block : c->n;
        changed_range(c->a, c->b, begin, end, &c->count[blk], &c->first[blk]);
    }
}

int64_t bw_count_changed(const bf16_t *a, const bf16_t *b, int64_t n, int64_t *first,
                         int threads)
{
    int64_t count = 0, f = -1;
    if (n > 0) {
        changed_ctx c = {a, b, n, block_for(n), NULL, NULL};
        int64_t nblocks = (n + c.block - 1) / c.block;
        if (threads > 1 && nblocks > 1) {
            c.count = malloc((size_t)nblocks * sizeof *c.count);
            c.first = malloc((size_t)nblocks * sizeof *c.first);
        }
        if (c.count && c.first) {
            parallel_for(nblocks, threads, 1, changed_blocks, &c);
            for (int64_t k = 0; k < nblocks; k++) {
                count += c.count[k];
                if (f < 0)
                    f = c.first[k];
            }
        } else {
            changed_range(a, b, 0, n, &count, &f);
        }
        free(c.count);
        free(c.first);
    }
    if (first)
        *first = f;
    return count;
}

uint64_t bw_hash_elements(const bf16_t *v, int64_t n)
{
    uint64_t h = UINT64_C(0xCBF29CE484222325);
    for (int64_t i = 0; i < n; i++) {
        /* Low byte first, whatever the host's byte order. */
        h = (h ^ (v[i] & 0xFFu)) * UINT64_C(0x100000001B3);
        h = (h ^ (v[i] >> 8)) * UINT64_C(0x100000001B3);
    }
    return h;
}
