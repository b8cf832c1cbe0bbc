/* How a RUN's images are cut into chunks (protocol.h): chunk c is the same
 * byte range of every array's image, elements [c * E, (c + 1) * E) plus the
 * front guard in the first chunk and the back guard in the last, so a slot
 * holds array k's part at k * slot_stride. The grader makes the plan, the
 * worker checks it; both then use bw_chunk_span. Plain C, header only. */
#ifndef BWLAB_STREAM_PLAN_H
#define BWLAB_STREAM_PLAN_H
#include <stdint.h>
#include "protocol.h"

typedef struct {
    uint64_t begin, end;   /* image bytes [begin, end) */
    int64_t e0, e1;        /* elements [e0, e1) among them */
} bw_chunk_span_t;

/* Fills the RUN fields for a ring of slots slots of slot_bytes each; needs
 * n, n_arrays and the image layout set. 0, or -1 when a slot is too small
 * for one element of each array beside the guards. */
static inline int bw_stream_plan(bw_request *q, int slots, uint64_t slot_bytes)
{
    uint64_t stride = slot_bytes / (uint64_t)q->n_arrays / 256u * 256u;
    uint64_t guards = q->front_bytes + (q->image_bytes - q->front_bytes - q->data_bytes);
    if (slots < 1 || stride <= guards + 2u)
        return -1;
    int64_t per = (int64_t)((stride - guards) / 2u);
    q->ring_slots = slots;
    q->slot_bytes = slot_bytes;
    q->slot_stride = stride;
    q->chunk_elems = q->n < per ? (q->n > 0 ? q->n : 1) : per;
    q->chunks = q->n > 0 ? (q->n + q->chunk_elems - 1) / q->chunk_elems : 1;
    q->shm_bytes = (uint64_t)slots * slot_bytes;
    return 0;
}

/* The plan of a RUN request is one bw_stream_plan could have made for its
 * layout (the worker's check before trusting it). */
static inline int bw_stream_plan_ok(const bw_request *q)
{
    bw_request p = *q;
    if (q->n_arrays < 1 || q->n_arrays > BW_MAX_ARRAYS || q->n < 0 || q->slot_bytes == 0 ||
        q->image_bytes < q->front_bytes || q->image_bytes - q->front_bytes < q->data_bytes ||
        q->data_bytes != 2u * (uint64_t)q->n)
        return 0;
    if (bw_stream_plan(&p, q->ring_slots, q->slot_bytes) != 0)
        return 0;
    return p.slot_stride == q->slot_stride && p.chunk_elems == q->chunk_elems &&
           p.chunks == q->chunks && p.shm_bytes == q->shm_bytes;
}

static inline bw_chunk_span_t bw_chunk_span(const bw_request *q, int64_t c)
{
    bw_chunk_span_t s;
    s.e0 = c * q->chunk_elems;
    s.e1 = c == q->chunks - 1 ? q->n : s.e0 + q->chunk_elems;
    if (s.e0 > q->n)
        s.e0 = q->n;
    s.begin = c == 0 ? 0 : q->front_bytes + 2u * (uint64_t)s.e0;
    s.end = c == q->chunks - 1 ? q->image_bytes : q->front_bytes + 2u * (uint64_t)s.e1;
    return s;
}

/* Array k's part of the chunk in slot slot of the ring. */
static inline uint8_t *bw_slot_part(uint8_t *ring, const bw_request *q, int64_t chunk, int k)
{
    return ring + (uint64_t)(chunk % q->ring_slots) * q->slot_bytes + (uint64_t)k * q->slot_stride;
}

#endif
