// CORPUS: deliberately broken: the control kernel (grid-stride float sums,
// a shared-memory tree, one atomicAdd per block) without the cudaMemsetAsync
// before it. *sum holds garbage on entry (the grader fills it with
// 1234567.875), and the blocks add onto it: every result is off by exactly
// that value, which the report names.
#include "reduce_sum.h"
#include <cstdio>

constexpr int kBlock = 256;
constexpr long long kMaxBlocks = 2048;

__global__ void reduce_kernel(long long n, const nv_bfloat16* x, float* sum)
{
    __shared__ float partial[kBlock];
    float s = 0.0f;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        s += __bfloat162float(x[i]);
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int half = kBlock / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(sum, partial[0]);   // BUG: onto whatever *sum held before the call
}

void reduce_sum(int n, const nv_bfloat16* x, float* sum)
{
    long long blocks = ((long long)n + kBlock - 1) / kBlock;
    if (blocks > kMaxBlocks)
        blocks = kMaxBlocks;
    reduce_kernel<<<(unsigned int)blocks, kBlock>>>(n, x, sum);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "reduce_sum: launch failed: %s\n", cudaGetErrorString(err));
}
