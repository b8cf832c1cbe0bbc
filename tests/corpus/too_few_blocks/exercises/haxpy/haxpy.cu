// CORPUS: control for the benchmark's "why slow" line, not broken. A correct
// grid-stride haxpy launched with only 16 blocks of 256 threads: on an H100
// (132 SMs) that is about 1.5% of what the GPU runs at once, so most SMs sit
// idle. Its cause line must name the grid.
#include "haxpy.h"
#include <cstdio>

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    haxpy_kernel<<<16, 256>>>(n, alpha, x, y);   // too few blocks, on purpose
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
