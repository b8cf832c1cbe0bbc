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

/* splitmix64's step: the next value of the stream whose state is *state.
 * The cases, a reduction's fresh values, the moved elements and the
 * benchmark's rotation amounts are each such a stream. */
static inline BW_HOST_DEVICE uint64_t bw_mix64_next(uint64_t *state)
{
    *state += UINT64_C(0x9E3779B97F4A7C15);
    return bw_mix64(*state);
}

/* bw_hash_term (below) in two parts, for a run of indices that share their
 * upper 32 bits: the part of the weight's input that does not change along
 * the run, then a term from it and the index's lower bits. */
static inline BW_HOST_DEVICE uint32_t bw_hash_base(uint64_t key, int array, uint32_t index_hi)
{
    return (uint32_t)key ^ (index_hi * 0x85EBCA77u) ^ ((uint32_t)array * 0x27D4EB2Fu);
}

static inline BW_HOST_DEVICE uint64_t bw_hash_term_at(uint32_t base, uint32_t index_lo,
                                                      uint32_t key_hi, uint16_t value)
{
    uint32_t x = index_lo ^ base;
    x *= 0x9E3779B1u;
    x ^= x >> 16;
    x *= 0x85EBCA6Bu;
    x ^= x >> 13;
    return (uint64_t)(x | 1u) * (uint64_t)((uint32_t)value + key_hi);
}

/* One 16-bit unit's term of an array hash: the hash is the sum (mod 2^64)
 * of these over every unit of every array, so any summation order gives the
 * same value, on the host and on the device. index is the unit's position in
 * the original, unrotated array. The weight is a keyed 32-bit mix of
 * (array, index), made odd, so a changed value always changes its term
 * ((v' - v) * odd is never 0 mod 2^64 for |v' - v| < 2^16). 32-bit
 * arithmetic on purpose: the benchmark hashes every array between calls,
 * and with a bw_mix64 per unit that preparation took 3.4-4.9 ms for saxpy's
 * 2^28 - 1 floats on the H200 (the call: 0.73 ms), longer by up to 0.14 ms
 * in the student's worker than in the baseline worker, which the clock
 * check (bench_witness.h) then refused. The device computes the 8 units of
 * a 16-byte vector from one bw_hash_base (hashing 2^28 - 1 floats: 0.57 ->
 * 0.40 ms on the H200); tests/unit/test_image.c pins the value. */
static inline BW_HOST_DEVICE uint64_t bw_hash_term(uint64_t key, int array, uint64_t index,
                                                   uint16_t value)
{
    return bw_hash_term_at(bw_hash_base(key, array, (uint32_t)(index >> 32)), (uint32_t)index,
                           (uint32_t)(key >> 32), value);
}

#endif
