// CORPUS: control, not broken. One thread per element of in, 64-bit
// indices, the bf16 copied as it is (a 2-byte value, never converted, so a
// NaN keeps its payload). Reads are coalesced (consecutive threads read
// consecutive elements of a row), writes are strided (they land rows
// apart in out), so it is slow; but it is correct everywhere, the
// 46340 x 46340 and 2 x 1073741823 cases included: it must pass every case.
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
    const long long total = (long long)rows * cols;
    const long long blocks = (total + block - 1) / block;   // up to 2^23: fits gridDim.x
    transpose_kernel<<<(unsigned int)blocks, block>>>(rows, cols, in, out);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "transpose: launch failed: %s\n", cudaGetErrorString(err));
}
