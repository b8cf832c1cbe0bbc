// CORPUS: deliberately broken: copies in to out element for element,
// out[i] = in[i], as if a transpose changed only the shape. For 1 x n and
// n x 1 matrices that is the transpose (the same elements in the same
// order), so those cases pass; every other shape fails, with every element
// written and each one holding a value of in.
#include "transpose.h"
#include <cstdio>

__global__ void transpose_kernel(long long total, const nv_bfloat16* in, nv_bfloat16* out)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total)
        out[i] = in[i];   // BUG: out[c * rows + r] = in[r * cols + c] is meant
}

void transpose(int rows, int cols, const nv_bfloat16* in, nv_bfloat16* out)
{
    const int block = 256;
    const long long total = (long long)rows * cols;
    const long long blocks = (total + block - 1) / block;
    transpose_kernel<<<(unsigned int)blocks, block>>>(total, in, out);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "transpose: launch failed: %s\n", cudaGetErrorString(err));
}
