// CORPUS: control, not broken. *sum is zeroed first, on the same stream;
// then a grid-stride loop of 2-byte loads with 64-bit indices adds into one
// float per thread, a shared-memory tree adds the block's 256 partial sums,
// and thread 0 adds the block's sum to *sum with one atomicAdd. Slow-ish
// (2-byte loads) but correct everywhere: it must pass every case.
// Two facts of float atomicAdd that the grader must allow for: the order of
// the block sums changes from run to run, and so do the last bits of the
// result (always within the bound); and on global memory it flushes
// subnormals to zero (sm_90 SASS: REDG.E.ADD.F32.FTZ.RN), so a sum whose
// exact value is subnormal comes out as 0.
#include "reduce_sum.h"
#include <cstdio>

constexpr int kBlock = 256;
constexpr long long kMaxBlocks = 2048;   // 8 per SM or more on today's GPUs

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
        atomicAdd(sum, partial[0]);
}

void reduce_sum(int n, const nv_bfloat16* x, float* sum)
{
    cudaError_t err = cudaMemsetAsync(sum, 0, sizeof(float), 0);   // *sum holds garbage on entry
    if (err != cudaSuccess)
        std::fprintf(stderr, "reduce_sum: memset failed: %s\n", cudaGetErrorString(err));
    long long blocks = ((long long)n + kBlock - 1) / kBlock;
    if (blocks > kMaxBlocks)
        blocks = kMaxBlocks;
    reduce_kernel<<<(unsigned int)blocks, kBlock>>>(n, x, sum);
    err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "reduce_sum: launch failed: %s\n", cudaGetErrorString(err));
}
