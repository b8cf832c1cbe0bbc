// CORPUS: deliberately broken: casts x and y to 16-byte vectors (uint4)
// straight from the start pointers, with no head. When the arrays do not
// start on a 16-byte boundary (element offset not 0 or 8), the first 16-byte
// load is misaligned and the kernel dies with cudaErrorMisalignedAddress, a
// sticky error. Aligned arrays, and n < 8 (tail only), pass. The tail is
// handled correctly, so nothing else is wrong.
#include "haxpy.h"
#include <cstdio>

__device__ unsigned int axpy2(float alpha, unsigned int xw, unsigned int yw)
{
    const float lo = fmaf(alpha, __uint_as_float(xw << 16), __uint_as_float(yw << 16));
    const float hi = fmaf(alpha, __uint_as_float(xw & 0xFFFF0000u), __uint_as_float(yw & 0xFFFF0000u));
    const __nv_bfloat162_raw r = __floats2bfloat162_rn(lo, hi);
    return (unsigned int)r.x | ((unsigned int)r.y << 16);
}

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long n_vec = n / 8;
    const long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v < n_vec) {
        // BUG: only legal if x and y are 16-byte aligned.
        const uint4 xv = reinterpret_cast<const uint4*>(x)[v];
        uint4 yv = reinterpret_cast<uint4*>(y)[v];
        yv.x = axpy2(alpha, xv.x, yv.x);
        yv.y = axpy2(alpha, xv.y, yv.y);
        yv.z = axpy2(alpha, xv.z, yv.z);
        yv.w = axpy2(alpha, xv.w, yv.w);
        reinterpret_cast<uint4*>(y)[v] = yv;
    }
    // Tail (n % 8 elements), scalar, done by the first threads of block 0.
    if (blockIdx.x == 0 && threadIdx.x < n - 8 * n_vec) {
        const long long i = 8 * n_vec + threadIdx.x;
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
    }
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const int block = 256;
    const long long n_vec = n / 8;
    const long long blocks = n_vec > 0 ? (n_vec + block - 1) / block : 1;
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n, alpha, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
