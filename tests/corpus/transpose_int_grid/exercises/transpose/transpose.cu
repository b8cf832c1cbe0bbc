// CORPUS: deliberately broken: the grid size is computed in int,
// (rows * cols + 255) / 256. rows * cols itself always fits an int (the
// contract keeps it below 2^31), but adding 255 does not when it is within
// 255 of 2^31 - 1: for 2 x 1073741823 (2147483646 elements) the sum wraps
// to a negative number, the block count becomes 4286578689 as an unsigned
// grid size, more than gridDim.x allows, and the launch is refused
// (cudaErrorInvalidValue). The error check below reads the error (which
// clears it) and prints it, so the call returns as if it had worked and
// nothing is written: the case fails with every element unwritten, and
// 1073741823 x 2 the same. Every smaller matrix, 46340 x 46340 included
// (2147395600 elements, 88047 below the limit), is right: the kernel
// itself uses 64-bit indices.
#include "transpose.h"
#include <cstdio>

__global__ void transpose_kernel(long long rows, long long cols, const nv_bfloat16* in,
                                 nv_bfloat16* out)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * cols)
        return;
    const long long r = i / cols, c = i % cols;
    out[c * rows + r] = in[i];
}

void transpose(int rows, int cols, const nv_bfloat16* in, nv_bfloat16* out)
{
    const int block = 256;
    const int total = rows * cols;   // fits: rows * cols <= 2^31 - 1
    // BUG: total + block - 1 in 32 bits. The wrap is spelled out in unsigned
    // arithmetic (what the hardware does for the int sum) so the compiler
    // cannot exploit signed-overflow undefined behaviour and the fixture
    // stays deterministic.
    const int blocks = (int)((unsigned int)total + (unsigned int)(block - 1)) / block;
    transpose_kernel<<<(unsigned int)blocks, block>>>(rows, cols, in, out);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "transpose: launch failed: %s\n", cudaGetErrorString(err));
}
