// Reference solution: transpose, out[c * rows + r] = in[r * cols + c], bf16
// moved bit for bit.
//
// A transpose does no arithmetic: it is a copy with the addresses shuffled,
// so its ceiling is a device-to-device copy of the same bytes. Read in's
// rows and write out's rows directly and one side is strided: every element
// its own 32-byte sector. So each block moves a tile through shared memory:
//
//   1. Read a TR x TC tile of in row by row (a warp reads a contiguous piece
//      of a row: coalesced), every element of the thread's share loaded
//      before any is stored, so that each thread keeps several loads in
//      flight (memory latency is hidden by bytes in flight, not by threads
//      alone), and store it in shared memory.
//   2. __syncthreads, then read the tile back column by column and write
//      each column as a contiguous piece of a row of out (coalesced again).
//   3. Tile rows are TC + 2 elements apart in shared memory: in step 2 the
//      32 lanes of a warp read 32 rows of one column, (TC + 2) / 2 = an odd
//      number of 4-byte banks apart: 32 different banks, no conflict.
//
// Elements move as unsigned short, one per access: never through float (a
// NaN keeps its payload), and no alignment to worry about (the arrays are
// only 2-byte aligned, and with an odd cols every other row of in starts
// inside a 4-byte word). Bandwidth does not need wider accesses here: a
// warp's 32 neighbouring 2-byte accesses are one 64-byte request either way,
// and 16 to 32 of them in flight per thread keep the memory busy.
//
// Shapes. A square 64 x 64 tile suits every matrix whose sides are both
// long. A matrix with few rows (2 x 1073741823) or few columns gets a tile
// that spans all of them, TR = rows rounded up to a power of two (TC likewise
// for few columns): then each tile's piece of out (or of in) is one
// contiguous run, read or written as such. The grid is 1-D, one block per
// tile: at most 2^31 - 1 tiles fit gridDim.x, where gridDim.y could not hold
// the 524288 tile rows of a tall one.
//
// Indices: rows * cols can be 2^31 - 1, so element indices are 64-bit
// (r * cols + c, 2 * i as a byte offset and a rounded-up grid all pass
// 2^31 - 1 for the largest shapes); per-tile offsets stay 32-bit.
//
// Compile-time knobs (try variants with -D), measured on the H200 with
// tests/gpu/new_exercises_probe.sh (docs/BENCHMARKS.md):
//   BW_TILE_ELEMS  elements per tile, TR * TC: 4096 (a 64 x 64 tile) or
//                  8192 (64 x 128)                                     [8192]
//   BW_BLOCK       threads per block (a multiple of 32; each thread moves
//                  BW_TILE_ELEMS / BW_BLOCK elements each way)           [256]
//   BW_THIN        a side this long or shorter gets a tile spanning it  [16]
//   BW_BATCH       loads a thread issues before it uses the first        [8]
//   BW_SQUARE_ROWS rows of a tile of a matrix with both sides long (the
//                  tile's columns: BW_TILE_ELEMS / this)                  [64]
//   BW_SQUARE_COLS its columns                  [BW_TILE_ELEMS / BW_SQUARE_ROWS]
//   BW_STORE_HINT  1: stores to out marked evict-first (st.global.cs)     [0]
//   BW_GROUP       tile order: 0 row by row; g > 0 in bands of g tile rows,
//                  a band column by column, so that the blocks running at
//                  once touch g tile rows of in and few rows of out        [0]
#include "transpose.h"

#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

#ifndef BW_TILE_ELEMS
#define BW_TILE_ELEMS 8192
#endif
#ifndef BW_BLOCK
#define BW_BLOCK 256
#endif
#ifndef BW_THIN
#define BW_THIN 16
#endif
#ifndef BW_BATCH
#define BW_BATCH 8
#endif
#ifndef BW_GROUP
#define BW_GROUP 128
#endif
#ifndef BW_SQUARE_ROWS
#define BW_SQUARE_ROWS 128
#endif
#ifndef BW_SQUARE_COLS
#define BW_SQUARE_COLS 64
#endif
#ifndef BW_STORE_HINT
#define BW_STORE_HINT 0
#endif
#ifndef BW_WIDE
#define BW_WIDE 0
#endif

static_assert(BW_TILE_ELEMS == 4096 || BW_TILE_ELEMS == 8192 || BW_TILE_ELEMS == 16384,
              "BW_TILE_ELEMS: 4096, 8192 or 16384");
