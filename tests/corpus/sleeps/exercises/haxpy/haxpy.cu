// CORPUS: slow on purpose. Correct, but sleeps 20 ms on the host in every
// call with n >= 2^26, hoping the sleep falls outside what is timed.
#include <chrono>
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
    haxpy_kernel<<<(unsigned)(((long long)n + 255) / 256), 256>>>(n, alpha, x, y);
    if (n >= (1 << 26))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
}
