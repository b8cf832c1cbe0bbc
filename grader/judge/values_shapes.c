/* A reduction's and a matrix's input values. Every value here is one bf16
 * can hold (8 significant bits, magnitudes far inside fp16's range), stored
 * in the array's own type, except where a class is about the type itself
 * (subnormals, NaN payloads, all bit patterns). */
#include <math.h>
#include <string.h>
#include "values.h"

static uint32_t from_float(bw_type t, float v) { return bw_elem_from_float(t, v); }

/* ---- a reduction ------------------------------------------------------------ */

/* Spike s (value 2^s) sits at: 0, n-1, then places where a kernel's loop
 * or grid tends to lose or repeat an element, in an order that turns with
 * the case index, so that across cases every kind of place is covered. */
int bw_spike_positions(const bw_case *c, int64_t pos[BW_MAX_SPIKES])
{
    const int64_t n = c->n;
    int64_t cand[64];
    int nc = 0;
    const int64_t near[] = {1, 2, 3, 7, 8, 9, 15, 16};
    for (int k = 0; k < 8; k++) {
        cand[nc++] = near[k];
        cand[nc++] = n - 1 - near[k];
    }
    cand[nc++] = n / 2;
    cand[nc++] = n / 2 + 1;
    for (int b = 8; b <= 30 && nc < 62; b += 2) {   /* power-of-two block edges below n */
        if (((int64_t)1 << b) >= n)
            break;
        cand[nc++] = ((int64_t)1 << b) - 1;
        cand[nc++] = (int64_t)1 << b;
    }
    int count = 0;
    pos[count++] = 0;
    if (n > 1)
        pos[count++] = n - 1;
    int start = (int)((uint64_t)c->index * 5u % (uint64_t)nc);
    for (int j = 0; j < nc && count < BW_MAX_SPIKES; j++) {
        int64_t p = cand[(start + j) % nc];
        int dup = p < 0 || p >= n;
        for (int s = 0; s < count && !dup; s++)
            dup = pos[s] == p;
        if (!dup)
            pos[count++] = p;
    }
    return count;
}

/* Positive: (1 + m/128) * 2^e, e in -1..1: a sum that only grows. */
static float positive_value(uint64_t h)
{
    return ldexpf(1.0f + (float)(h % 128u) / 128.0f, (int)((h >> 7) % 3u) - 1);
}

/* Exact: about 8192 nonzero elements whatever n, each +-m * 2^-9 or
 * +-m * 2^-8 with m < 256: multiples of 2^-9, so every partial sum is one,
 * and below 2^15 in magnitude, so every partial sum is a float. Exact
 * positive: the same magnitudes, no sign. */
static float exact_value(uint64_t h, int64_t n, int positive)
{
    uint64_t every = n > 8192 ? (uint64_t)((n + 8191) / 8192) : 1u;
    if ((h >> 40) % every != 0)
        return 0.0f;
    float v = ldexpf((float)(1 + h % 255u), -9 + (int)((h >> 8) & 1u));
    return (h >> 9) & 1u && !positive ? -v : v;
}

/* Special, by the case index (c->index % 4): 0 positive values near the top
 * of the type's range, whose sum overflows to +Inf once n is large enough;
 * 1, 2, 3: zeros and positive values with a NaN, a +Inf, or a +Inf and a
 * -Inf planted. No subnormals: a float atomicAdd flushes subnormal operands
 * and results to zero (PTX red.add.f32), so a correct kernel may lose a sum
 * of subnormals. */
static uint32_t special_sum_value(const bw_fill_ctx *f, bw_type t, uint64_t h, int64_t i)
{
    const bw_case *c = f->c;
    int plant = c->index % 4;
    int64_t p = (int64_t)(bw_mix64(c->data_seed ^ 0x706C616E74u) % (uint64_t)c->n);
    int64_t q = (p + 1 + c->n / 2) % c->n;
    if (plant && i == p)
        return plant == 1 ? bw_type_poison(t) ^ 0x10u   /* a quiet NaN, not the poison */
                          : (t == BW_F32 ? 0x7F800000u : t == BW_F16 ? 0x7C00u : 0x7F80u);
    if (plant == 3 && i == q && q != p)
        return t == BW_F32 ? 0xFF800000u : t == BW_F16 ? 0xFC00u : 0xFF80u;
    if (plant == 0) {   /* 2^-4 .. 2^-1 of the largest finite value */
        double top = bw_type_max(t) * ldexp(1.0 + (double)(h % 128u) / 128.0, -4 + (int)((h >> 7) % 3u));
        return from_float(t, (float)top);
    }
    return h & 1u ? 0u : from_float(t, positive_value(h >> 1));
}

