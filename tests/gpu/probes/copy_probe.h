// What the copy probes share (access_width.cu, copy_paths.cu): the error
// check and the grid-stride copy both of them time.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            std::printf("FATAL %s: %s\n", #x, cudaGetErrorString(e_));                 \
            std::exit(1);                                                              \
        }                                                                              \
    } while (0)

// A grid-stride loop with 8 accesses of T in flight a thread.
template <typename T>
__global__ void copy_kernel(const T* __restrict__ src, T* __restrict__ dst, long long n)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 7 * stride < n; i += 8 * stride) {
        T v[8];
#pragma unroll
        for (int k = 0; k < 8; ++k)
            v[k] = src[i + k * stride];
#pragma unroll
        for (int k = 0; k < 8; ++k)
            dst[i + k * stride] = v[k];
    }
    for (; i < n; i += stride)
        dst[i] = src[i];
}
