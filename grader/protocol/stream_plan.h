/* How a RUN's images are cut into chunks (protocol.h): chunk c holds
 * elements [c * E, (c + 1) * E) of every array of n elements, plus its front
 * guard in the first chunk and its back guard in the last; an array flagged
 * BW_ARRAY_WHOLE (one element: a reduction's result) travels whole in chunk
 * 0 and not at all in the others. A slot holds array k's part of a chunk at
 * arrays[k].place. The grader makes the plan, the worker checks it; both
 * then use bw_chunk_span. Plain C, header only. */
#ifndef BWLAB_STREAM_PLAN_H
#define BWLAB_STREAM_PLAN_H
#include <stdint.h>
#include "protocol.h"

typedef struct {
    uint64_t begin, end;   /* image bytes [begin, end) */
    int64_t e0, e1;        /* elements [e0, e1) among them */
} bw_chunk_span_t;

static inline uint64_t bw_round256(uint64_t b) { return (b + 255u) & ~(uint64_t)255u; }

static inline uint64_t bw_guard_bytes_of(const bw_array_geom *g)
{
    return g->image_bytes - g->data_bytes;
}

/* Fills the RUN fields for a ring of slots slots of slot_bytes each; needs
 * n and every array's geometry set. 0, or -1 when a slot is too small for
 * one element of each array beside the guards and the whole arrays. */
static inline int bw_stream_plan(bw_request *q, int slots, uint64_t slot_bytes)
{
    uint64_t fixed = 0, per_elem = 0;
    if (slots < 1 || q->n_arrays < 1 || q->n_arrays > BW_MAX_ARRAYS)
        return -1;
    for (int k = 0; k < q->n_arrays; k++) {
        const bw_array_geom *g = &q->arrays[k];
        if (g->flags & BW_ARRAY_WHOLE) {
            fixed += bw_round256(g->image_bytes);
        } else {
            fixed += bw_guard_bytes_of(g) + 256u;   /* the guards, and rounding up to 256 */
            per_elem += g->elem_bytes;
        }
    }
    if (per_elem == 0 || slot_bytes <= fixed + per_elem)
        return -1;
    int64_t per = (int64_t)((slot_bytes - fixed) / per_elem);
    q->ring_slots = slots;
    q->slot_bytes = slot_bytes;
    q->chunk_elems = q->n < per ? (q->n > 0 ? q->n : 1) : per;
    q->chunks = q->n > 0 ? (q->n + q->chunk_elems - 1) / q->chunk_elems : 1;
    q->shm_bytes = (uint64_t)slots * slot_bytes;
    uint64_t at = 0;
    for (int k = 0; k < q->n_arrays; k++) {
        bw_array_geom *g = &q->arrays[k];
        g->place = at;
        at += (g->flags & BW_ARRAY_WHOLE)
                  ? bw_round256(g->image_bytes)
                  : bw_round256(bw_guard_bytes_of(g) + (uint64_t)q->chunk_elems * g->elem_bytes);
    }
    return 0;
}

/* Array k's bytes and elements in chunk c. */
static inline bw_chunk_span_t bw_chunk_span(const bw_request *q, int64_t c, int k)
{
    const bw_array_geom *g = &q->arrays[k];
    bw_chunk_span_t s;
    if (g->flags & BW_ARRAY_WHOLE) {
        s.e0 = 0;
        s.e1 = c == 0 ? g->count : 0;
        s.begin = 0;
        s.end = c == 0 ? g->image_bytes : 0;
        return s;
    }
    s.e0 = c * q->chunk_elems;
    s.e1 = c == q->chunks - 1 ? q->n : s.e0 + q->chunk_elems;
    if (s.e0 > q->n)
        s.e0 = q->n;
    s.begin = c == 0 ? 0 : g->front_bytes + g->elem_bytes * (uint64_t)s.e0;
    s.end = c == q->chunks - 1 ? g->image_bytes : g->front_bytes + g->elem_bytes * (uint64_t)s.e1;
    return s;
}

/* The geometry of an array is consistent: its image holds its data. */
static inline int bw_geom_ok(const bw_array_geom *g, int64_t n)
{
    return (g->elem_bytes == 2 || g->elem_bytes == 4) && g->count >= 0 &&
           g->count == ((g->flags & BW_ARRAY_WHOLE) ? g->count : n) &&
           g->data_bytes == (uint64_t)g->count * g->elem_bytes && g->image_bytes >= g->front_bytes &&
           g->image_bytes - g->front_bytes >= g->data_bytes &&
           g->back_bytes == g->image_bytes - g->front_bytes - g->data_bytes;
}

/* The plan of a RUN request is one bw_stream_plan could have made for its
 * layout (the worker's check before trusting it). */
static inline int bw_stream_plan_ok(const bw_request *q)
{
    if (q->n_arrays < 1 || q->n_arrays > BW_MAX_ARRAYS || q->n < 0 || q->slot_bytes == 0)
        return 0;
    for (int k = 0; k < q->n_arrays; k++)
        if (!bw_geom_ok(&q->arrays[k], q->n))
            return 0;
    bw_request p = *q;
    if (bw_stream_plan(&p, q->ring_slots, q->slot_bytes) != 0)
        return 0;
    for (int k = 0; k < q->n_arrays; k++)
        if (p.arrays[k].place != q->arrays[k].place)
            return 0;
    return p.chunk_elems == q->chunk_elems && p.chunks == q->chunks && p.shm_bytes == q->shm_bytes;
}

/* Array k's part of the chunk in slot chunk % ring_slots of the ring. */
static inline uint8_t *bw_slot_part(uint8_t *ring, const bw_request *q, int64_t chunk, int k)
{
    return ring + (uint64_t)(chunk % q->ring_slots) * q->slot_bytes + q->arrays[k].place;
}

#endif