static_assert(BW_BLOCK % 32 == 0 && BW_TILE_ELEMS % BW_BLOCK == 0, "BW_BLOCK: 32k dividing the tile");
static_assert(BW_THIN >= 1 && BW_THIN <= 32, "BW_THIN: 1 to 32");

#define CHECK_CUDA(call)                                                      \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            std::fprintf(stderr, "transpose: %s failed (%s:%d): %s\n", #call, \
                         __FILE__, __LINE__, cudaGetErrorString(err_));       \
            return;                                                           \
        }                                                                     \
    } while (0)

namespace {

constexpr int B = BW_BLOCK;
constexpr int G = BW_BATCH;

// Element e (0 <= e < TR * TC / B) of thread t's share of an R x C tile,
// walked so that a warp's 32 lanes take 32 neighbours of one row (C >= 32)
// or a run across whole rows (C < 32, the tile as wide as the matrix): the
// row i and column j of that element in the tile.
template <int R, int C>
struct Walk {
    static_assert(B % C == 0 || C % B == 0, "tile and block must nest");
    __device__ static int row(int t, int e)
    {
        if constexpr (B >= C)
            return t / C + e * (B / C);
        else
            return e / (C / B);
    }
    __device__ static int col(int t, int e)
    {
        if constexpr (B >= C)
            return t % C;
        else
            return t + (e % (C / B)) * B;
    }
};

// Block b moves tile (b / tiles_c, b % tiles_c): rows r0 .. r0 + TR - 1 and
// columns c0 .. c0 + TC - 1 of in, those inside the matrix. Loads go in
// batches of G, all G issued before the first is used: bytes in flight.
// Block b's tile: (b / tiles_c, b % tiles_c) row by row, or with BW_GROUP
// in bands of BW_GROUP tile rows, each band column by column.
__device__ __forceinline__ void tile_of(unsigned int b, unsigned int tiles_r, unsigned int tiles_c,
                                        unsigned int* tr, unsigned int* tc)
{
#if BW_GROUP > 0
    const unsigned int band_tiles = BW_GROUP * tiles_c;
    const unsigned int band = b / band_tiles, in_band = b - band * band_tiles;
    const unsigned int height = min((unsigned int)BW_GROUP, tiles_r - band * BW_GROUP);
    *tc = in_band / height;
    *tr = band * BW_GROUP + (in_band - *tc * height);
#else
    (void)tiles_r;
    *tr = b / tiles_c;
    *tc = b - *tr * tiles_c;
#endif
}

template <int TR, int TC>
__global__ void __launch_bounds__(B)
transpose_kernel(int rows, int cols, unsigned int tiles_r, unsigned int tiles_c,
                 const unsigned short* __restrict__ in, unsigned short* __restrict__ out)
{
    constexpr int P = TC + 2;                    // pitch: (TC + 2) / 2 odd for TC % 4 == 0
    constexpr int kPer = TR * TC / B;            // elements per thread, each way
    static_assert(kPer % G == 0, "the batch must divide a thread's share");
    __shared__ unsigned short tile[TR * P];

    unsigned int tile_r, tile_c;
    tile_of(blockIdx.x, tiles_r, tiles_c, &tile_r, &tile_c);
    const int r0 = (int)(tile_r * TR);
    const int c0 = (int)(tile_c * TC);
    const int h = min(TR, rows - r0), w = min(TC, cols - c0);   // the tile inside the matrix
    const int t = threadIdx.x;
    const unsigned short* src = in + ((long long)r0 * cols + c0);
    unsigned short* dst = out + ((long long)c0 * rows + r0);

    // 1. in -> shared: the tile's element (i, j) is in[(r0 + i) * cols + c0 + j].
#pragma unroll
    for (int e0 = 0; e0 < kPer; e0 += G) {
        unsigned short v[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const int i = Walk<TR, TC>::row(t, e0 + g), j = Walk<TR, TC>::col(t, e0 + g);
            v[g] = i < h && j < w ? src[(long long)i * cols + j] : (unsigned short)0;
        }
#pragma unroll
        for (int g = 0; g < G; ++g)
            tile[Walk<TR, TC>::row(t, e0 + g) * P + Walk<TR, TC>::col(t, e0 + g)] = v[g];
    }
    __syncthreads();

    // 2. shared -> out: the output tile is TC x TR; its element (j, i) is
    // out[(c0 + j) * rows + r0 + i] and holds the tile's (i, j).
#pragma unroll
    for (int e0 = 0; e0 < kPer; e0 += G) {
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const int j = Walk<TC, TR>::row(t, e0 + g), i = Walk<TC, TR>::col(t, e0 + g);
            if (i < h && j < w) {
#if BW_STORE_HINT
                __stcs(dst + (long long)j * rows + i, tile[i * P + j]);   // evict first
#else
                dst[(long long)j * rows + i] = tile[i * P + j];
#endif
            }
        }
    }
}

