/* A benchmark checked by hash (an exercise whose output is an array:
 * elementwise, a transpose) moves a few elements before every timed call
 * after the validated one: at places drawn fresh for that call, every
 * array takes the values another element had. Without it every later
 * call's right output was the validated output rotated, and the rotation
 * was all a call had to learn: a kernel that kept the validated output,
 * found r from a few hundred elements of x and wrote the kept output
 * rotated moved 2/3 of the bytes and passed every check
 * (tests/corpus/rotation_replay). With it, a call's output differs from the
 * rotated validated one at places only a read of all its inputs finds.
 *
 * An output element must depend on the inputs of the same element alone
 * (what the rotation already assumes): then the moved element's output is
 * the validated output at the element it came from, and the worker knows
 * the hash a right call gives without a reference. Plain C, shared by the
 * worker and its tests. */
#ifndef BWLAB_TRANSPLANT_H
#define BWLAB_TRANSPLANT_H
#include <stdint.h>
#include "protocol.h"

#define BW_TRANSPLANT_MAX 16   /* elements moved a call, at most */

/* Elements are numbered as the call's n, row-major over rows x cols. */
typedef struct {
    int count;
    int64_t to[BW_TRANSPLANT_MAX];    /* distinct elements that take ... */
    int64_t from[BW_TRANSPLANT_MAX];  /* ... the values of these */
} bw_transplant;

/* Where element e of q's call lies in array k, unrotated. */
int64_t bw_transplant_place(const bw_request *q, int k, int64_t e);

/* Where unrotated element p of g's array lies once the array is rotated by
 * r (sample_check.h's rotation, inverted). */
int64_t bw_rotated_index(const bw_array_geom *g, int64_t r, int64_t p);

/* count (at most BW_TRANSPLANT_MAX) moves drawn from *rng: each from
 * element holds another output value than its to element in images (the
 * validated call's arrays, unrotated, in the shared memory; the output is
 * the array flagged BW_ARRAY_OUTPUT), so that every move changes the
 * output. Where such pairs are too rare to find, fewer (out->count). 0, or
 * -1 with none when the call has fewer than 4 * count elements, or no
 * output element could be told from another. */
int bw_transplant_plan(uint64_t *rng, const bw_request *q, const uint8_t *images, int count,
                       bw_transplant *out);

/* What the hash of all arrays (mix64.h, keyed by key) gains when each to
 * element holds, in every array, what images hold at its from element: a
 * right call's hash after the moves, less the validated call's. */
uint64_t bw_transplant_hash_delta(const bw_request *q, const uint8_t *images, uint64_t key,
                                  const bw_transplant *t);

#endif
