// CORPUS: control, not broken. One element per thread, 64-bit indices,
// every launch checked. Slow-ish (2-byte accesses) but correct everywhere:
// it must pass every case.
#include "haxpy.h"
#include <cstdio>

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;   // up to 2^23: fits gridDim.x
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n, alpha, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