// The wide kernel, for a matrix with both sides long: global accesses of
// V = 4 elements (8 bytes), since a copy moved 2 bytes at a time reaches
// only 66% of cudaMemcpy on the H200, 8 bytes at a time 93%
// (tests/gpu/probes/access_width.cu). Vectors lie on memory's own 8-byte
// grid: a tile's piece of a row starts anywhere in a vector. Reading, a
// vector that reaches into the next tile is read whole (its elements are
// inside in) and only this tile's elements kept; only at the very ends of in
// is a vector read element by element. Writing, the vectors wholly inside
// the piece are stored whole, the one or two it shares with a neighbouring
// tile element by element (another block writes the rest).
[[maybe_unused]] constexpr int V = 4;
using Vec = unsigned long long;

template <int TR, int TC>
__global__ void __launch_bounds__(B)
transpose_wide(int rows, int cols, unsigned int tiles_r, unsigned int tiles_c, int p_in, int p_out,
               const unsigned short* __restrict__ in, unsigned short* __restrict__ out)
{
    constexpr int P = TC + 1;                     // odd pitch: step 2's lanes, 4 rows apart,
    __shared__ unsigned short tile[TR * P];       // meet 2 to a bank at most
    constexpr int kInSlots = TR * (TC / V + 1);   // a row piece spans TC / V + 1 vectors at most
    constexpr int kOutSlots = TC * (TR / V + 1);
    constexpr int kInPer = (kInSlots + B - 1) / B;
    constexpr int kOutPer = (kOutSlots + B - 1) / B;

    unsigned int tile_r, tile_c;
    tile_of(blockIdx.x, tiles_r, tiles_c, &tile_r, &tile_c);
    const int r0 = (int)(tile_r * TR), c0 = (int)(tile_c * TC);
    const int h = min(TR, rows - r0), w = min(TC, cols - c0);
    const long long total = (long long)rows * cols;
    const int t = threadIdx.x;

    // 1. in -> shared. Slot q: vector q % (TC/V + 1) of tile row q / (TC/V + 1).
    Vec v[kInPer];
#pragma unroll
    for (int k = 0; k < kInPer; ++k) {
        const int q = t + k * B, i = q / (TC / V + 1), u = q % (TC / V + 1);
        v[k] = 0;
        if (q < kInSlots && i < h) {
            const long long s = (long long)(r0 + i) * cols + c0;       // the piece's first element
            const long long g = s - ((s + p_in) & (V - 1)) + (long long)V * u;   // the vector's first
            if (g < s + w) {
                if (g >= 0 && g + V <= total) {
                    v[k] = *reinterpret_cast<const Vec*>(in + g);
                } else {
#pragma unroll
                    for (int m = 0; m < V; ++m)
                        if (g + m >= 0 && g + m < total)
                            v[k] |= (Vec)in[g + m] << (16 * m);
                }
            }
        }
    }
#pragma unroll
    for (int k = 0; k < kInPer; ++k) {
        const int q = t + k * B, i = q / (TC / V + 1), u = q % (TC / V + 1);
        if (q < kInSlots && i < h) {
            const long long s = (long long)(r0 + i) * cols + c0;
            const int c = V * u - (int)((s + p_in) & (V - 1));          // tile column of element 0
#pragma unroll
            for (int m = 0; m < V; ++m)
                if (c + m >= 0 && c + m < w)
                    tile[i * P + c + m] = (unsigned short)(v[k] >> (16 * m));
        }
    }
    __syncthreads();

    // 2. shared -> out. Slot q: vector q % (TR/V + 1) of out row c0 + q / (TR/V + 1),
    // which holds tile rows 4u - d .. 4u - d + 3 of tile column j.
#pragma unroll
    for (int k = 0; k < kOutPer; ++k) {
        const int q = t + k * B, j = q / (TR / V + 1), u = q % (TR / V + 1);
        if (q >= kOutSlots || j >= w)
            continue;
        const long long o = (long long)(c0 + j) * rows + r0;           // the piece's first element
        const int d = (int)((o + p_out) & (V - 1));
        const int i0 = V * u - d;                                       // tile row of element 0
        unsigned short* dst = out + (o - d + (long long)V * u);
        if (i0 >= 0 && i0 + V <= h) {
            Vec x = 0;
#pragma unroll
            for (int m = 0; m < V; ++m)
                x |= (Vec)tile[(i0 + m) * P + j] << (16 * m);
            *reinterpret_cast<Vec*>(dst) = x;
        } else {
#pragma unroll
            for (int m = 0; m < V; ++m)
                if (i0 + m >= 0 && i0 + m < h)
                    dst[m] = tile[(i0 + m) * P + j];
        }
    }
}

