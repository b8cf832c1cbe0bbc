// A vectorized haxpy, used by tests/python/test_sass.py: the body moves 16
// bytes (8 bf16) per load and store; a scalar head reaches 16-byte alignment
// and a scalar tail finishes the last few elements. The asm summary must
// report "yes" for vectorized access (and also list the 16-bit head/tail).
#include <stdint.h>
#include "haxpy.h"

__device__ __forceinline__ void haxpy8(float alpha, const uint4& xv, uint4& yv)
{
    const __nv_bfloat162* xp = reinterpret_cast<const __nv_bfloat162*>(&xv);
    __nv_bfloat162* yp = reinterpret_cast<__nv_bfloat162*>(&yv);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        float2 xf = __bfloat1622float2(xp[k]);
        float2 yf = __bfloat1622float2(yp[k]);
        yp[k] = __floats2bfloat162_rn(alpha * xf.x + yf.x, alpha * xf.y + yf.y);
    }
}

__global__ void haxpy_vec_kernel(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    // Elements before the first 16-byte boundary (x and y share it).
    int head = (int)(((16 - ((uintptr_t)y & 15)) & 15) / 2);
    if (head > n) head = n;
    long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    if (tid < head)
        y[tid] = __float2bfloat16(alpha * __bfloat162float(x[tid]) + __bfloat162float(y[tid]));
    long long body = (n - head) / 8;
    const uint4* xv = reinterpret_cast<const uint4*>(x + head);
    uint4* yv = reinterpret_cast<uint4*>(y + head);
    for (long long i = tid; i < body; i += stride) {
        uint4 a = xv[i];
        uint4 b = yv[i];
        haxpy8(alpha, a, b);
        yv[i] = b;
    }
    long long t = head + body * 8 + tid;
    if (t < n)
        y[t] = __float2bfloat16(alpha * __bfloat162float(x[t]) + __bfloat162float(y[t]));
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    haxpy_vec_kernel<<<1024, 256>>>(n, alpha, x, y);
}
