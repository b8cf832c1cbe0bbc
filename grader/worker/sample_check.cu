// The benchmark's per-call check on the device (see sample_check.h).
#include <cstdint>
#include <cuda_runtime.h>
#include "mix64.h"
#include "sample_check.h"

namespace {

int grid_blocks()
{
    static int blocks = 0;
    if (blocks == 0) {
        int sms = 0;
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess)
            sms = 0;
        blocks = 8 * (sms > 0 ? sms : 1);
    }
    return blocks;
}

__global__ void rotate_kernel(uint16_t *dst, const uint16_t *src, int64_t n, int64_t r)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int64_t j = i + r;
        dst[i] = src[j < n ? j : j - n];
    }
}

__global__ void hash_kernel(const uint16_t *a, int64_t n, int64_t r, uint64_t key, int array,
                            unsigned long long *acc)
{
    uint64_t s = 0;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int64_t j = i + r;
        s += bw_hash_term(key, array, (uint64_t)(j < n ? j : j - n), a[i]);
    }
    // Sums wrap mod 2^64 in any order: one atomic per warp is enough.
    for (int d = 16; d > 0; d >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, d);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(acc, (unsigned long long)s);
}

} // namespace

extern "C" cudaError_t bw_rotate_into(void *dst, const void *src, int64_t n, int64_t r)
{
    if (n <= 0)
        return cudaSuccess;
    rotate_kernel<<<grid_blocks(), 256>>>(static_cast<uint16_t *>(dst),
                                          static_cast<const uint16_t *>(src), n, r);
    return cudaGetLastError();
}

extern "C" cudaError_t bw_hash_rotated(const void *a, int64_t n, int64_t r, uint64_t key,
                                       int array, unsigned long long *acc)
{
    if (n <= 0)
        return cudaSuccess;
    hash_kernel<<<grid_blocks(), 256>>>(static_cast<const uint16_t *>(a), n, r, key, array, acc);
    return cudaGetLastError();
}
