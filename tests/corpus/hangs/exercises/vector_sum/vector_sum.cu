// CORPUS: deliberately broken: for lengths with n % 1024 == 1 (1, 1025,
// 2^20 + 1, ...) whose arrays start exactly on a 256-byte boundary (element
// offset 0), the host waits forever on a flag that nothing ever sets. Every
// other case runs a correct kernel.
#include "vector_sum.h"
#include <cstdint>
#include <cstdio>

__global__ void vector_sum_kernel(long long n, const nv_bfloat16* a, const nv_bfloat16* b,
                                  nv_bfloat16* c)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = __float2bfloat16_rn(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    if (n % 1024 == 1 && (reinterpret_cast<uintptr_t>(c) & 255u) == 0) {
        // BUG: a "wait until done" loop whose flag is never set. volatile
        // keeps the compiler from deleting the (otherwise empty) loop.
        volatile int done = 0;
        while (!done) {
        }
    }
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;
    vector_sum_kernel<<<(unsigned int)blocks, block>>>(n, a, b, c);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "vector_sum: launch failed: %s\n", cudaGetErrorString(err));
}
