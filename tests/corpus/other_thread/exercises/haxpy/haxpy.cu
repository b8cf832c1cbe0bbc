// CORPUS: cheat. Hands the launch to a detached std::thread and returns at
// once: the work would start after the timed region ends.
#include <thread>
#include "haxpy.h"

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    std::thread([=] {
        haxpy_kernel<<<(unsigned)(((long long)n + 255) / 256), 256>>>(n, alpha, x, y);
    }).detach();
}
