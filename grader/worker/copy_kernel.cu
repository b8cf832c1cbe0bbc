/* See copy_kernel.h. Built the way the solutions' register kernel is
 * (solutions/vector_sum/vector_sum.cu, measured in docs/BENCHMARKS.md): one
 * pass, each thread moves one 16-byte vector, 1024 threads a block, plain
 * loads and stores (streaming hints measured slower). A copy is the least a
 * kernel that reads and writes each byte once can cost, so a baseline that
 * only cudaMemcpy set could sit below what student kernels reach: on some
 * GPUs the copy engine path is far slower than the SMs. */
#include "copy_kernel.h"

#include <cstdint>

#define COPY_BLOCK 1024

__global__ void __launch_bounds__(COPY_BLOCK)
bw_copy16_kernel(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t vecs)
{
    size_t i = (size_t)blockIdx.x * COPY_BLOCK + threadIdx.x;
    if (i < vecs)
        dst[i] = src[i];
}

/* The last bytes % 16 bytes, one thread each. */
__global__ void bw_copy_tail_kernel(const unsigned char *src, unsigned char *dst, size_t bytes)
{
    size_t i = threadIdx.x;
    if (i < bytes)
        dst[i] = src[i];
}

extern "C" cudaError_t bw_copy_kernel(void *dst, const void *src, size_t bytes)
{
    size_t vecs = bytes / 16, tail = bytes % 16;
    if (vecs > 0) {
        size_t blocks = (vecs + COPY_BLOCK - 1) / COPY_BLOCK;
        if (blocks > 0x7fffffffu)
            return cudaErrorInvalidValue;
        bw_copy16_kernel<<<(unsigned)blocks, COPY_BLOCK>>>((const uint4 *)src, (uint4 *)dst, vecs);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
    }
    if (tail > 0) {
        bw_copy_tail_kernel<<<1, 16>>>((const unsigned char *)src + vecs * 16,
                                       (unsigned char *)dst + vecs * 16, tail);
        return cudaGetLastError();
    }
    return cudaSuccess;
}
