/* splitmix64's output function: a strong 64-bit mixer. Cases, input values
 * and benchmark inputs are all derived from a seed through it. */
#ifndef BWLAB_MIX64_H
#define BWLAB_MIX64_H
#include <stdint.h>

/* Also compiled into the worker's CUDA kernels (grader/worker/sample_check.cu). */
#ifdef __CUDACC__
#define BW_HOST_DEVICE __host__ __device__
#else
#define BW_HOST_DEVICE
#endif

static inline BW_HOST_DEVICE uint64_t bw_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* One element's term of an array hash: the hash is the sum (mod 2^64) of
 * these over every element of every array, so any summation order gives the
 * same value, on the host and on the device. index is the element's position
 * in the original, unrotated array. */
static inline BW_HOST_DEVICE uint64_t bw_hash_term(uint64_t key, int array, uint64_t index,
                                                   uint16_t value)
{
    return bw_mix64(key ^ ((uint64_t)array << 56) ^ (index << 16) ^ (uint64_t)value);
}

#endif
