// CORPUS: deliberately broken: each block sums its own chunk of 2048
// elements (8 per thread, 64-bit indices, bounds checked), but the grid is
// n / 2048 rounded down instead of up, so the last partial chunk, the last
// n % 2048 elements, is never added (all of them for n < 2048, where no
// block is launched at all and *sum stays 0). Correct when n % 2048 == 0.
// *sum is zeroed first and each block adds its sum with one atomicAdd.
#include "reduce_sum.h"
#include <cstdio>

constexpr int kBlock = 256;
constexpr int kPerThread = 8;
constexpr long long kChunk = (long long)kBlock * kPerThread;   // elements per block

__global__ void reduce_kernel(long long n, const nv_bfloat16* x, float* sum)
{
    __shared__ float partial[kBlock];
    const long long base = (long long)blockIdx.x * kChunk + threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < kPerThread; ++k) {
        const long long i = base + (long long)k * kBlock;   // coalesced: a warp reads 64 bytes
        if (i < n)
            s += __bfloat162float(x[i]);
    }
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int half = kBlock / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(sum, partial[0]);
}

void reduce_sum(int n, const nv_bfloat16* x, float* sum)
{
    cudaError_t err = cudaMemsetAsync(sum, 0, sizeof(float), 0);
    if (err != cudaSuccess)
        std::fprintf(stderr, "reduce_sum: memset failed: %s\n", cudaGetErrorString(err));
    const long long blocks = n / kChunk;   // BUG: rounded down, (n + kChunk - 1) / kChunk is meant
    if (blocks == 0)
        return;   // a launch of 0 blocks would be an error
    reduce_kernel<<<(unsigned int)blocks, kBlock>>>(n, x, sum);
    err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "reduce_sum: launch failed: %s\n", cudaGetErrorString(err));
}
