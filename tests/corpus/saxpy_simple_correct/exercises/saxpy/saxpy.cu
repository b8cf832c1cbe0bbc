// CORPUS: control, not broken. One element per thread, 64-bit indices, one
// fmaf per element, every launch checked. Slow-ish (4-byte accesses) but
// correct everywhere: it must pass every case.
#include "saxpy.h"
#include <cstdio>

__global__ void saxpy_kernel(long long n, float a, const float* x, float* y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = fmaf(a, x[i], y[i]);
}

void saxpy(int n, float a, const float* x, float* y)
{
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;   // up to 2^23: fits gridDim.x
    saxpy_kernel<<<(unsigned int)blocks, block>>>(n, a, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "saxpy: launch failed: %s\n", cudaGetErrorString(err));
}
