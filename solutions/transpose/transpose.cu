// Reference solution: transpose, out[c * rows + r] = in[r * cols + c], bf16
// moved bit for bit.
//
// A transpose is a copy with the addresses shuffled: its ceiling is a
// device-to-device copy of the same bytes. Read in's rows and write out's
// directly and one side is strided, every element its own 32-byte sector;
// so each block moves a tile through shared memory, reading pieces of its
// rows of in and, after __syncthreads, writing pieces of its rows of out,
// both coalesced. Four kernels do that:
//   - the vector kernel (transpose_vec), 16 bytes an access wherever it can,
//     for more than BW_THIN_ROWS rows and more than BW_THIN_COLS columns;
//   - for few rows or few columns (2 x 1073741823, 100003 x 9) a tile that
//     spans the short side, so that its piece of out (few rows: the wide
//     kernel, transpose_wide) or of in (few columns: the tall kernel,
//     transpose_tall) is one contiguous run; both move 16 bytes an access;
//   - the element kernel (transpose_kernel), one bf16 an access, for two
//     columns and wherever a knob below turns the others off.
// Elements move as raw 16-bit patterns, never through float (a NaN keeps
// its payload). The arrays are only 2-byte aligned: every wide access is
// placed on memory's own grid, never on the tile's.
//
// The grid is 1-D, one block per tile (gridDim.y could not hold the 524288
// tile rows of a tall one). rows * cols can be 2^31 - 1, so element indices
// are 64-bit; per-tile offsets stay 32-bit.
#include "transpose.h"

#include <cstdint>
#include <cstdio>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

// Compile-time knobs (try variants with -D), measured on the H200 with
// tests/gpu/new_exercises_probe.sh; the figures are in docs/BENCHMARKS.md.
// The vector kernel's:
#ifndef BW_VEC_LR   // lanes per piece of a row of out: a tile has 8 x LR rows (8, 16, 32)
#define BW_VEC_LR 32
#endif
#ifndef BW_VEC_LC   // lanes per piece of a row of in: a tile has 8 x LC columns (8, 16, 32)
#define BW_VEC_LC 16
#endif
#ifndef BW_VEC_MIN_BLOCKS   // blocks an SM must hold (caps registers)
#define BW_VEC_MIN_BLOCKS 2
#endif
#ifndef BW_VEC_BAND   // bands of this many tile rows, each column by column (few rows of out at once)
#define BW_VEC_BAND 128
#endif
#ifndef BW_VEC_ROW_ORDER_COLS   // at most this many tiles wide: row by row
#define BW_VEC_ROW_ORDER_COLS 32
#endif
#ifndef BW_VEC_ROW_LINES   // 1: row by row (2 tiles wide or more), whole lines, no L2 fetch; 0: as in bands
#define BW_VEC_ROW_LINES 1
#endif
#ifndef BW_VEC_OUT_ALIGN   // out's pieces start on a grid of 8, 16 (a 32-byte sector), 32 or 64 elements
#define BW_VEC_OUT_ALIGN 16
#endif
#ifndef BW_VEC_L2_FETCH   // 0, 128 or 256: in bands, loads ask the L2 for that many bytes a miss
#define BW_VEC_L2_FETCH 256
#endif
#ifndef BW_VEC_LINE_GRID   // in bands: 1, loads on the line grid; 0, from the piece's first vector
#define BW_VEC_LINE_GRID 1
#endif
// The thin shapes' (wide, tall and element kernels):
#ifndef BW_TILE_ELEMS   // elements per tile: 4096 or 8192
#define BW_TILE_ELEMS 8192
#endif
#ifndef BW_BLOCK   // threads per block, a multiple of 32
#define BW_BLOCK 256
#endif
#ifndef BW_THIN_ROWS   // at most this many rows (columns, BW_THIN_COLS): a tile spanning them, not
// the vector kernel's mostly empty 256 x 128 ones (tall ones keep it from 65 columns on)
#define BW_THIN_ROWS 128
#endif
#ifndef BW_THIN_COLS
#define BW_THIN_COLS 64
#endif
#ifndef BW_WIDE_VEC   // 1: few rows go to the wide kernel, 0: to the element one
#define BW_WIDE_VEC 1
#endif
#ifndef BW_TALL_VEC   // 1: few columns (but 2) go to the tall kernel, 0: to the element one
#define BW_TALL_VEC 1
#endif
#ifndef BW_BATCH   // the element kernel: loads a thread issues before it uses the first
#define BW_BATCH 8
#endif

