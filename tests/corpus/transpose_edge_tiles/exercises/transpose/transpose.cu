// CORPUS: deliberately broken: a shared-memory tiled transpose (32 x 32
// tiles, one row of padding against bank conflicts, 64-bit indices, both
// sides coalesced) that launches only the whole tiles: the tile counts are
// rows / 32 and cols / 32 rounded down. The elements of the partial tiles
// at the right edge (the last cols % 32 columns of in) and at the bottom
// (its last rows % 32 rows) are never written. Correct when rows and cols
// are both multiples of 32; writes nothing at all when either is below 32.
#include "transpose.h"
#include <cstdio>

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;   // a block of 32 x 8 threads moves a tile in 4 passes

__global__ void transpose_kernel(long long rows, long long cols, long long tiles_c,
                                 const unsigned short* in, unsigned short* out)
{
    __shared__ unsigned short tile[kTile][kTile + 1];   // bf16 bits, +1 against bank conflicts
    const long long tr = blockIdx.x / tiles_c, tc = blockIdx.x % tiles_c;
    const long long r0 = tr * kTile, c0 = tc * kTile;
    // No bounds checks: every launched tile is whole (the bug is in the launch).
    for (int y = threadIdx.y; y < kTile; y += kRowsPerPass)
        tile[y][threadIdx.x] = in[(r0 + y) * cols + c0 + threadIdx.x];
    __syncthreads();
    for (int y = threadIdx.y; y < kTile; y += kRowsPerPass)
        out[(c0 + y) * rows + r0 + threadIdx.x] = tile[threadIdx.x][y];
}

void transpose(int rows, int cols, const nv_bfloat16* in, nv_bfloat16* out)
{
    // BUG: rounded down; (rows + kTile - 1) / kTile and bounds checks are meant.
    const long long tiles_r = rows / kTile, tiles_c = cols / kTile;
    const long long tiles = tiles_r * tiles_c;   // at most 2^21: fits gridDim.x
    if (tiles == 0)
        return;   // a launch of 0 blocks would be an error
    transpose_kernel<<<(unsigned int)tiles, dim3(kTile, kRowsPerPass)>>>(
        rows, cols, tiles_c, reinterpret_cast<const unsigned short*>(in),
        reinterpret_cast<unsigned short*>(out));
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "transpose: launch failed: %s\n", cudaGetErrorString(err));
}
