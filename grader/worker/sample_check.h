/* Device helpers of the benchmark's per-call check (bench_student.c): before
 * each call every array is rewritten from its pristine copy, rotated by a
 * fresh amount r (bw_array_geom says along which axis), and after it the
 * arrays are hashed keyed by each element's unrotated position, so a call
 * that skips or shortens its work gives a different hash. Elements are 2 or
 * 4 bytes; the hash counts 16-bit units (mix64.h: bw_hash_term). Both
 * enqueue on the legacy default stream. */
#ifndef BWLAB_SAMPLE_CHECK_H
#define BWLAB_SAMPLE_CHECK_H
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "perturb.h"
#include "transplant.h"
#include "protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst = src rotated by r along g's axis (0 <= r < the axis's length), every
 * element XORed with flip (a sign bit: the inputs negated, or 0). */
cudaError_t bw_rotate_array(void *dst, const void *src, const bw_array_geom *g, int64_t r,
                            uint32_t flip);

/* *acc += the sum of bw_hash_term(key, array, u, unit u) over the 16-bit
 * units of a as they lie before the rotation by r: the hash of the
 * unrotated array, whatever r is. acc is device memory. */
cudaError_t bw_hash_array(const void *a, const bw_array_geom *g, int64_t r, uint64_t key,
                          int array, unsigned long long *acc);

/* Sets p's elements of a (g's array) to p's values. */
cudaError_t bw_poke_array(void *a, const bw_array_geom *g, const bw_perturb *p);

/* a[m->to[j]] = from[m->from[j]] for each of m's moves (indices into a, as
 * rotated, and into from, g's array unrotated). */
cudaError_t bw_move_elements(void *a, const void *from, const bw_array_geom *g,
                             const bw_transplant *m);

#ifdef __cplusplus
}
#endif
#endif