// 16384 would put the element kernel's 16384 x 1 tile past 48 KB of shared memory.
static_assert(BW_TILE_ELEMS == 4096 || BW_TILE_ELEMS == 8192, "BW_TILE_ELEMS: 4096 or 8192");
static_assert(BW_BLOCK % 32 == 0 && BW_TILE_ELEMS % BW_BLOCK == 0, "BW_BLOCK: 32k dividing the tile");
static_assert(BW_THIN_ROWS >= 1 && BW_THIN_ROWS <= 128 && BW_THIN_COLS >= 1 && BW_THIN_COLS <= 128,
              "BW_THIN_ROWS, BW_THIN_COLS: 1 to 128");

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

// Row and column of element e of thread t's share of an R x C tile: a warp
// takes 32 neighbours of one row (C >= 32) or a run across whole rows.
template <int R, int C>
struct Walk {
    static_assert(B % C == 0 || C % B == 0, "tile and block must nest");
    static constexpr int RB = B >= C ? B / C : 1, CB = C >= B ? C / B : 1;   // rows a pass, passes a row
    __device__ static int row(int t, int e) { return B >= C ? t / C + e * RB : e / CB; }
    __device__ static int col(int t, int e) { return B >= C ? t % C : t + e % CB * B; }
};

// Block b's tile, in bands of `band` tile rows, each band column by column
// (band 1: row by row): *tr its tile row, *tc its tile column.
__device__ __forceinline__ void tile_of(unsigned int b, unsigned int tiles_r, unsigned int tiles_c,
                                        unsigned int band, unsigned int* tr, unsigned int* tc)
{
    const unsigned int band_tiles = band * tiles_c;
    const unsigned int first = b / band_tiles, in_band = b - first * band_tiles;
    const unsigned int height = min(band, tiles_r - first * band);
    *tc = in_band / height;
    *tr = first * band + (in_band - *tc * height);
}

// Block b moves tile (tr, tc) of in, the part inside the matrix. Loads go in
// batches of G, all issued before the first is used: bytes in flight.
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
    tile_of(blockIdx.x, tiles_r, tiles_c, 128, &tile_r, &tile_c);   // bands of 128 tile rows
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
            if (i < h && j < w)
                dst[(long long)j * rows + i] = tile[i * P + j];
        }
    }
}

// The vector kernel, for two long sides. A copy 2 bytes an access reaches 66
// % of cudaMemcpy on the H200, 16 bytes 93 % (tests/gpu/probes/access_width.cu),
// so an inner tile moves 16 bytes an access, on memory's grid, not the tile's:
//   1. Each row's piece of in (TC elements) spans TC / 8 + 1 aligned
//      vectors, copied as they lie into shared memory with cp.async (all of
//      a tile's loads in flight at once, no registers). In bands each load
//      asks the L2 to fetch the 256 bytes around a miss (a piece starting
//      mid-line shares its end lines with the tiles beside it), and a line's
//      vectors share one 128-byte group of shared memory (the line grid:
//      cp.async asks for the line once). Row by row, a tile loads the whole
//      lines its pieces touch, with no hint (RowLoads).
//   2. Each thread takes an 8 x 8 block of the tile: two neighbouring
//      vectors of each of its rows cut to its 8 columns (window()), byte
//      permutes into eight pieces of out's rows, and a shuffle joins its own
//      and the next lane's pieces into the aligned vector of out it stores.
// A block owns of each of out's rows the SR = TR - XA elements from r0 - e,
// e (0 .. XA - 1) putting the first on a 32-byte sector (no sector written
// by two blocks), so a tile holds in's rows r0 - XA .. r0 + SR - 1. A row's
// vectors sit in slots rotated within groups of 8 (slot()): step 2's
// quarter warp reads 8 rows 8 apart. Edge tiles (first and last tile rows,
// loads past in's end) run the same code checked.
using Vec = uint4;

__device__ __forceinline__ Vec shfl_vec_down(Vec x, int delta, int width)
{
    return {__shfl_down_sync(0xffffffffu, x.x, delta, width), __shfl_down_sync(0xffffffffu, x.y, delta, width),
            __shfl_down_sync(0xffffffffu, x.z, delta, width), __shfl_down_sync(0xffffffffu, x.w, delta, width)};
}

