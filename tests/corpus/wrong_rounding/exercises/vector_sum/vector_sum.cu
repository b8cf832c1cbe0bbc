// CORPUS: deliberately broken: a hand-made float -> bf16 conversion that
// chops bits instead of rounding, and chops one bit too many: the mask
// 0xFFFE0000 clears the lowest bf16 mantissa bit as well as the 16 bits
// below it. Results are always at most 2 ulps below the correctly rounded
// sum (toward zero), so every error is small; about a quarter of random
// elements are off by 2 ulps, past the 1-ulp tolerance.
//
// (Plain truncation, mask 0xFFFF0000, would be off by at most 1 ulp and
// so would pass: the tolerance is one ulp of the result.)
#include "vector_sum.h"
#include <cstdio>

__device__ nv_bfloat16 to_bf16_chopped(float f)
{
    const unsigned int bits = __float_as_uint(f) & 0xFFFE0000u;   // BUG: should round (RNE)
    __nv_bfloat16_raw r;
    r.x = (unsigned short)(bits >> 16);
    return nv_bfloat16(r);
}

__global__ void vector_sum_kernel(long long n, const nv_bfloat16* a, const nv_bfloat16* b,
                                  nv_bfloat16* c)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = to_bf16_chopped(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;
    vector_sum_kernel<<<(unsigned int)blocks, block>>>(n, a, b, c);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "vector_sum: launch failed: %s\n", cudaGetErrorString(err));
}
