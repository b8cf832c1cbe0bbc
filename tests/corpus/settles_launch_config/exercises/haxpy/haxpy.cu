// Corpus entry: a correct haxpy that settles its launch configuration on its
// first call and keeps it for the life of the process, as libraries do:
// it raises the kernel's shared-memory carve-out with cudaFuncSetAttribute,
// asks the occupancy calculator how many blocks fit, and sizes a grid-stride
// grid for the first n it sees (never more blocks than that n needs, never
// more than one full wave). Every later call launches that grid with
// cudaLaunchKernelEx. Correct for any n; fast only if its first call is big.
// What it tests: the benchmark must time each size as a program that starts
// with that size would run it, not in the state its own earlier calls (the
// correctness gate's tiny n) left behind.
#include "haxpy.h"

#include <cstdio>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
haxpy_stride(long long n, float alpha, const nv_bfloat16* __restrict__ x,
             nv_bfloat16* __restrict__ y)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

// Chosen once, at the first call (zero-initialized: no constructor runs).
bool settled;
unsigned int settled_blocks;

bool settle(int n)
{
    int dev = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaFuncSetAttribute(haxpy_stride, cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxL1) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, haxpy_stride, kThreads, 0) !=
            cudaSuccess) {
        std::fprintf(stderr, "haxpy: setting up the launch failed: %s\n",
                     cudaGetErrorString(cudaGetLastError()));
        return false;
    }
    const long long wave = (long long)sms * (per_sm > 0 ? per_sm : 1);
    const long long need = ((long long)n + kThreads - 1) / kThreads;
    settled_blocks = (unsigned int)(need < wave ? need : wave);
    settled = true;
    return true;
}

} // namespace

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    if (n <= 0)
        return;
    if (!settled && !settle(n))
        return;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(settled_blocks);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = 0;
    const cudaError_t err = cudaLaunchKernelEx(&cfg, haxpy_stride, (long long)n, alpha, x, y);
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: cudaLaunchKernelEx failed: %s\n", cudaGetErrorString(err));
}
