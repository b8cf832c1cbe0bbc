/* Device helpers of the benchmark's per-call check (bench_timing.c): the
 * arrays are rotated before each call and the output hashed after it, so a
 * call that skips or shortens its work gives a different hash. Elements are
 * 2 bytes (bf16). Both enqueue on the legacy default stream. */
#ifndef BWLAB_SAMPLE_CHECK_H
#define BWLAB_SAMPLE_CHECK_H
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = src[(i + r) % n] for i in [0, n); 0 <= r < n. */
cudaError_t bw_rotate_into(void *dst, const void *src, int64_t n, int64_t r);

/* *acc += sum of bw_hash_term(key, array, (i + r) % n, a[i]) (mix64.h):
 * the hash of the unrotated array, whatever r is. acc is device memory. */
cudaError_t bw_hash_rotated(const void *a, int64_t n, int64_t r, uint64_t key, int array,
                            unsigned long long *acc);

#ifdef __cplusplus
}
#endif
#endif
