// CORPUS: hostile. Correct, except that for n == 10007 its kernel spins
// forever on the device: the worker must be killed and the GPU freed for the
// next case.
#include "haxpy.h"

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y,
                             volatile int* never)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (n == 10007)
        while (*never == 0) {
        }
    if (i < n)
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    static int* zero = nullptr;
    if (zero == nullptr) {
        cudaMalloc(&zero, sizeof(int));
        cudaMemset(zero, 0, sizeof(int));
    }
    haxpy_kernel<<<(unsigned)(((long long)n + 255) / 256), 256>>>(n, alpha, x, y, zero);
}
