// CORPUS: deliberately broken: each thread keeps its grid-stride running
// sum in an nv_bfloat16, so every addition rounds to 8 significant bits.
// The grid is fixed (64 blocks of 256 threads), so from n = 16384 on each
// thread adds n / 16384 elements. Once a thread's sum is 2^8 times larger
// than the values it adds, they fall below half its ulp and are lost: a
// thread adding values in [0, 1) gets stuck at 256. That takes a few
// hundred elements per thread of data whose mean is not 0, i.e. large n;
// small n (one element per thread, nothing rounded) pass. The rest is
// right: *sum zeroed first, the block's 256 partial sums added in float
// (a shared-memory tree), one atomicAdd per block.
#include "reduce_sum.h"
#include <cstdio>

constexpr int kBlock = 256;
constexpr int kBlocks = 64;

__global__ void reduce_kernel(long long n, const nv_bfloat16* x, float* sum)
{
    __shared__ float partial[kBlock];
    nv_bfloat16 s = __float2bfloat16_rn(0.0f);   // BUG: a bf16 running sum
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        s = __hadd(s, x[i]);
    partial[threadIdx.x] = __bfloat162float(s);
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
    reduce_kernel<<<kBlocks, kBlock>>>(n, x, sum);
    err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "reduce_sum: launch failed: %s\n", cudaGetErrorString(err));
}
