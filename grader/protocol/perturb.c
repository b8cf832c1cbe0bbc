/* See perturb.h. */
#include "perturb.h"
#include <math.h>
#include "element.h"
#include "mix64.h"

int bw_perturb_plan(uint64_t *rng, const bw_array_geom *g, const void *unrotated, int64_t r,
                    uint32_t flip, int count, bw_perturb *out)
{
    const int64_t n = g->count;
    out->count = 0;
    out->delta = 0.0;
    if (count < 0 || count > BW_PERTURB_MAX || n < 4 * (int64_t)count || r < 0 || r >= (n > 0 ? n : 1))
        return -1;
    const bw_type t = (bw_type)g->elem_type;
    for (int j = 0; j < count; j++) {
        int64_t p;
        int fresh;
        do {   /* distinct places, so that each old value is the rotated data's */
            p = (int64_t)(bw_mix64_next(rng) % (uint64_t)n);
            fresh = 1;
            for (int i = 0; i < j; i++)
                fresh &= out->pos[i] != p;
        } while (!fresh);
        int64_t src = p + r < n ? p + r : p + r - n;
        uint32_t old = bw_elem_load(t, unrotated, src) ^ flip;
        float v = ldexpf((float)(1 + bw_mix64_next(rng) % 255u), -9);
        out->pos[j] = p;
        out->bits[j] = bw_elem_from_float(t, v);
        out->delta += (double)v - bw_elem_to_double(t, old);
    }
    out->count = count;
    return 0;
}
