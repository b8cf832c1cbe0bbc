// CORPUS: hostile. Computes correctly, then takes all free device memory in
// 256 MiB pieces and never gives it back.
#include "vector_sum.h"

__global__ void add_kernel(long long n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = __float2bfloat16_rn(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    add_kernel<<<(unsigned)(((long long)n + 255) / 256), 256>>>(n, a, b, c);
    void* p;
    while (cudaMalloc(&p, (size_t)256 << 20) == cudaSuccess) {
    }
    cudaGetLastError();
}
