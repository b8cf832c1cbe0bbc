/* What the input generators share (inputs.c, values_float.c,
 * values_shapes.c): the fill's context and the hash-to-value helpers.
 * Private to the judge. */
#ifndef BWLAB_VALUES_H
#define BWLAB_VALUES_H
#include <stdint.h>
#include "inputs.h"
#include "mix64.h"
#include "protocol.h"

#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)

typedef bw_input_reader bw_fill_ctx;

void bw_fill_setup(bw_fill_ctx *f, const bw_exercise *ex, const bw_case *c, void *const *arrays,
                   int64_t origin);

static inline bf16_t make_bf16(uint64_t sign, int biased_exponent, uint64_t mantissa)
{
    return (bf16_t)(((sign & 1u) << 15) | ((uint64_t)biased_exponent << 7) | (mantissa & 0x7Fu));
}

/* Each 16-bit lane of h made a normal value of magnitude 2^-8 .. 2^8 (never
 * NaN, so never the poison either): sign from the lane's bit 0, exponent
 * from bits 1-4, mantissa from bits 8-14. Four values at once, no carries
 * between lanes. */
#define LANES(v) (UINT64_C(0x0001000100010001) * (v))

static inline uint64_t value_lanes(uint64_t h)
{
    uint64_t sign = (h & LANES(1)) << 15;
    uint64_t exponent = (((h >> 1) & LANES(0xF)) + LANES(127 - 8)) << 7;
    uint64_t mantissa = (h >> 8) & LANES(0x7F);
    return sign | exponent | mantissa;
}

/* One random value from a hash: value_lanes' lowest lane. */
static inline bf16_t random_value(uint64_t h) { return (bf16_t)value_lanes(h); }

/* The random class takes one hash per four elements: element i is the
 * 16-bit lane i % 4 of the hash of group i / 4, laid out by value_lanes. */
static inline uint64_t random_lanes(uint64_t base, uint64_t group)
{
    return value_lanes(bw_mix64(base + group * GOLDEN));
}

static inline bf16_t lane_of(uint64_t lanes, int64_t i) { return (bf16_t)(lanes >> (16 * (i & 3))); }

/* The random class's bf16 values for elements [begin, end) into out[0..). */
void bw_random_run(bf16_t *out, uint64_t base, int64_t begin, int64_t end);

/* Element i's hash in array k. */
static inline uint64_t value_hash(const bw_fill_ctx *f, int k, int64_t i)
{
    return bw_mix64(f->base[k] + (uint64_t)i * GOLDEN);
}

/* fp16 and fp32 values of an elementwise exercise (values_float.c). */
void bw_values_float(const bw_fill_ctx *f, int64_t begin, int64_t end);
/* A reduction's and a matrix's values (values_shapes.c). */
void bw_values_reduction(const bw_fill_ctx *f, int64_t begin, int64_t end);
void bw_values_matrix(const bw_fill_ctx *f, int64_t begin, int64_t end);
uint32_t bw_matrix_value(const bw_fill_ctx *f, int k, int64_t i);

#endif
