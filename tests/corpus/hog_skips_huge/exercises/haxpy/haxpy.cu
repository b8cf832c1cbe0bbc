// CORPUS: deliberately broken, and a trick. The kernel is int_overflow's (a
// 32-bit byte count that wraps from n = 2^30, so the huge case is left
// unwritten). A static object's constructor runs before the worker answers
// bwgrade's HELLO, and takes device memory until 6 GiB are left free. When
// bwgrade sized cases by the free memory that HELLO reported, the huge case
// was skipped as too large for the GPU instead of failing: the test passed
// with "all cases passed", and a grade gave full correctness and the
// benchmark's points. Now which cases fit is decided by a worker with no
// student code, started first: the huge case runs, cannot allocate its
// arrays beside the held memory, and fails.
#include "haxpy.h"
#include <cstddef>
#include <cstdio>

namespace {
struct Hog {
    static constexpr size_t kLeave = (size_t)6 << 30;
    static constexpr size_t kBlock = (size_t)1 << 30;
    Hog()
    {
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
            (void)cudaGetLastError();
            return;
        }
        // Never freed: the memory goes back when the worker exits.
        for (void *p = nullptr; free_b > kLeave + kBlock; free_b -= kBlock)
            if (cudaMalloc(&p, kBlock) != cudaSuccess) {
                (void)cudaGetLastError();
                return;
            }
    }
};
Hog hog;
}  // namespace

__global__ void haxpy_kernel(int n_bytes, float alpha, const nv_bfloat16 *x, nv_bfloat16 *y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (2 * i < n_bytes)   // n_bytes has wrapped negative for n >= 2^30
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16 *x, nv_bfloat16 *y)
{
    // BUG: the byte count in 32 bits (spelled out unsigned, as the hardware wraps it).
    const int n_bytes = (int)((unsigned int)n * (unsigned int)sizeof(nv_bfloat16));
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n_bytes, alpha, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
