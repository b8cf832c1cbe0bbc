// CORPUS: deliberately broken: a leftover debugging check calls abort() for
// lengths with n % 1024 == 1 above 1000 (1025, 2^20 + 1, ...) when the
// element offset is below 4, killing the worker process (SIGABRT). Every
// other case runs a correct kernel.
#include "haxpy.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    // The grader's allocations are 256-byte aligned, so this is 2 * offset.
    const unsigned int offset_bytes = (unsigned int)(reinterpret_cast<uintptr_t>(y) & 255u);
    if (n > 1000 && n % 1024 == 1 && offset_bytes < 8) {
        std::fprintf(stderr, "haxpy: unexpected size %d, giving up\n", n);   // BUG
        std::abort();
    }
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n, alpha, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
