/* Input values. Every element comes from a counter-based hash of
 * (data_seed, array, index), so any chunk can be filled on its own: the
 * result does not depend on the thread count or on the order of work.
 * This file holds the bf16 values of an elementwise exercise (what haxpy
 * and vector_sum have always had) and the dispatch; fp16 and fp32 values are
 * in values_float.c, a reduction's and a matrix's in values_shapes.c. */
#include <math.h>
#include <string.h>
#include "inputs.h"
#include "parallel_for.h"
#include "hot_loop.h"
#include "values.h"

/* NaNs as kernels meet them. None of them quiets to BW_POISON (0x7FD7): a
 * NaN input comes out as itself with the quiet bit 0x0040 set. */
static const bf16_t nan_payloads[] = {0x7FC0, 0xFFC1, 0x7F81, 0xFFFF, 0x7FFF,
                                      0xFF81, 0x7FA5, 0xFFC0};

static bf16_t special_value(uint64_t h)
{
    uint64_t sign = h;
    uint64_t bits = h >> 8;
    switch ((h >> 1) % 16u) {
    case 0: return make_bf16(sign, 0, 0);                         /* +-0 */
    case 1:
    case 2: return make_bf16(sign, 0, 1 + bits % 127u);           /* subnormal */
    case 3: return make_bf16(sign, 1 + (int)(bits % 3u), bits >> 4); /* products underflow */
    case 4:
    case 5: return make_bf16(sign, 253 + (int)(bits % 2u), bits >> 4); /* near 2^127 */
    case 6: return make_bf16(sign, 255, 0);                       /* +-Inf */
    case 7: return nan_payloads[bits % (sizeof nan_payloads / sizeof nan_payloads[0])];
    default: return random_value(bits);
    }
}

/* Where alpha * x (x finite) is near or past the float range and y is huge
 * or Inf of the opposite sign, a fused multiply-add and a product rounded
 * first (to float or bf16) legitimately disagree: finite against Inf, or
 * -Inf against NaN (Inf - Inf). Giving y the product's sign makes every
 * strategy agree, while overflow to Inf is still tested. An infinite x
 * gives the same result either way and is left alone. */
static bf16_t agree_on_overflow(float alpha, bf16_t x, bf16_t y)
{
    double product = (double)alpha * (double)bf16_to_float(x);
    if (bf16_is_inf(x) || isnan(product) || fabs(product) < 0x1p127 ||
        ((y >> 7) & 0xFF) < 253)
        return y;
    return (bf16_t)((y & 0x7FFF) | (product < 0 ? 0x8000u : 0u));
}

/* x such that |alpha * x| lands in 2^-8 .. 2^8, when the bf16 range allows. */
static bf16_t cancel_x(float alpha, uint64_t h)
{
    if (alpha == 0.0f || !isfinite(alpha))
        return random_value(h);
    int ea;
    frexpf(alpha, &ea);                     /* |alpha| in [2^(ea-1), 2^ea) */
    int target = -8 + (int)((h >> 1) % 16u);
    int e = target - (ea - 1);
    if (e < -126)
        e = -126;
    if (e > 127)
        e = 127;
    return make_bf16(h, e + 127, h >> 8);
}

/* A value close to -p (a few bf16 ulps away), so that p + it cancels. */
static bf16_t cancel_partner(float p, uint64_t h)
{
    if (p == 0.0f || !isfinite(p))
        return random_value(h);
    bf16_t v = bf16_from_float(-p);
    int magnitude = v & 0x7FFF;
    int moved = magnitude + (int)(h % 7u) - 3;
    /* Stay finite, nonzero and of the same sign. */
    if (moved >= 1 && moved <= 0x7F7F)
        v = (bf16_t)((v & 0x8000) | moved);
    return v;
}

/* The random class, the values of every large case, takes one hash per
 * four elements: element i is the 16-bit lane i % 4 of the hash of group
 * i / 4, laid out by value_lanes. Four hashes per element group made the
 * fill and the check's regeneration the largest part of the huge case's
 * host time (issue 12). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "random_run stores four lanes as one little-endian word"
#endif

/* out[j] = element begin + j: the loop that fills 2^31 elements twice per
 * array in the huge case (images, then the check), hence vectorized. Whole
 * groups go out as 8-byte stores; a group cut by begin or end lane by lane. */
