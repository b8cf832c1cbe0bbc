// CORPUS: deliberately broken: a scalar head up to the first 16-byte
// boundary (right), then one float4 (4 floats, 16 bytes) per thread, and no
// tail: the last (n - h) % 4 elements, h being the head's length, are never
// written. Every wrong element is among the last 3, so the report points at
// the tail; with offset 0 (h = 0) it fails exactly when n % 4 != 0. The
// head is right, so no access is ever misaligned.
#include "saxpy.h"
#include <cstdio>

__global__ void saxpy_kernel(long long n, long long head, long long n_vec, float a,
                             const float* x, float* y)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < head)                                      // scalar head: 0..3 elements
        y[t] = fmaf(a, x[t], y[t]);
    if (t < n_vec) {                                   // body: 16-byte aligned from x + head
        const float4 xv = reinterpret_cast<const float4*>(x + head)[t];
        float4 yv = reinterpret_cast<float4*>(y + head)[t];
        yv.x = fmaf(a, xv.x, yv.x);
        yv.y = fmaf(a, xv.y, yv.y);
        yv.z = fmaf(a, xv.z, yv.z);
        yv.w = fmaf(a, xv.w, yv.w);
        reinterpret_cast<float4*>(y + head)[t] = yv;
    }
    (void)n;   // BUG: no tail loop over y[head + 4 * n_vec .. n - 1]
}

void saxpy(int n, float a, const float* x, float* y)
{
    // x and y share their offset modulo 256, so one head length aligns both.
    long long head = (long long)((16 - reinterpret_cast<uintptr_t>(y) % 16) % 16) / 4;
    if (head > n)
        head = n;
    const long long n_vec = (n - head) / 4;   // the (n - head) % 4 leftovers are dropped
    const long long threads = n_vec > head ? n_vec : head;
    if (threads == 0)
        return;
    const int block = 256;
    const long long blocks = (threads + block - 1) / block;
    saxpy_kernel<<<(unsigned int)blocks, block>>>(n, head, n_vec, a, x, y);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "saxpy: launch failed: %s\n", cudaGetErrorString(err));
}
