// CORPUS: deliberately broken: casts x and y to float4 (16 bytes) straight
// from the start pointers, with no head. The pointers are only 4-byte
// aligned: when the element offset is not a multiple of 4, the first float4
// access is misaligned and the kernel dies with cudaErrorMisalignedAddress,
// a sticky error. Aligned arrays (offset 0, 4, 8, 12), and n < 4 (tail
// only), pass. The tail is handled correctly, so nothing else is wrong.
#include "saxpy.h"
#include <cstdio>

__global__ void saxpy_kernel(long long n, float a, const float* x, float* y)
{
    const long long n_vec = n / 4;
    const long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v < n_vec) {
        // BUG: only legal if x and y are 16-byte aligned.
        const float4 xv = reinterpret_cast<const float4*>(x)[v];
        float4 yv = reinterpret_cast<float4*>(y)[v];
        yv.x = fmaf(a, xv.x, yv.x);
        yv.y = fmaf(a, xv.y, yv.y);
        yv.z = fmaf(a, xv.z, yv.z);
        yv.w = fmaf(a, xv.w, yv.w);
        reinterpret_cast<float4*>(y)[v] = yv;
    }
    // Tail (n % 4 elements), scalar, done by the first threads of block 0.
    if (blockIdx.x == 0 && threadIdx.x < n - 4 * n_vec) {
        const long long i = 4 * n_vec + threadIdx.x;
        y[i] = fmaf(a, x[i], y[i]);
    }
}

void saxpy(int n, float a, const float* x, float* y)
{
    const int block = 256;
    const long long n_vec = n / 4;
    const long long blocks = n_vec > 0 ? (n_vec + block - 1) / block : 1;
    saxpy_kernel<<<(unsigned int)blocks, block>>>(n, a, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "saxpy: launch failed: %s\n", cudaGetErrorString(err));
}
