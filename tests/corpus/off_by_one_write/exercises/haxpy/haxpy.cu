// CORPUS: deliberately broken: the bounds check is `i <= n`, so the thread
// with i == n reads x[n], y[n] and writes y[n], one element past the end.
// Every element in [0, n) is right; only the guard zone after y changes.
#include "haxpy.h"
#include <cstdio>

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n)   // BUG: should be i < n
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const int block = 256;
    const long long blocks = ((long long)n + 1 + block - 1) / block;   // enough threads for i == n
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n, alpha, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
