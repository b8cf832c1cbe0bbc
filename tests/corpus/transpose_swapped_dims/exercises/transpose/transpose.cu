// CORPUS: deliberately broken: rows and cols are mixed up in the indexing,
// as if in were a cols x rows matrix: thread (r, c) writes
// out[r * cols + c] = in[c * rows + r]. Both sides stay inside the arrays
// and every element is written once, so nothing crashes; the result is the
// transpose of in read as cols x rows. For square matrices, and for 1 x n
// and n x 1, that is the right answer, so those cases pass; every other
// shape fails.
#include "transpose.h"
#include <cstdio>

__global__ void transpose_kernel(long long rows, long long cols, const nv_bfloat16* in,
                                 nv_bfloat16* out)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * cols)
        return;
    const long long r = i / cols, c = i % cols;
    out[r * cols + c] = in[c * rows + r];   // BUG: out[c * rows + r] = in[r * cols + c] is meant
}

void transpose(int rows, int cols, const nv_bfloat16* in, nv_bfloat16* out)
{
    const int block = 256;
    const long long total = (long long)rows * cols;
    const long long blocks = (total + block - 1) / block;
    transpose_kernel<<<(unsigned int)blocks, block>>>(rows, cols, in, out);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "transpose: launch failed: %s\n", cudaGetErrorString(err));
}
