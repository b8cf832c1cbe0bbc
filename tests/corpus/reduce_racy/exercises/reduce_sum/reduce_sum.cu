// CORPUS: deliberately broken: a data race. *sum is zeroed first and each
// block's sum is right (grid-stride float sums, a shared-memory tree), but
// thread 0 of each block adds it with a plain *sum += s: a load, an add and
// a store, not one atomic operation. When two blocks finish at about the
// same time, both load the same old value and the later store wipes out the
// earlier block's sum. Which blocks collide depends on timing, so with more
// than one block the result is usually too small and changes from run to
// run. One block (n <= 256) is right.
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
        *sum += partial[0];   // BUG: read-modify-write racing with every other block's
}

void reduce_sum(int n, const nv_bfloat16* x, float* sum)
{
    cudaError_t err = cudaMemsetAsync(sum, 0, sizeof(float), 0);
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
