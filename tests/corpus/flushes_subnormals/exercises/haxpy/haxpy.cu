// CORPUS: deliberately broken: treats subnormal inputs as zero, the way
// "flush to zero" (fast-math, -ftz=true) arithmetic does. bf16 shares
// float's exponent range, so bf16 subnormals (magnitude below 2^-126) are
// float subnormals too, and flushing them changes results, e.g. y = 3*2^-133
// with alpha*x = 0 must stay 3*2^-133, not become 0. Inputs in the normal
// range are computed exactly like the reference, so only cases with special
// values fail.
#include "haxpy.h"
#include <cfloat>
#include <cstdio>

__device__ float flush(float v)
{
    return fabsf(v) < FLT_MIN ? copysignf(0.0f, v) : v;   // BUG: subnormals -> signed zero
}

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float xi = flush(__bfloat162float(x[i]));
        const float yi = flush(__bfloat162float(y[i]));
        y[i] = __float2bfloat16_rn(fmaf(alpha, xi, yi));
    }
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
