// CORPUS: deliberately broken: rounds toward zero (truncates) when going
// from float to bf16 instead of rounding to nearest even. That is up to a
// whole ulp off, more than the half ulp (+ the slack of legitimate
// strategies) the grader allows, so it must FAIL with the rounding
// diagnosis. The most common bf16 mistake: chopping the low 16 bits.
#include "haxpy.h"
#include <cstdio>

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)   // _rz: round toward zero, where _rn would be correct
        y[i] = __float2bfloat16_rz(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n, alpha, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
