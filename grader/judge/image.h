/* One device array as the grader lays it out: a guard zone, the pointer
 * offset, the elements (of 2 or 4 bytes), another guard zone. The grader builds the image in
 * shared memory; the worker copies it to one cudaMalloc allocation (which is
 * 256-byte aligned), calls the student's code, and copies it back whole. */
#ifndef BWLAB_IMAGE_H
#define BWLAB_IMAGE_H
#include <stdint.h>
#include "bf16.h"

#define BW_GUARD_BYTES 512u      /* guard before the offset, and after the array */
#define BW_POISON ((bf16_t)0x7FD7) /* bf16's "never written" (element.h: bw_type_poison) */

typedef struct {
    uint64_t front_bytes;  /* guard + offset: the array starts here */
    uint64_t data_bytes;   /* elements * element size */
    uint64_t back_bytes;   /* guard after the array; 0 in the sanitizer layout */
    uint64_t total_bytes;  /* front + data + back, rounded up to 256 (the rounding
                            * joins the back guard); sanitizer layout: front + data */
} bw_image_layout;

/* count elements of elem_bytes each, element 0 offset_elems elements past
 * a 256-byte boundary. sanitize != 0: the array ends exactly where the
 * allocation ends, so that compute-sanitizer reports any access past the
 * last element. */
bw_image_layout bw_image_layout_for(int64_t count, int elem_bytes, int offset_elems, int sanitize);

/* The guard pattern byte at byte position pos of the image: varies with pos,
 * so shifted or partial copies of it do not look intact. Never a byte of
 * any type's poison, so a guard read as elements is never "not written". */
uint8_t bw_guard_byte(uint64_t pos);

/* Fill every byte outside [front, front + data) with the guard pattern. */
void bw_image_fill_guards(uint8_t *image, const bw_image_layout *l);
/* The same for the guard bytes among image bytes [from, to), which lie at
 * at[0 .. to - from) (a chunk of the image, stream_plan.h). */
void bw_image_fill_guards_in(uint8_t *at, const bw_image_layout *l, uint64_t from, uint64_t to);

/* Guard bytes found changed: how many, and the first and last one's
 * position relative to the array start, in bytes (negative: before it). */
typedef struct {
    int64_t count, first, last;
} bw_guard_scan;

/* Adds the changed guard bytes among image bytes [from, to), lying at
 * at[0 .. to - from), to *s. Chunks scanned in order add up to the scan of
 * the whole image. */
void bw_image_scan_guards_in(const uint8_t *at, const bw_image_layout *l, uint64_t from,
                             uint64_t to, bw_guard_scan *s);

/* Count the guard bytes that differ from the pattern. *first_bad gets the
 * position of the first one relative to the array start, in bytes (negative:
 * before the array); *last_bad the last one (both 0 when intact; either may
 * be NULL). Returns 0 when intact. */
int64_t bw_image_check_guards(const uint8_t *image, const bw_image_layout *l,
                              int64_t *first_bad, int64_t *last_bad);

static inline void *bw_image_data(uint8_t *image, const bw_image_layout *l)
{
    return image + l->front_bytes;
}

#endif
