// CORPUS: correct, but asks for a persisting-L2 carve-out of 48 MiB on every
// call, more than an H100 or H200 allows, and ignores the error it gets back.
// A CUDA API error the code got back is no memory error: memcheck notes it
// and it costs nothing. The kernel is simple_correct's: one element per thread.
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
    // The error is ignored on purpose; cudaGetLastError clears it, so that
    // only the launch's own error is looked at below.
    (void)cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)48 << 20);
    (void)cudaGetLastError();
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;   // up to 2^23: fits gridDim.x
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n, alpha, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
