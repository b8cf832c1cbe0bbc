/* See transplant.h. */
#include "transplant.h"
#include "element.h"
#include "mix64.h"

int64_t bw_transplant_place(const bw_request *q, int k, int64_t e)
{
    if (!(q->arrays[k].flags & BW_ARRAY_TRANSPOSED) || q->cols <= 0)
        return e;
    const int64_t row = e / q->cols, col = e % q->cols;
    return col * (int64_t)q->rows + row;
}

int64_t bw_rotated_index(const bw_array_geom *g, int64_t r, int64_t p)
{
    const int64_t outer = g->outer > 0 ? g->outer : 1, inner = g->count / outer;
    if (outer == 1 || (g->flags & BW_ARRAY_ROTATE_OUTER)) {
        /* One flat run: element i holds element (i + by) mod count. */
        const int64_t by = outer == 1 ? r : r * inner;
        int64_t i = (p - by) % g->count;
        return i < 0 ? i + g->count : i;
    }
    const int64_t row = p / inner;
    int64_t col = (p % inner - r) % inner;
    return row * inner + (col < 0 ? col + inner : col);
}

static const uint8_t *data_of(const bw_request *q, const uint8_t *images, int k)
{
    return images + q->arrays[k].place + q->arrays[k].front_bytes;
}

static uint32_t value_at(const bw_request *q, const uint8_t *images, int k, int64_t e)
{
    return bw_elem_load((bw_type)q->arrays[k].elem_type, data_of(q, images, k),
                        bw_transplant_place(q, k, e));
}

/* The output holds another value at a than at b: a replay of the
 * validated output is then wrong at a (every array counts where none is
 * marked as the output). */
static int differ(const bw_request *q, const uint8_t *images, int64_t a, int64_t b)
{
    int marked = 0;
    for (int k = 0; k < q->n_arrays; k++)
        marked |= (q->arrays[k].flags & BW_ARRAY_OUTPUT) != 0;
    for (int k = 0; k < q->n_arrays; k++)
        if ((!marked || (q->arrays[k].flags & BW_ARRAY_OUTPUT)) &&
            value_at(q, images, k, a) != value_at(q, images, k, b))
            return 1;
    return 0;
}

int bw_transplant_plan(uint64_t *rng, const bw_request *q, const uint8_t *images, int count,
                       bw_transplant *out)
{
    const int64_t n = q->n;
    out->count = 0;
    if (count < 0 || count > BW_TRANSPLANT_MAX || n < 4 * (int64_t)count)
        return -1;
    for (int j = 0; j < count; j++) {
        int64_t to, from = 0;
        int fresh, tries = 0;
        do {   /* distinct to elements, each moved from one that differs */
            to = (int64_t)(bw_mix64_next(rng) % (uint64_t)n);
            fresh = 1;
            for (int i = 0; i < j; i++)
                fresh &= out->to[i] != to;
            for (int t = 0; fresh && t < 8; t++) {
                from = (int64_t)(bw_mix64_next(rng) % (uint64_t)n);
                if (differ(q, images, to, from))
                    break;
                if (t == 7)
                    fresh = 0;
            }
            if (++tries > 64) {   /* (nearly) every output alike: keep what was found */
                out->count = j;
                return j > 0 ? 0 : -1;
            }
        } while (!fresh);
        out->to[j] = to;
        out->from[j] = from;
    }
    out->count = count;
    return 0;
}

/* Array k's element at place p holding bits: its terms of the hash. */
static uint64_t terms(const bw_array_geom *g, int k, uint64_t key, int64_t p, uint32_t bits)
{
    const int units = (int)g->elem_bytes / 2;
    uint64_t h = 0;
    for (int u = 0; u < units; u++)
        h += bw_hash_term(key, k, (uint64_t)p * (uint64_t)units + (uint64_t)u,
                          (uint16_t)(bits >> (16 * u)));
    return h;
}

uint64_t bw_transplant_hash_delta(const bw_request *q, const uint8_t *images, uint64_t key,
                                  const bw_transplant *t)
{
    uint64_t d = 0;
    for (int j = 0; j < t->count; j++)
        for (int k = 0; k < q->n_arrays; k++) {
            const int64_t p = bw_transplant_place(q, k, t->to[j]);
            d += terms(&q->arrays[k], k, key, p, value_at(q, images, k, t->from[j]));
            d -= terms(&q->arrays[k], k, key, p, value_at(q, images, k, t->to[j]));
        }
    return d;
}
