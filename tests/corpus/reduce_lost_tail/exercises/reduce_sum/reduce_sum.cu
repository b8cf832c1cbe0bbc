// CORPUS: deliberately broken: a scalar head up to the first 16-byte
// boundary (right), then a grid-stride loop of 16-byte loads (8 bf16 each),
// and no tail: the last (n - h) % 8 elements, h being the head's length,
// are never added. With offset 0 (h = 0) it is wrong whenever n % 8 != 0.
// Everything else is the control's: *sum zeroed first, float partial sums,
// a shared-memory tree, one atomicAdd per block.
#include "reduce_sum.h"
#include <cstdio>

constexpr int kBlock = 256;
constexpr long long kMaxBlocks = 2048;

__device__ float sum8(uint4 v)
{
    const unsigned int w[4] = {v.x, v.y, v.z, v.w};
    float s = 0.0f;
    for (int k = 0; k < 4; ++k)   // a bf16 is the top half of a float: shift, no rounding
        s += __uint_as_float(w[k] << 16) + __uint_as_float(w[k] & 0xFFFF0000u);
    return s;
}

__global__ void reduce_kernel(long long head, long long n_vec, const nv_bfloat16* x, float* sum)
{
    __shared__ float partial[kBlock];
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float s = t < head ? __bfloat162float(x[t]) : 0.0f;   // scalar head: 0..7 elements
    const uint4* body = reinterpret_cast<const uint4*>(x + head);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long v = t; v < n_vec; v += stride)
        s += sum8(body[v]);
    // BUG: no loop over the tail, x[head + 8 * n_vec .. n - 1]
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
    long long head = (long long)((16 - reinterpret_cast<uintptr_t>(x) % 16) % 16) / 2;
    if (head > n)
        head = n;
    const long long n_vec = (n - head) / 8;   // the (n - head) % 8 leftovers are dropped
    long long blocks = (n_vec + kBlock - 1) / kBlock;
    if (blocks > kMaxBlocks)
        blocks = kMaxBlocks;
    if (blocks < 1)
        blocks = 1;   // the head alone still needs a block
    reduce_kernel<<<(unsigned int)blocks, kBlock>>>(head, n_vec, x, sum);
    err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "reduce_sum: launch failed: %s\n", cudaGetErrorString(err));
}
