// CORPUS: deliberately broken: the scalar head loop runs one element too
// far (i <= h instead of i < h), and the 16-byte body starts at h as it
// should, so x[h] is added twice whenever n > h (h is the head's length,
// 0..7: with offset 0 it is x[0]). The body and tail are right, as is
// everything else (the control's *sum zeroed first, float partial sums, a
// shared-memory tree, one atomicAdd per block). Tiny n that the head covers
// whole (n <= h) pass.
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

__global__ void reduce_kernel(long long n, long long head, long long n_vec, const nv_bfloat16* x,
                              float* sum)
{
    __shared__ float partial[kBlock];
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    if (t <= head && t < n)   // BUG: <= head: x[head] is also the body's (or the tail's) first
        s += __bfloat162float(x[t]);
    const uint4* body = reinterpret_cast<const uint4*>(x + head);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long v = t; v < n_vec; v += stride)
        s += sum8(body[v]);
    const long long tail = head + 8 * n_vec;   // 0..7 elements after the last vector
    if (t < n - tail)
        s += __bfloat162float(x[tail + t]);
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
    const long long n_vec = (n - head) / 8;
    long long blocks = (n_vec + kBlock - 1) / kBlock;
    if (blocks > kMaxBlocks)
        blocks = kMaxBlocks;
    if (blocks < 1)
        blocks = 1;   // the head and the tail alone still need a block
    reduce_kernel<<<(unsigned int)blocks, kBlock>>>(n, head, n_vec, x, sum);
    err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "reduce_sum: launch failed: %s\n", cudaGetErrorString(err));
}
