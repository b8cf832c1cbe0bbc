// A deliberately scalar haxpy, used by tests/python/test_sass.py: every
// thread loads one 16-bit x and one 16-bit y and stores one 16-bit y, so the
// asm summary must report "no" for vectorized access.
#include "haxpy.h"

__global__ void haxpy_scalar_kernel(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = alpha * __bfloat162float(x[i]) + __bfloat162float(y[i]);
        y[i] = __float2bfloat16(v);
    }
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    haxpy_scalar_kernel<<<1024, 256>>>(n, alpha, x, y);
}
