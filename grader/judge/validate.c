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

double bw_type_as_double(bw_type t, uint32_t bits)
{
    if (bw_elem_is_nan(t, bits))
        return NAN;
    if (bw_elem_is_inf(t, bits)) {
        double past = bw_type_max(t) + bw_type_ulp_at(t, INFINITY);   /* the next power of two */
        return bw_elem_sign(t, bits) ? -past : past;
    }
    return bw_elem_to_double(t, bits);
}

double bw_ulps_between_type(bw_type t, uint32_t expected, uint32_t got)
{
    if (expected == got)
        return 0.0;
    int en = bw_elem_is_nan(t, expected), gn = bw_elem_is_nan(t, got);
    if (en && gn)
        return 0.0;
    if (en || gn)
        return INFINITY;
    double e = bw_type_as_double(t, expected);
    return fabs(bw_type_as_double(t, got) - e) / bw_type_ulp_at(t, e);
}

double bw_ulp(double magnitude)
{
    return isnan(magnitude) ? NAN : bf16_ulp_at(magnitude);
}

double bw_bf16_as_double(bf16_t h) { return bw_type_as_double(BW_BF16, h); }

double bw_ulps_between(bf16_t expected, bf16_t got)
{
    return bw_ulps_between_type(BW_BF16, expected, got);
}

int bw_element_ok(const bw_exercise *ex, const float *scalars, const double *in,
                  uint32_t expected, uint32_t got)
{
    bw_type t = bw_exercise_out_type(ex);
    if (got == bw_type_poison(t))
        return 0;
    if (expected == got)
        return 1;
    int en = bw_elem_is_nan(t, expected), gn = bw_elem_is_nan(t, got);
    if (en || gn)
        return en && gn;
    return bw_exact_accepts_type(t, ex->rule->exact(scalars, in), got);
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
BW_HOT_LOOP static int64_t count_differences16(const uint16_t *a, const uint16_t *b, int64_t len)
{
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

static int64_t count_differences32(const uint8_t *a, const uint8_t *b, int64_t len)
{
    int64_t k = 0;
    for (int64_t i = 0; i < len; i++)
        k += memcmp(a + 4 * i, b + 4 * i, 4) != 0;
    return k;
}

/* Elements (eb bytes each) of a and b that differ. */
static int64_t count_differences(const void *a, const void *b, int64_t len, int eb)
{
    if (len <= 0 || memcmp(a, b, (size_t)len * (size_t)eb) == 0)
        return 0;
    return eb == 2 ? count_differences16(a, b, len) : count_differences32(a, b, len);
}

void bw_compare_block(const bw_exercise *ex, const float *scalars, const void *const *inputs,
                      const void *expected, const void *got, int64_t index0, int64_t len,
                      bw_compare_result *r)
{
    const bw_type t = bw_exercise_out_type(ex);
    /* Nearly every block of a working kernel is bit-exact: one vector pass. */
    if (count_differences(expected, got, len, bw_type_bytes(t)) == 0)
        return;
    bw_type in_type[BW_MAX_INPUTS];
    int n_inputs = 0;
    for (int k = 0; k < ex->n_arrays && n_inputs < BW_MAX_INPUTS; k++)
        if (bw_exercise_is_input(ex, k))
            in_type[n_inputs++] = ex->arrays[k].type;
    const uint32_t poison = bw_type_poison(t);
    for (int64_t j = 0; j < len; j++) {
        uint32_t e = bw_elem_load(t, expected, j), g = bw_elem_load(t, got, j);
        if (e == g)
            continue;
        int64_t i = index0 + j;
        double in[BW_MAX_INPUTS];
        for (int k = 0; k < n_inputs; k++)
            in[k] = bw_elem_to_double(in_type[k], bw_elem_load(in_type[k], inputs[k], j));
        double u = bw_ulps_between_type(t, e, g);
        if (u > r->max_ulps)
            r->max_ulps = u;
        if (g == poison)
            r->unwritten++;
        if (bw_element_ok(ex, scalars, in, e, g))
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
    const void *const *inputs;
    const void *expected, *got;
    const float *scalars;
    int64_t n, block;
    bw_compare_result *parts;
} compare_ctx;

static void compare_range(const compare_ctx *c, int64_t begin, int64_t end,
                          bw_compare_result *r)
{
    const void *in[BW_MAX_INPUTS];
    int n_in = 0;
    for (int k = 0; k < c->ex->n_arrays && n_in < BW_MAX_INPUTS; k++)
        if (bw_exercise_is_input(c->ex, k)) {
            in[n_in] = (const uint8_t *)c->inputs[n_in] + begin * bw_type_bytes(c->ex->arrays[k].type);
            n_in++;
        }
    int eb = bw_type_bytes(bw_exercise_out_type(c->ex));
    bw_compare_block(c->ex, c->scalars, in, (const uint8_t *)c->expected + begin * eb,
                     (const uint8_t *)c->got + begin * eb, begin, end - begin, r);
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

void bw_compare_output(const bw_exercise *ex, int64_t n, const float *scalars,
                       const void *const *inputs, const void *expected, const void *got,
                       bw_compare_result *r, int threads)
{
    compare_ctx c = {ex, inputs, expected, got, scalars, n, block_for(n), NULL};
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
    const uint8_t *a, *b;
    int eb;
    int64_t n, block;
    int64_t *count, *first;
} changed_ctx;

static void changed_range(const changed_ctx *c, int64_t begin, int64_t end, int64_t *count,
                          int64_t *first)
{
    *count = count_differences(c->a + begin * c->eb, c->b + begin * c->eb, end - begin, c->eb);
    *first = -1;
    for (int64_t i = begin; *count > 0 && i < end; i++)
        if (memcmp(c->a + i * c->eb, c->b + i * c->eb, (size_t)c->eb) != 0) {
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
        changed_range(c, begin, end, &c->count[blk], &c->first[blk]);
    }
}

int64_t bw_count_changed_bytes(const void *a, const void *b, int64_t n, int elem_bytes,
                               int64_t *first, int threads)
{
    int64_t count = 0, f = -1;
    if (n > 0) {
        changed_ctx c = {a, b, elem_bytes, n, block_for(n), NULL, NULL};
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
            changed_range(&c, 0, n, &count, &f);
        }
        free(c.count);
        free(c.first);
    }
    if (first)
        *first = f;
    return count;
}

int64_t bw_count_changed(const bf16_t *a, const bf16_t *b, int64_t n, int64_t *first,
                         int threads)
{
    return bw_count_changed_bytes(a, b, n, 2, first, threads);
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
