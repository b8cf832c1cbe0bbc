// CORPUS: deliberately broken: uses the input a as scratch space. The sum is
// stored into a[i] first and then copied to c[i], so c is right but a comes
// back changed (the contract says never change a or b).
#include "vector_sum.h"
#include <cstdio>

__global__ void vector_sum_kernel(long long n, nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        a[i] = __float2bfloat16_rn(__bfloat162float(a[i]) + __bfloat162float(b[i]));  // BUG
        c[i] = a[i];
    }
}

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;
    vector_sum_kernel<<<(unsigned int)blocks, block>>>(n, const_cast<nv_bfloat16*>(a), b, c);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "vector_sum: launch failed: %s\n", cudaGetErrorString(err));
}
