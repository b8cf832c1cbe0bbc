/* What case_data.c and the shape checks share: a span of the images (a RUN
 * chunk, or for BENCH the whole images), and each shape's check of one.
 * Private to the judge. */
#ifndef BWLAB_CASE_CHECK_H
#define BWLAB_CASE_CHECK_H
#include <stdint.h>
#include "case_data.h"

#define CHECK_BLOCK 2048                  /* elements regenerated at a time, per array */
#define MAX_PARTS 4096                    /* bounds the partial results to a few MB */
#define MIN_THREAD_ELEMS ((int64_t)1 << 16) /* less is not worth a thread */
#define RACE_HASH_KEY UINT64_C(0x7261636568617368)

/* The same chunk of every array: image bytes [begin, end) of array k, which
 * hold its elements [e0, e1) (for an array of n elements, the span's
 * elements; for a whole one, all or none of it). */
typedef struct {
    int64_t e0, e1;                       /* the span's elements of n-element arrays */
    uint64_t begin[BW_MAX_ARRAYS], end[BW_MAX_ARRAYS];
    int64_t ae0[BW_MAX_ARRAYS], ae1[BW_MAX_ARRAYS];
    uint8_t *at[BW_MAX_ARRAYS];           /* image byte begin[k] of array k */
} bw_span;

/* Element ae0[k] of array k in the span. */
static inline uint8_t *bw_span_data(const bw_case_data *d, const bw_span *s, int k)
{
    return s->at[k] + (d->layout[k].front_bytes +
                       (uint64_t)bw_type_bytes(d->ex->arrays[k].type) * (uint64_t)s->ae0[k] -
                       s->begin[k]);
}

/* Fills len elements of type t at p with its "not written" value. */
void bw_fill_unwritten(bw_type t, void *p, int64_t len, int whole);

/* How a span of n elements is cut into parts checked in parallel: returns
 * the number of parts (0 for n = 0), *part_len their length (whole
 * CHECK_BLOCKs, at most MAX_PARTS of them), *per_thread the fewest parts
 * worth a thread. Each part's findings are merged in index order, so what a
 * check reports depends on neither the thread count nor the chunking. */
int64_t bw_check_parts(int64_t n, int64_t *part_len, int64_t *per_thread);

/* Those parts as an array of *count records of part_size bytes, or `one`
 * (the caller's single record, the whole span its part) when there is one
 * part or no memory for more. Release with bw_check_parts_free. */
void *bw_check_parts_alloc(int64_t n, size_t part_size, void *one, int64_t *count,
                           int64_t *part_len, int64_t *per_thread);
void bw_check_parts_free(void *parts, void *one);

/* Every array the function reads, but the output, must come back bit for
 * bit: elements [b, b + len) of the span (data[k] holds element e0 of array
 * k) against their regenerated values regen[k]. Adds the bytes that differ
 * to changed[k] and sets first[k], if still -1, to the first such element. */
void bw_check_inputs_kept(const bw_exercise *ex, void *const *regen, const uint8_t *const *data,
                          int64_t e0, int64_t b, int64_t len, int64_t *changed, int64_t *first);

/* Each shape's check of one span, adding to k (hash_only: the output's race
 * hash alone). */
void bw_check_elementwise(bw_case_check *k, const bw_span *s);
void bw_check_reduction(bw_case_check *k, const bw_span *s);
void bw_check_matrix(bw_case_check *k, const bw_span *s);

/* A reduction's verdict on its result, once every span was checked. */
void bw_check_reduction_finish(const bw_case_check *k, bw_case_result *r);

#endif
