/* The hash of the arrays' data after a call, as the worker computes it on
 * the device for every benchmark call (bw_hash_term in mix64.h): comparing
 * the two proves the worker's hashes describe the output the grader checked. */
#ifndef BWLAB_IMAGE_HASH_H
#define BWLAB_IMAGE_HASH_H
#include <stdint.h>
#include "image.h"

/* Sum of bw_hash_term(key, array, i, u_i) over the units u_i of data: its
 * 16-bit halves, low first (an element of 4 bytes is units 2i and 2i + 1). */
uint64_t bw_array_hash(const uint8_t *data, int array, int64_t units, uint64_t key, int threads);

/* Sum of bw_hash_term(key, array, first_index + i, unit i of data) for
 * i < count: a piece of the hash above (data at any alignment). */
uint64_t bw_elems_hash(const uint8_t *data, int array, int64_t first_index, int64_t count,
                       uint64_t key);

/* A cheap fingerprint of an output, 16-bit units [first_index, first_index +
 * count) at data: the sum mod 2^32 of v_i * K_i, with K_i odd and drawn from
 * key and i. Any single changed element changes it; a sum, so the pieces
 * of any split of the range add up (mod 2^32) to the whole's value. It tells a re-run's output from the first
 * run's (a race); it proves nothing against a forger, unlike the hash above. */
uint32_t bw_race_hash(const uint8_t *data, int64_t first_index, int64_t count, uint64_t key);

#endif
