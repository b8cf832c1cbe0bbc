// CORPUS: deliberately broken: the bound is passed to the kernel as a byte
// count in a 32-bit int, n_bytes = 2 * n. From n = 2^30 on that product no
// longer fits an int: it wraps to a negative number, the check
// 2*i < n_bytes is false for every thread, and nothing is written. Below
// 2^30 elements (every case but the one near INT_MAX) it is correct. The
// element index itself is 64-bit, so no access ever goes out of bounds.
#include "haxpy.h"
#include <cstdio>

__global__ void haxpy_kernel(int n_bytes, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (2 * i < n_bytes)   // compared in 64 bits, but n_bytes has already wrapped
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    // BUG: 32-bit byte count. The wrap is spelled out in unsigned arithmetic
    // (what the hardware does for n * 2) so the compiler cannot exploit
    // signed-overflow undefined behaviour and the fixture stays deterministic.
    const int n_bytes = (int)((unsigned int)n * (unsigned int)sizeof(nv_bfloat16));
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n_bytes, alpha, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