void bw_values_reduction(const bw_fill_ctx *f, int64_t begin, int64_t end)
{
    const bw_exercise *ex = f->ex;
    const bw_case *c = f->c;
    for (int k = 0; k < ex->n_arrays; k++) {
        if (!bw_exercise_is_input(ex, k))
            continue;
        bw_type t = ex->arrays[k].type;
        void *out = f->arrays[k];
        if (c->values == BW_VALUES_RANDOM && t == BW_BF16) {
            bw_random_run((bf16_t *)out + (begin - f->origin), f->base[k], begin, end);
            continue;
        }
        for (int64_t i = begin; i < end; i++) {
            uint64_t h = value_hash(f, k, i);
            uint32_t v;
            switch (c->values) {
            case BW_VALUES_POSITIVE: v = from_float(t, positive_value(h)); break;
            case BW_VALUES_EXACT: v = from_float(t, exact_value(h, c->n, 0)); break;
            case BW_VALUES_EXACT_POSITIVE: v = from_float(t, exact_value(h, c->n, 1)); break;
            case BW_VALUES_SPIKES: v = 0; break;
            case BW_VALUES_SPECIAL: v = special_sum_value(f, t, h, i); break;
            default: v = from_float(t, bf16_to_float(lane_of(random_lanes(f->base[k],
                                                                          (uint64_t)i >> 2), i)));
            }
            bw_elem_store(t, out, i - f->origin, v);
        }
        if (c->values == BW_VALUES_SPIKES)
            for (int s = 0; s < f->n_spikes; s++)
                if (f->spikes[s] >= begin && f->spikes[s] < end)
                    bw_elem_store(t, out, f->spikes[s] - f->origin, from_float(t, ldexpf(1.0f, s)));
    }
}

/* ---- a matrix ----------------------------------------------------------------- */

/* Element i of input array k. Random: the elementwise bf16 values (other
 * types: the same values); special: any bit pattern but the poison. */
uint32_t bw_matrix_value(const bw_fill_ctx *f, int k, int64_t i)
{
    bw_type t = f->ex->arrays[k].type;
    if (f->c->values == BW_VALUES_SPECIAL) {
        uint64_t h = value_hash(f, k, i);
        uint32_t v = t == BW_F32 ? (uint32_t)h : (uint32_t)(h & 0xFFFFu);
        return v == bw_type_poison(t) ? v ^ 1u : v;
    }
    bf16_t b = lane_of(random_lanes(f->base[k], (uint64_t)i >> 2), i);
    return t == BW_BF16 ? b : from_float(t, bf16_to_float(b));
}

void bw_values_matrix(const bw_fill_ctx *f, int64_t begin, int64_t end)
{
    const bw_exercise *ex = f->ex;
    for (int k = 0; k < ex->n_arrays; k++) {
        if (!bw_exercise_is_input(ex, k))
            continue;
        bw_type t = ex->arrays[k].type;
        if (f->c->values == BW_VALUES_RANDOM && t == BW_BF16) {
            bw_random_run((bf16_t *)f->arrays[k] + (begin - f->origin), f->base[k], begin, end);
            continue;
        }
        for (int64_t i = begin; i < end; i++)
            bw_elem_store(t, f->arrays[k], i - f->origin, bw_matrix_value(f, k, i));
    }
}

void bw_input_reader_init(bw_input_reader *r, const bw_exercise *ex, const bw_case *c)
{
    bw_fill_setup(r, ex, c, NULL, 0);
}

uint32_t bw_input_read(const bw_input_reader *r, int k, int64_t i)
{
    return bw_matrix_value(r, k, i);
}
