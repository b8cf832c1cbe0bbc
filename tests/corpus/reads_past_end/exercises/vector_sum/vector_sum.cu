// CORPUS: deliberately broken (only a memory checker sees it): each thread
// loads a full chunk of 8 elements of a and b before looking at n, so the
// last thread reads up to 7 elements past the end of a and b. It writes only
// c[0..n-1], so its output is right. In a normal run the stray reads land in
// the grader's guard zone and do no harm; under compute-sanitizer memcheck,
// where each array ends exactly at the end of its allocation, they are
// reported as out-of-bounds reads (whenever n % 8 != 0).
#include "vector_sum.h"
#include <cstdio>

__global__ void vector_sum_kernel(long long n, const nv_bfloat16* a, const nv_bfloat16* b,
                                  nv_bfloat16* c)
{
    const long long base = 8 * ((long long)blockIdx.x * blockDim.x + threadIdx.x);
    if (base >= n)
        return;
    float s[8];
    for (int k = 0; k < 8; ++k)   // BUG: no check against n on the reads
        s[k] = __bfloat162float(a[base + k]) + __bfloat162float(b[base + k]);
    for (int k = 0; k < 8; ++k)
        if (base + k < n)
            c[base + k] = __float2bfloat16_rn(s[k]);
}

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    const int block = 256;
    const long long chunks = ((long long)n + 7) / 8;
    const long long blocks = (chunks + block - 1) / block;
    vector_sum_kernel<<<(unsigned int)blocks, block>>>(n, a, b, c);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "vector_sum: launch failed: %s\n", cudaGetErrorString(err));
}
