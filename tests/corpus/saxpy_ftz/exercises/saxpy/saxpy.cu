// CORPUS: deliberately broken: treats subnormal inputs (magnitude below
// FLT_MIN = 2^-126) as zero, the way flush-to-zero arithmetic does
// (--use_fast_math or -ftz=true make every fmaf an fma.rn.ftz.f32). E.g.
// y = 3*2^-140 with a*x = 0 must stay 3*2^-140, not become 0. Inputs in the
// normal range are computed exactly like the reference (one fmaf), so only
// cases with special values fail. The flush is spelled out in code so that
// the entry does not depend on compiler flags.
#include "saxpy.h"
#include <cfloat>
#include <cstdio>

__device__ float flush(float v)
{
    return fabsf(v) < FLT_MIN ? copysignf(0.0f, v) : v;   // BUG: subnormals -> signed zero
}

__global__ void saxpy_kernel(long long n, float a, const float* x, float* y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = fmaf(a, flush(x[i]), flush(y[i]));
}

void saxpy(int n, float a, const float* x, float* y)
{
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;
    saxpy_kernel<<<(unsigned int)blocks, block>>>(n, a, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "saxpy: launch failed: %s\n", cudaGetErrorString(err));
}
