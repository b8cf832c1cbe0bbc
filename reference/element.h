/* The element types an exercise's arrays may hold, as bits on the CPU: bf16,
 * fp16 and fp32. Each type's spacing of representable numbers, overflow
 * threshold and "never written" marker live here, so that every check and
 * report works for any of them. Plain C11. */
#ifndef BWLAB_ELEMENT_H
#define BWLAB_ELEMENT_H
#include <stdint.h>
#include <string.h>
#include "bf16.h"
#include "fp16.h"

typedef enum { BW_BF16 = 0, BW_F16, BW_F32 } bw_type;
#define BW_N_TYPES 3

/* Bytes of one element: 2 or 4. */
static inline int bw_type_bytes(bw_type t) { return t == BW_F32 ? 4 : 2; }

/* "bf16", "fp16", "fp32". */
const char *bw_type_name(bw_type t);

/* A value no correct kernel produces from the kit's inputs, so an element
 * still holding it was never written: a quiet NaN with an odd payload, which
 * no NaN input quiets into (inputs.c). bf16 keeps the kit's 0x7FD7. */
uint32_t bw_type_poison(bw_type t);

/* Element k of data (any alignment), as bits. */
static inline uint32_t bw_elem_load(bw_type t, const void *data, int64_t k)
{
    if (t == BW_F32) {
        uint32_t v;
        memcpy(&v, (const uint8_t *)data + 4 * k, sizeof v);
        return v;
    }
    uint16_t v;
    memcpy(&v, (const uint8_t *)data + 2 * k, sizeof v);
    return v;
}

static inline void bw_elem_store(bw_type t, void *data, int64_t k, uint32_t bits)
{
    if (t == BW_F32) {
        memcpy((uint8_t *)data + 4 * k, &bits, sizeof bits);
    } else {
        uint16_t v = (uint16_t)bits;
        memcpy((uint8_t *)data + 2 * k, &v, sizeof v);
    }
}

/* The value as a double: exact for every type (NaN stays NaN, +-Inf). */
double bw_elem_to_double(bw_type t, uint32_t bits);
/* A float rounded to the type, round to nearest even, NaN kept NaN (fp32: as is). */
uint32_t bw_elem_from_float(bw_type t, float f);
int bw_elem_is_nan(bw_type t, uint32_t bits);
int bw_elem_is_inf(bw_type t, uint32_t bits);
/* Zero or subnormal (no implicit leading bit). */
int bw_elem_is_tiny(bw_type t, uint32_t bits);
int bw_elem_sign(bw_type t, uint32_t bits);   /* 1 when the sign bit is set */

/* The spacing of the type's numbers at magnitude m: the subnormal spacing
 * below the normal range, one unit in the last place above it, the top
 * binade's spacing at and past the largest power of two. */
double bw_type_ulp_at(bw_type t, double m);
/* Values at or past this magnitude round to Inf: the midpoint between the
 * largest finite number and the next power of two. */
double bw_type_overflow(bw_type t);
/* The largest finite magnitude, as a double. */
double bw_type_max(bw_type t);

#endif
