// CORPUS: hostile. A static object's constructor runs before the worker
// answers bwgrade's HELLO: it prints what the CUDA runtime prints on a
// machine without a GPU and exits. run.py grade used to read "device" in
// bwgrade's output as "no CUDA device" and stop the whole batch, so this
// submission and every one after it went ungraded. Now only bwgrade's own
// worker (no student code) can say there is no device: it started, so every
// case of this submission fails, and grading moves on.
#include "haxpy.h"
#include <cstdio>
#include <cstdlib>

namespace {
struct FakeNoDevice {
    FakeNoDevice()
    {
        std::fprintf(stderr, "no CUDA device: cudaGetDeviceCount returned 100 (no "
                             "CUDA-capable device is detected; is the driver loaded?)\n");
        std::exit(1);
    }
};
FakeNoDevice fake;
}  // namespace

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16 *x, nv_bfloat16 *y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16 *x, nv_bfloat16 *y)
{
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n, alpha, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