BW_HOT_LOOP void bw_random_run(bf16_t *out, uint64_t base, int64_t begin, int64_t end)
{
    int64_t i = begin;
    for (; i < end && (i & 3) != 0; i++)
        out[i - begin] = lane_of(random_lanes(base, (uint64_t)i >> 2), i);
    int64_t g0 = i >> 2, g1 = end >> 2;
    uint8_t *at = (uint8_t *)(out + (i - begin));
    for (int64_t g = g0; g < g1; g++) {
        uint64_t v = random_lanes(base, (uint64_t)g);
        memcpy(at + 8 * (g - g0), &v, sizeof v);   /* little-endian: lane k is element 4g + k */
    }
    for (i = g1 > g0 ? g1 * 4 : i; i < end; i++)
        out[i - begin] = lane_of(random_lanes(base, (uint64_t)i >> 2), i);
}

/* Random values need no pairing between arrays: one tight loop per array. */
static void fill_random(const bw_fill_ctx *f, int64_t begin, int64_t end)
{
    int na = f->ex->n_arrays < BW_MAX_ARRAYS ? f->ex->n_arrays : BW_MAX_ARRAYS;
    for (int k = 0; k < na; k++)
        if (bw_exercise_is_input(f->ex, k))
            bw_random_run((bf16_t *)f->arrays[k] + (begin - f->origin), f->base[k], begin, end);
}

static void fill_bf16(const bw_fill_ctx *f, int64_t begin, int64_t end)
{
    const bw_exercise *ex = f->ex;
    int na = ex->n_arrays < BW_MAX_ARRAYS ? ex->n_arrays : BW_MAX_ARRAYS;
    float alpha = f->c->alpha;
    if (f->c->values == BW_VALUES_RANDOM) {
        fill_random(f, begin, end);
        return;
    }
    for (int64_t i = begin; i < end; i++) {
        /* The first two inputs form the pair that cancels or overflows. */
        bf16_t first = 0;
        int role = 0;
        for (int k = 0; k < na; k++) {
            if (!bw_exercise_is_input(ex, k))
                continue;
            uint64_t h = bw_mix64(f->base[k] + (uint64_t)i * GOLDEN);
            bf16_t v;
            switch (f->c->values) {
            case BW_VALUES_SPECIAL:
                v = special_value(h);
                if (role == 1 && ex->uses_alpha)
                    v = agree_on_overflow(alpha, first, v);
                break;
            case BW_VALUES_CANCEL:
                if (role == 0)
                    v = ex->uses_alpha ? cancel_x(alpha, h) : random_value(h);
                else if (role == 1)
                    v = cancel_partner(ex->uses_alpha ? alpha * bf16_to_float(first)
                                                      : bf16_to_float(first), h);
                else
                    v = random_value(h);
                break;
            default:
                v = random_value(h);
                break;
            }
            if (role == 0)
                first = v;
            role++;
            ((bf16_t *)f->arrays[k])[i - f->origin] = v;
        }
    }
}

static void fill_body(int64_t begin, int64_t end, void *vctx)
{
    const bw_fill_ctx *f = vctx;
    switch (f->ex->shape) {
    case BW_SHAPE_ELEMENTWISE:
        if (f->all_bf16)
            fill_bf16(f, begin, end);
        else
            bw_values_float(f, begin, end);
        break;
    case BW_SHAPE_REDUCTION:
        bw_values_reduction(f, begin, end);
        break;
    case BW_SHAPE_MATRIX:
        bw_values_matrix(f, begin, end);
        break;
    }
}

void bw_fill_setup(bw_fill_ctx *f, const bw_exercise *ex, const bw_case *c, void *const *arrays,
                   int64_t origin)
{
    memset(f, 0, sizeof *f);
    f->ex = ex;
    f->c = c;
    f->arrays = arrays;
    f->origin = origin;
    f->all_bf16 = 1;
    for (int k = 0; k < ex->n_arrays; k++)
        f->all_bf16 &= !bw_exercise_is_input(ex, k) || ex->arrays[k].type == BW_BF16;
    for (int k = 0; k < BW_MAX_ARRAYS; k++)
        f->base[k] = bw_mix64(c->data_seed + (uint64_t)(k + 1) * UINT64_C(0xA0761D6478BD642F));
    if (ex->shape == BW_SHAPE_REDUCTION && c->values == BW_VALUES_SPIKES)
        f->n_spikes = bw_spike_positions(c, f->spikes);
}

void bw_inputs_fill(const bw_exercise *ex, const bw_case *c, void *const *arrays, int threads)
{
    bw_fill_ctx f;
    bw_fill_setup(&f, ex, c, arrays, 0);
    parallel_for(c->n, threads, (int64_t)1 << 15, fill_body, &f);
}

void bw_inputs_fill_range(const bw_exercise *ex, const bw_case *c, void *const *arrays,
                          int64_t begin, int64_t end)
{
    bw_fill_ctx f;
    bw_fill_setup(&f, ex, c, arrays, begin);
    if (end > begin)
        fill_body(begin, end, &f);
}
