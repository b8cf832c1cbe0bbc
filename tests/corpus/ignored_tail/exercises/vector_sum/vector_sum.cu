// CORPUS: deliberately broken: each thread handles a chunk of 8 elements
// (the width of a 16-byte vector), and only n / 8 threads run, so the last
// n % 8 elements are never written. Correct exactly when n % 8 == 0, at any
// offset (the accesses are scalar, so alignment does not matter).
#include "vector_sum.h"
#include <cstdio>

__global__ void vector_sum_kernel(long long n_chunks, const nv_bfloat16* a,
                                  const nv_bfloat16* b, nv_bfloat16* c)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_chunks)
        return;
    for (int k = 0; k < 8; ++k) {
        const long long i = 8 * t + k;
        c[i] = __float2bfloat16_rn(__bfloat162float(a[i]) + __bfloat162float(b[i]));
    }
}

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    const long long n_chunks = n / 8;   // BUG: the n % 8 leftover elements are dropped
    if (n_chunks == 0)
        return;
    const int block = 256;
    const long long blocks = (n_chunks + block - 1) / block;
    vector_sum_kernel<<<(unsigned int)blocks, block>>>(n_chunks, a, b, c);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "vector_sum: launch failed: %s\n", cudaGetErrorString(err));
}