// Elements s .. s + 7 of the 16 in lo (elements 0-7) and hi (8-15), s in
// 0 .. 7. Shifts by selects, never by indexing an array with s (that would
// put the array in local memory).
__device__ __forceinline__ Vec window(Vec lo, Vec hi, int s)
{
    const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    unsigned u[6], v[5];
#pragma unroll
    for (int t = 0; t < 6; ++t)
        u[t] = (s & 4) ? w[t + 2] : w[t];   // two words
#pragma unroll
    for (int t = 0; t < 5; ++t)
        v[t] = (s & 2) ? u[t + 1] : u[t];   // one word
    const unsigned half = 16u * (unsigned)(s & 1);   // one element
    return {__funnelshift_r(v[0], v[1], half), __funnelshift_r(v[1], v[2], half),
            __funnelshift_r(v[2], v[3], half), __funnelshift_r(v[3], v[4], half)};
}

__device__ __forceinline__ unsigned word_of(Vec x, int q)
{
    return q == 0 ? x.x : q == 1 ? x.y : q == 2 ? x.z : x.w;
}

// Stores elements a .. b - 1 of x to p[a] .. p[b - 1]; p is 16-byte aligned.
// One 16-byte store for the whole vector, else element by element (only at
// the matrix's top and bottom).
__device__ __forceinline__ void store_range(unsigned short* p, Vec x, int a, int b)
{
    if (a == 0 && b >= 8)
        *reinterpret_cast<Vec*>(p) = x;
    else
        for (int m = a; m < b; ++m)
            p[m] = (unsigned short)(word_of(x, m >> 1) >> (16 * (m & 1)));
}

// The aligned vector of in starting at element g (g + p_in a multiple of 8);
// element by element where it reaches past either end of in.
__device__ __forceinline__ Vec load_vec(const unsigned short* __restrict__ in, long long g, long long total)
{
    if (g >= 0 && g + 8 <= total)
        return __ldg(reinterpret_cast<const Vec*>(in + g));
    unsigned w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int m = 0; m < 8; ++m)
        if (g + m >= 0 && g + m < total)
            w[m / 2] |= (unsigned)in[g + m] << (16 * (m % 2));
    return {w[0], w[1], w[2], w[3]};
}

constexpr int LR = BW_VEC_LR, LC = BW_VEC_LC;   // lanes per piece of a row of out and of in
constexpr int TR = 8 * LR, TC = 8 * LC, NT = LR * LC;
constexpr int XA = BW_VEC_OUT_ALIGN;             // out's pieces start on a grid of XA elements
constexpr int SR = TR - XA;                      // rows of in (elements of out's rows) a tile owns
constexpr int RP = LC + 8;                       // a tile row's slots: up to LC + 8 used on the line grid
constexpr int kSmemBytes = TR * RP * (int)sizeof(Vec);
static_assert(LC == 8 || LC == 16 || LC == 32, "BW_VEC_LC: 8, 16 or 32 lanes");
static_assert(LR == 8 || LR == 16 || LR == 32, "BW_VEC_LR: 8, 16 or 32 lanes");
static_assert(NT <= 1024, "BW_VEC_LR * BW_VEC_LC: at most 1024 threads");
static_assert(XA == 8 || XA == 16 || XA == 32 || XA == 64, "BW_VEC_OUT_ALIGN: 8, 16, 32 or 64 elements");
// SR > XA: a tile of tile row 1 then starts XA rows below row 0, far enough
// that its first loads (up to DM elements before its piece) stay in in.
static_assert(SR > XA, "a tile must own more rows than it reads above");
static_assert(BW_VEC_L2_FETCH == 0 || BW_VEC_L2_FETCH == 128 || BW_VEC_L2_FETCH == 256,
              "BW_VEC_L2_FETCH: 0, 128 or 256");

// How a tile's rows of in are loaded. Lines: every vector of the lines a
// piece touches, else those holding the piece. LineGrid (always with Lines):
// k counts from the line the piece starts in, else from its first vector.
// Fetch: bytes the L2 fetches a miss.
template <bool Lines, int Fetch, bool LineGrid = false>
struct Loads {
    static constexpr bool lines = Lines;
    static constexpr int fetch = Fetch;
    static constexpr bool line_grid = Lines || LineGrid;
    static constexpr int DM = line_grid ? 63 : 7;   // loads start on a grid of DM + 1 elements
};
using BandLoads = Loads<false, BW_VEC_L2_FETCH, BW_VEC_LINE_GRID != 0>;
using BandVecLoads = Loads<false, BW_VEC_L2_FETCH>;   // counted from the first vector
using RowLoads = Loads<true, 0>;