template <int TR, int TC>
cudaError_t launch_wide(int rows, int cols, const unsigned short* in, unsigned short* out)
{
    // Elements of each array past the last 8-byte boundary.
    const int p_in = (int)((reinterpret_cast<uintptr_t>(in) / 2) % V);
    const int p_out = (int)((reinterpret_cast<uintptr_t>(out) / 2) % V);
    const long long tiles_c = ((long long)cols + TC - 1) / TC;
    const long long tiles_r = ((long long)rows + TR - 1) / TR;
    transpose_wide<TR, TC><<<(unsigned int)(tiles_r * tiles_c), B>>>(
        rows, cols, (unsigned int)tiles_r, (unsigned int)tiles_c, p_in, p_out, in, out);
    return cudaPeekAtLastError();
}

template <int TR, int TC>
cudaError_t launch(int rows, int cols, const unsigned short* in, unsigned short* out)
{
    const long long tiles_c = ((long long)cols + TC - 1) / TC;
    const long long tiles_r = ((long long)rows + TR - 1) / TR;
    const long long tiles = tiles_r * tiles_c;   // <= rows * cols
    transpose_kernel<TR, TC><<<(unsigned int)tiles, BW_BLOCK>>>(
        rows, cols, (unsigned int)tiles_r, (unsigned int)tiles_c, in, out);
    return cudaPeekAtLastError();
}

// The tile of a matrix with n rows (or columns) in the thin dimension: the
// smallest power of two that spans them, the other side making up the
// tile's elements. Template arguments must be constants, hence the ladder.
template <bool ThinRows>
cudaError_t launch_thin(int rows, int cols, const unsigned short* in, unsigned short* out)
{
    constexpr int E = BW_TILE_ELEMS;
    const int n = ThinRows ? rows : cols;
#define BW_THIN_CASE(S)                                                               \
    if (n <= S)                                                                       \
        return ThinRows ? launch<S, E / S>(rows, cols, in, out)                       \
                        : launch<E / S, S>(rows, cols, in, out);
    BW_THIN_CASE(1)
    BW_THIN_CASE(2)
    BW_THIN_CASE(4)
    BW_THIN_CASE(8)
    BW_THIN_CASE(16)
#undef BW_THIN_CASE
    return ThinRows ? launch<32, E / 32>(rows, cols, in, out)
                    : launch<E / 32, 32>(rows, cols, in, out);
}

} // namespace

void transpose(int rows, int cols, const nv_bfloat16* in, nv_bfloat16* out)
{
    if (rows <= 0 || cols <= 0)
        return;
    const auto* src = reinterpret_cast<const unsigned short*>(in);
    auto* dst = reinterpret_cast<unsigned short*>(out);
    // A bad launch shows up here; faults inside the kernel appear later,
    // when the grader synchronizes. Peek: the error stays set for the caller.
    if (rows <= BW_THIN && rows <= cols)
        CHECK_CUDA(launch_thin<true>(rows, cols, src, dst));
    else if (cols <= BW_THIN)
        CHECK_CUDA(launch_thin<false>(rows, cols, src, dst));
    else
#if BW_WIDE
        CHECK_CUDA((launch_wide<BW_SQUARE_ROWS, BW_SQUARE_COLS>(rows, cols, src, dst)));
#else
        CHECK_CUDA((launch<BW_SQUARE_ROWS, BW_SQUARE_COLS>(rows, cols, src, dst)));
#endif
}
