// CORPUS: deliberately broken: a data race. The grid covers the array
// twice: blocks 2k and 2k+1 both own the same 256 elements, and each thread
// does the read-modify-write y[i] = alpha*x[i] + y[i] with no coordination.
// If the second thread reads y[i] before the first one's write lands, both
// write the right value; if it reads after, alpha*x[i] is added twice. Which
// happens depends on timing, so the output changes from run to run.
//
// The two blocks of a pair are launched back to back and run at the same
// time. Before its read, each warp stalls for a pseudo-random number of
// cycles derived from the SM clock (standing in for other work a real kernel
// might do first). The stall (0..4095 cycles) is longer than one
// read-modify-write of y (well under 1000 cycles), so whether one warp's
// write lands before the other warp's read is decided by the clock, which
// differs on every run: the output differs between runs in practice, not
// only in principle.
#include "haxpy.h"
#include <cstdio>

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long i = (long long)(blockIdx.x / 2) * blockDim.x + threadIdx.x;   // BUG: 2 owners
    if (i >= n)
        return;
    // Stall 0..4095 cycles: a hash of the SM clock and the block and warp
    // numbers, so the two blocks of a pair wait different, unrelated times
    // even if the SM clocks run in step, and the times change every run.
    const long long t0 = clock64();
    unsigned long long h = (unsigned long long)t0 ^ (blockIdx.x * 0x9E3779B97F4A7C15ull)
                           ^ ((threadIdx.x / 32) * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 31; h *= 0xBF58476D1CE4E5B9ull; h ^= h >> 29;
    const long long wait = (long long)(h & 4095);
    while (clock64() - t0 < wait) {
    }
    const float yi = __bfloat162float(y[i]);                             // read ...
    y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), yi));  // ... write, unsynchronized
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const int block = 256;
    const long long blocks = 2 * (((long long)n + block - 1) / block);   // <= 2^24
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n, alpha, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