// One 16-byte cp.async from global p to shared dst, asking the L2 for
// Fetch bytes around a miss.
template <int Fetch>
__device__ __forceinline__ void copy_async(Vec* dst, const unsigned short* p)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800   // cp.async and its hint: sm_80 on
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    if constexpr (Fetch == 256)
        asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" :: "r"(s), "l"(p) : "memory");
    else if constexpr (Fetch == 128)
        asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" :: "r"(s), "l"(p) : "memory");
    else
        __pipeline_memcpy_async(dst, p, sizeof(Vec));
#else
    __pipeline_memcpy_async(dst, p, sizeof(Vec));
#endif
}

// The aligned vector of in at element g into shared dst: by cp.async, or
// element by element where it reaches past an end of in.
__device__ __forceinline__ void copy_vec(Vec* dst, const unsigned short* __restrict__ in, long long g,
                                         long long total)
{
    if (g >= 0 && g + 8 <= total)
        copy_async<0>(dst, in + g);
    else
        *dst = load_vec(in, g, total);
}

// One tile, w of its columns inside the matrix. Edge: the tile touches the
// top or bottom of the matrix or the arrays' ends: every access checked.
template <bool Edge, class L>
__device__ __forceinline__ void move_tile(Vec* tile, int rows, int cols, int r0, int c0, int p_in,
                                          int p_out, const unsigned short* __restrict__ in,
                                          unsigned short* __restrict__ out)
{
    constexpr int DM = L::DM;
    const int w = min(TC, cols - c0);
    const long long total = (long long)rows * cols;
    const int t = threadIdx.x;
    constexpr Vec zero = {0u, 0u, 0u, 0u};
    // Tile row i is in's row r0 - XA + i, its piece d_i elements past the
    // grid the loads start on (16 bytes; 128 on the line grid).
    const long long s_first = (long long)(r0 - XA) * cols + c0;
    const int d_first = (int)((s_first + p_in) & DM), d_step = cols & DM;

    // 1. in -> shared: vector k of row i holds the piece's elements 8k - d_i
    // .. + 7 (k up to LC + 7 on the line grid). Lane kk of a row takes
    // vector kk of the piece (LineGrid: k = d_i / 8 + kk) or of its first
    // line (Lines); then vector LC goes one row a thread, or with Lines
    // vectors LC .. LC + 7 go 8 lanes a row. Slot: k rotated within its
    // group of 8 by i / 8 - d_i / 8 (a line's 8 vectors fill one group on
    // the line grid; the rows a quarter warp reads land in 8 banks).
    auto slot = [](int i, int d, int k) {
        const int rot = (i >> 3) - (d >> 3);
        return (k & ~7) | ((k + rot) & 7);
    };
    auto copy = [&](int i, int kk) {
        const int d = (d_first + i * d_step) & DM;
        const int k = L::line_grid && !L::lines ? (d >> 3) + kk : kk;
        // Lines: every vector of the 128-byte lines the piece touches; else
        // the vectors that hold some of it.
        const bool needed = L::lines ? 8 * k < ((d + w + 63) & ~63) : 8 * k <= d + w - 1;
        if (!needed)
            return;
        const long long g = s_first + (long long)i * cols - d + 8 * k;
        Vec* dst = &tile[i * RP + slot(i, d, k)];
        if constexpr (Edge) {
            const int r = r0 - XA + i;
            *dst = r >= 0 && r < rows && 8 * k - d < w ? load_vec(in, g, total) : zero;
        } else {
            copy_async<L::fetch>(dst, in + g);
        }
    };
#pragma unroll
    for (int i0 = 0; i0 < TR; i0 += NT / LC)
        copy(i0 + t / LC, t % LC);
    if constexpr (L::lines) {
#pragma unroll
        for (int i0 = 0; i0 < TR; i0 += NT / 8)
            copy(i0 + t / 8, LC + t % 8);
    } else if (t < TR) {
        copy(t, LC);
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();

    // 2. shared -> out. Thread (g, v) takes tile rows 8g .. + 7, columns 8v
    // .. + 7: column 8v + m is in's rows r0 - XA + 8g .. + 7 of out's row c0
    // + 8v + m. Lane g < LR - XA / 8 stores that row's vector of in's rows
    // r0 - e + 8g .. + 7, held by lanes g + (XA - e) / 8 and the next.
    const int g = t % LR, v = t / LR;
    Vec q[8];
#pragma unroll
    for (int m = 0; m < 8; ++m) {
        const int i = 8 * g + m;
        const Vec* row = &tile[i * RP];
        const int d = (d_first + i * d_step) & DM, kv = v + (d >> 3);
        q[m] = window(row[slot(i, d, kv)], row[slot(i, d, kv + 1)], d & 7);
    }
    const long long o0 = (long long)(c0 + 8 * v) * rows;         // out's row c0 + 8v
    const int e0 = (int)((o0 + r0 + p_out) & (XA - 1)), e_step = rows & (XA - 1);
#pragma unroll
    for (int m = 0; m < 8; ++m) {
        const unsigned sel = (m & 1) ? 0x7632u : 0x5410u;   // high or low halves
        const Vec col = {__byte_perm(word_of(q[0], m / 2), word_of(q[1], m / 2), sel),
                         __byte_perm(word_of(q[2], m / 2), word_of(q[3], m / 2), sel),
                         __byte_perm(word_of(q[4], m / 2), word_of(q[5], m / 2), sel),
                         __byte_perm(word_of(q[6], m / 2), word_of(q[7], m / 2), sel)};
        const int e = (e0 + m * e_step) & (XA - 1);
        const int r = r0 - e + 8 * g;                 // in's row of the vector's element 0
        // tile row 8g + lead holds the vector's element 0 (lane g + lead / 8)
        const int lead = XA - e;
        const Vec lo = shfl_vec_down(col, lead / 8, LR), hi = shfl_vec_down(col, lead / 8 + 1, LR);
        const Vec x = (lead & 7) == 0 ? lo : window(lo, hi, lead & 7);
        if (g >= LR - XA / 8 || 8 * v + m >= w)
            continue;
        unsigned short* dst = out + (o0 + (long long)m * rows + r);
        if constexpr (Edge)
            store_range(dst, x, max(0, -r), min(8, rows - r));
        else
            *reinterpret_cast<Vec*>(dst) = x;
    }
}

// Out of line: rarely run, and inlined it would double the kernel's code.
template <class L>
__device__ __noinline__ void move_edge_tile(Vec* tile, int rows, int cols, int r0, int c0, int p_in,
                                            int p_out, const unsigned short* __restrict__ in,
                                            unsigned short* __restrict__ out)
{
    move_tile<true, L>(tile, rows, cols, r0, c0, p_in, p_out, in, out);
}

template <class L>
__global__ void __launch_bounds__(NT, BW_VEC_MIN_BLOCKS)
transpose_vec(int rows, int cols, unsigned int tiles_r, unsigned int tiles_c, unsigned int band,
              int p_in, int p_out, const unsigned short* __restrict__ in, unsigned short* __restrict__ out)
{
    extern __shared__ Vec tile[];
    unsigned int tile_r, tile_c;
    tile_of(blockIdx.x, tiles_r, tiles_c, band, &tile_r, &tile_c);
    const int r0 = (int)(tile_r * SR), c0 = (int)(tile_c * TC);
    // Inside: rows r0 - XA .. r0 + SR exist and the last row's loads (up to
    // DM elements past its piece) end in in. The last tile column counts as
    // inside: its loads past a row's end read the next row, w keeps its
    // stores in the matrix (checked, it cost 4194319 x 255 7 % of its time).
    if (tile_r > 0 && r0 + SR < rows &&
        (long long)(r0 + SR - 1) * cols + c0 + TC + L::DM + 1 <= (long long)rows * cols)
        move_tile<false, L>(tile, rows, cols, r0, c0, p_in, p_out, in, out);
    else
        move_edge_tile<L>(tile, rows, cols, r0, c0, p_in, p_out, in, out);
}

template <class L>
cudaError_t launch_vec_as(unsigned int blocks, int rows, int cols, unsigned int tiles_r, unsigned int tiles_c,
                          unsigned int band, int p_in, int p_out, const unsigned short* in, unsigned short* out)
{
    if constexpr (kSmemBytes > 48 * 1024) {   // more than 48 KB must be asked for, once a device
        static int set_for = -1;
        int dev = 0;
        cudaError_t err = cudaGetDevice(&dev);
        if (err == cudaSuccess && dev != set_for)
            err = cudaFuncSetAttribute(transpose_vec<L>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
        if (err != cudaSuccess)
            return err;
        set_for = dev;
    }
    transpose_vec<L><<<blocks, NT, kSmemBytes>>>(rows, cols, tiles_r, tiles_c, band, p_in, p_out, in, out);
    return cudaPeekAtLastError();
}

cudaError_t launch_vec(int rows, int cols, const unsigned short* in, unsigned short* out)
{
    // Each array's first element on memory's 128-byte grid (0 .. 63).
    const int p_in = (int)((reinterpret_cast<uintptr_t>(in) / 2) % 64);
    const int p_out = (int)((reinterpret_cast<uintptr_t>(out) / 2) % 64);
    // A piece of out can start up to XA - 1 rows early: tiles reach past.
    const long long tiles_r = ((long long)rows + XA - 1 + SR - 1) / SR;
    const long long tiles_c = ((long long)cols + TC - 1) / TC;
    // The blocks running at once should cover a compact patch of both
    // arrays: a short tile row (few columns) row by row, else in bands.
    const bool row_order = tiles_c <= BW_VEC_ROW_ORDER_COLS;
    const unsigned int band = row_order ? 1u : BW_VEC_BAND;
    const unsigned int blocks = (unsigned int)(tiles_r * tiles_c);
    // Row by row, the blocks running at once read one stretch of in: whole
    // lines cost memory nothing more, a fetch hint only adds L2 traffic. One
    // tile column reads fewer bytes by the vector.
    const bool row_lines = BW_VEC_ROW_LINES && row_order && tiles_c >= 2;
    // Where every row's piece starts in its line's first vector (cols % 64
    // == 0, in's first element among its line's first 8), the two counts
    // load the same and the simpler code is faster (16384^2: 1.3-1.5 %).
    const bool same_grid = cols % 64 == 0 && p_in < 8;
    auto* launch = row_lines   ? launch_vec_as<RowLoads>
                   : same_grid ? launch_vec_as<BandVecLoads>
                               : launch_vec_as<BandLoads>;
    return launch(blocks, rows, cols, (unsigned int)tiles_r, (unsigned int)tiles_c, band, p_in, p_out, in, out);
}

// The wide kernel, for at most BW_THIN_ROWS rows (17 x 1048579): a tile
// spans every row and TC = BW_TILE_ELEMS / S columns, so its piece of out is
// one run, out[c0 * rows .. (c0 + w) * rows). 16 bytes an access both ways:
// in's row pieces as the aligned vectors holding them (cp.async), out's run
// as aligned vectors gathered from shared memory, its ends one by one.
template <int S>
__global__ void __launch_bounds__(B)
transpose_wide(int rows, int cols, const unsigned short* __restrict__ in, unsigned short* __restrict__ out)
{
    constexpr int TC = BW_TILE_ELEMS / S;
    constexpr int PV = TC / 8 + 1;   // slots a row: a piece off the grid spans one vector more
    __shared__ Vec tile[S * PV];
    const int c0 = (int)((long long)blockIdx.x * TC);
    const int w = min(TC, cols - c0);
    const long long total = (long long)rows * cols;
    const int p_in = (int)((reinterpret_cast<uintptr_t>(in) / 2) % 8);
    const int p_out = (int)((reinterpret_cast<uintptr_t>(out) / 2) % 8);
    // Row i's piece starts sh(i) elements into its first vector; slots
    // rotate by i / 8, as step 2's lanes read rows 8 apart.
    auto sh = [&](int i) { return (int)(((unsigned)i * (cols & 7) + c0 + p_in) & 7u); };   // c0 + 7 may pass INT_MAX
    auto slot = [](int i, int k) { return i * PV + (k + (i >> 3)) % PV; };

    // 1. in -> shared: vector k of row i holds the piece's elements 8k - sh(i) ..
    for (int x = threadIdx.x; x < rows * PV; x += B) {
        const int i = x / PV, k = x - i * PV, d = sh(i);
        if (8 * k < d + w)
            copy_vec(&tile[slot(i, k)], in, (long long)i * cols + c0 - d + 8 * k, total);
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();

    // 2. shared -> out: element l of the run is the tile's (l % rows, l / rows).
    const unsigned short* sm = reinterpret_cast<const unsigned short*>(tile);
    auto at = [&](int i, int j) {
        const int e = sh(i) + j;
        return (unsigned)sm[8 * slot(i, e >> 3) + (e & 7)];
    };
    const long long o0 = (long long)c0 * rows;
    const int len = w * rows;
    const int head = min(len, (int)((8 - ((o0 + p_out) & 7)) & 7));   // before the first aligned vector
    const int body = (len - head) / 8 * 8;
    for (int x = threadIdx.x; x < len - body; x += B) {
        const int l = x < head ? x : x + body;
        out[o0 + l] = (unsigned short)at(l % rows, l / rows);
    }
    for (int l = head + 8 * threadIdx.x; l < head + body; l += 8 * B) {
        int j = l / rows, i = l - j * rows;
        unsigned u[4];
#pragma unroll
        for (int m = 0; m < 4; ++m) {
            const unsigned lo = at(i, j);
            if (++i == rows)
                i = 0, ++j;
            const unsigned hi = at(i, j);
            if (++i == rows)
                i = 0, ++j;
            u[m] = lo | hi << 16;
        }
        *reinterpret_cast<Vec*>(out + o0 + l) = {u[0], u[1], u[2], u[3]};
    }
}

// The tall kernel, for at most BW_THIN_COLS columns (1048579 x 17): a tile
// spans every column and tr rows (tr * cols <= BW_TILE_ELEMS), so its piece
// of in is one run, loaded as the aligned vectors holding it (cp.async). As
// in the vector kernel a block owns of each of out's rows the sr = tr - 16
// elements from r0 - e, e (0 .. 15) putting the first on a 32-byte sector,
// stored as aligned vectors gathered from shared memory. A warp takes 4
// columns x 8 vectors (one column: 32 vectors), rows 8 apart, so cols vectors
// apart: 8 bank groups for odd cols, for even ones (Pad) a pad every cols & -cols.
template <bool Pad>
__global__ void __launch_bounds__(B)
transpose_tall(int rows, int cols, int tr, const unsigned short* __restrict__ in, unsigned short* __restrict__ out)
{
    constexpr int NV = BW_TILE_ELEMS / 8 + 1;         // a run off the grid spans one vector more
    __shared__ Vec tile[Pad ? NV + NV / 2 : NV];      // the pads: at most one vector in two
    const int sr = tr - 16;
    const long long rb = (long long)blockIdx.x * sr - 16;   // tile row i is in's row rb + i
    const long long total = (long long)rows * cols, s0 = rb * cols;
    const int d = (int)((s0 + (long long)((reinterpret_cast<uintptr_t>(in) / 2) % 8)) & 7);
    const int nv = (d + tr * cols + 7) / 8, s3 = __ffs(cols) + 2;   // pads: one every 8 << (s3 - 3) elements
    auto slot = [&](int k) { return Pad ? k + (k >> (s3 - 3)) : k; };

    // 1. in -> shared: vector k holds the run's elements 8k - d .. + 7.
    for (int k = threadIdx.x; k < nv; k += B)
        copy_vec(&tile[slot(k)], in, s0 - d + 8 * k, total);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();

    // 2. shared -> out: out's row j gets tile rows lo .. hi - 1 of column j,
    // the first `head` (to the first aligned vector) and the last few one by one.
    const unsigned short* sm = reinterpret_cast<const unsigned short*>(tile);
    auto at = [&](int e) { return (unsigned)sm[Pad ? e + (e >> s3 << 3) : e]; };   // the run's element e - d
    // Piece offsets need only the low bits of out's index: 32-bit, wrapping.
    const unsigned base = (unsigned)rb + (unsigned)((reinterpret_cast<uintptr_t>(out) / 2) % 16);
    const int top = (int)max(0LL, -rb), bottom = (int)min((long long)tr, rows - rb);
    struct Piece { int lo, hi, head; };
    auto piece = [&](int j) {
        const unsigned o = (unsigned)j * (unsigned)rows + base;   // out's index of tile row 0, + p_out
        const int first = 16 - (int)((o + 16) & 15);              // the tile row owned first
        const int lo = max(first, top), hi = min(first + sr, bottom);
        return Piece{lo, hi, min(hi - lo, (int)((8 - ((o + lo) & 7)) & 7))};
    };
    auto dst = [&](int j, int i) { return out + ((long long)j * rows + rb + i); };
    for (int x = threadIdx.x; x < cols * 16; x += B) {
        const int j = x >> 4, q = x & 15;
        const Piece p = piece(j);
        const int i = q < 8 ? p.lo + q : p.lo + p.head + (p.hi - p.lo - p.head) / 8 * 8 + q - 8;
        if (q < 8 ? i < p.lo + p.head : i < p.hi)
            *dst(j, i) = (unsigned short)at(d + i * cols + j);
    }
    const int jl = cols == 1 ? 0 : 2, vl = 5 - jl;   // lanes: 1 << jl columns, 1 << vl vectors
    const int groups = (cols >> jl) + ((cols & ((1 << jl) - 1)) != 0), vb = (sr + (8 << vl) - 1) >> (vl + 3);
    const int lane = threadIdx.x & 31;
    // Warp w takes items w, w + B / 32, ..: item (group cg, block vi) holds
    // columns cg << jl .., vectors vi << vl .. (stepped: no division a step).
    int cg = (int)(threadIdx.x >> 5) / vb, vi = (int)(threadIdx.x >> 5) - cg * vb;
    while (cg < groups) {
        const int j = (cg << jl) + (lane & ((1 << jl) - 1));
        const Piece p = piece(j);
        const int i0 = p.lo + p.head + 8 * ((vi << vl) + (lane >> jl));
        if (j < cols && i0 + 8 <= p.hi) {
            const int e0 = d + i0 * cols + j;
            unsigned u[4];
#pragma unroll
            for (int m = 0; m < 4; ++m)
                u[m] = at(e0 + 2 * m * cols) | at(e0 + (2 * m + 1) * cols) << 16;
            *reinterpret_cast<Vec*>(dst(j, i0)) = {u[0], u[1], u[2], u[3]};
        }
        for (vi += B / 32; vi >= vb; vi -= vb)
            ++cg;
    }
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

// At most S rows: the wide kernel, or the element kernel's S x (E / S) tiles.
template <int S>
cudaError_t launch_rows(int rows, int cols, const unsigned short* in, unsigned short* out)
{
#if BW_WIDE_VEC
    constexpr long long TC = BW_TILE_ELEMS / S;
    transpose_wide<S><<<(unsigned int)((cols + TC - 1) / TC), B>>>(rows, cols, in, out);
    return cudaPeekAtLastError();
#else
    return launch<S, BW_TILE_ELEMS / S>(rows, cols, in, out);
#endif
}

// The thin side's tile: the smallest power of two spanning its n rows (or
// columns). Template arguments must be constants, hence the ladder.
template <bool ThinRows>
cudaError_t launch_thin(int rows, int cols, const unsigned short* in, unsigned short* out)
{
    constexpr int E = BW_TILE_ELEMS;
    const int n = ThinRows ? rows : cols;
#define BW_THIN_CASE(S)                                                               \
    if (n <= S)                                                                       \
        return ThinRows ? launch_rows<S>(rows, cols, in, out)                         \
                        : launch<E / S, S>(rows, cols, in, out);
    BW_THIN_CASE(1) BW_THIN_CASE(2) BW_THIN_CASE(4) BW_THIN_CASE(8)
    BW_THIN_CASE(16) BW_THIN_CASE(32) BW_THIN_CASE(64)
#undef BW_THIN_CASE
    return ThinRows ? launch_rows<128>(rows, cols, in, out)
                    : launch<E / 128, 128>(rows, cols, in, out);
}

// At most BW_THIN_COLS columns: the tall kernel, tiles of tr rows (a multiple of 16).
cudaError_t launch_cols(int rows, int cols, const unsigned short* in, unsigned short* out)
{
#if BW_TALL_VEC
    if (cols == 2)   // the element kernel: 86 % of the copy at 1073741823 x 2, this one 80
        return launch_thin<false>(rows, cols, in, out);
    const int tr = BW_TILE_ELEMS / cols / 16 * 16, sr = tr - 16;   // a piece can start 15 rows early
    const unsigned int blocks = (unsigned int)(((long long)rows + 15 + sr - 1) / sr);
    if (cols & 1)
        transpose_tall<false><<<blocks, B>>>(rows, cols, tr, in, out);
    else
        transpose_tall<true><<<blocks, B>>>(rows, cols, tr, in, out);
    return cudaPeekAtLastError();
#else
    return launch_thin<false>(rows, cols, in, out);
#endif
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
    if (rows <= BW_THIN_ROWS && rows <= cols)
        CHECK_CUDA(launch_thin<true>(rows, cols, src, dst));
    else if (cols <= BW_THIN_COLS)
        CHECK_CUDA(launch_cols(rows, cols, src, dst));
    else
        CHECK_CUDA(launch_vec(rows, cols, src, dst));
}
