// Reference solution: vector_sum, c[i] = a[i] + b[i] in bf16.
//
// One addition per 6 bytes of memory traffic (read a and b, write c): the
// speed is set by DRAM bandwidth alone, so the whole job is to keep the
// memory system busy:
//
//   1. Move 16 bytes (8 bf16) per load and store instruction.
//   2. Have several of those loads in flight per thread before using any.
//   3. Keep every warp's accesses contiguous (coalesced).
//   4. Do the few leftover elements (head and tail) with plain scalar code.
//   5. On sm_90, let the copy engine move whole tiles (BW_STAGING below):
//      two bulk copies per block instead of one load per thread.
//
// Arithmetic: each sum is taken in float and rounded once to bf16,
// round-to-nearest-even, exactly as the CPU reference does, so the result
// matches it bit for bit. Subnormals are kept because we do not build with
// fast-math (which would flush them).
//
// Compile-time knobs (try variants with -D, e.g. -DBW_VECS_PER_THREAD=2).
// Every one was measured (H100, n = 2^28 - 1, docs/BENCHMARKS.md); the
// defaults are the fastest found there:
//   BW_STAGING          how a block's tile reaches the SM                [2]
//                       0: each thread loads its vectors into registers;
//                       1: the copy engine fetches the tile of both inputs
//                          into shared memory (bulk copies);
//                       2: as 1, and the results go back to memory as one
//                          bulk copy too (see vector_sum_staged_kernel)
//                       (H100: 2 matches CUB, 0.35% ahead of 0; H200: 0 is
//                       fastest, 2 by 1.5-3.6% less: docs/BENCHMARKS.md).
//                       Bulk copies need sm_90: on older GPUs 1 and 2 run
//                       the register kernel.
//   BW_STAGED_BELOW_MHZ where BW_STAGING is 1 or 2, the staged kernel runs
//                       only on GPUs with bulk copies whose memory clock
//                       (cudaDevAttrMemoryClockRate) is below this; faster
//                       memory runs the register kernel               [3000]
//                       (measured: H100, HBM3 at 2,619 MHz, staged ahead by
//                       0.35%; H200, HBM3e at 3,201 MHz, register ahead by
//                       1.5-3.6%: docs/BENCHMARKS.md). 0: the register
//                       kernel everywhere; 100000: staged wherever it can.
//   BW_STAGE_ELEMS      with 1 or 2: elements per block's tile, a multiple
//                       of 8 (768 and 3072 measured slower)           [1536]
//   BW_STAGE_BLOCK      with 1 or 2: threads per block                   [256]
//                       (192 measured 0.5% slower)
//   BW_BLOCK            register kernel: threads per block (multiple of 32)
//                       (256 and 512 measured 0.5-1% slower)            [1024]
// Register kernel only (BW_STAGING=0, or a GPU without bulk copies); each
// default beat its neighbours by 0.5-2%:
//   BW_VECS_PER_THREAD  16-byte vectors per thread per array, i.e. loads
//                       in flight per thread and array                    [1]
//                       (more per thread measured slower: 2 by 1%, 4 by 2%;
//                       2048 resident threads already keep enough in flight)
//   BW_STREAMING        1: streaming cache hints (ld/st .cs, "evict first":
//                       every byte is touched once, so do not keep it);
//                       0: ordinary loads and stores                      [0]
//                       (the hints sound right but measured 2.5% slower
//                       on the H100, 9% on the H200: docs/BENCHMARKS.md)
//   BW_LOAD_HINT        loads only: 1 L1::no_allocate, 2 L2::256B prefetch,
//                       3 both, 0 none [0] (measured: 1 and 3 cost 2-3%,
//                       2 nothing gained)
//   BW_BLOCKS_PER_SM    0: one pass, one block per tile of the array;
//                       k > 0: grid-stride loop over SMs * k blocks       [0]
//                       (8 measured 5% slower)
// Both kernels:
//   BW_HEAD_ALIGN       bytes the body is aligned to: 16 is the least a
//                       16-byte access needs; 128 (one cache line) keeps
//                       every warp's 512-byte access on whole lines;
//                       256 (the contract's shared alignment) was
//                       fastest on the H100: docs/BENCHMARKS.md       [256]
#include "vector_sum.h"

#include <cstdint>
#include <cstdio>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cuda/std/utility>
#include <cuda_runtime.h>

#ifndef BW_STAGING
#define BW_STAGING 2
#endif
#ifndef BW_STAGE_ELEMS
#define BW_STAGE_ELEMS 1536
#endif
#ifndef BW_STAGED_BELOW_MHZ
#define BW_STAGED_BELOW_MHZ 3000
#endif
#ifndef BW_STAGE_BLOCK
#define BW_STAGE_BLOCK 256
#endif
#ifndef BW_BLOCK
#define BW_BLOCK 1024
#endif
#ifndef BW_VECS_PER_THREAD
#define BW_VECS_PER_THREAD 1
#endif
#ifndef BW_STREAMING
#define BW_STREAMING 0
#endif
#ifndef BW_BLOCKS_PER_SM
#define BW_BLOCKS_PER_SM 0
#endif
#ifndef BW_LOAD_HINT
#define BW_LOAD_HINT 0
#endif
#if BW_LOAD_HINT == 1
#define BW_LOAD_HINT_PTX ".L1::no_allocate"
#elif BW_LOAD_HINT == 2
#define BW_LOAD_HINT_PTX ".L2::256B"
#elif BW_LOAD_HINT == 3
#define BW_LOAD_HINT_PTX ".L1::no_allocate.L2::256B"
#endif
#ifndef BW_HEAD_ALIGN
#define BW_HEAD_ALIGN 256
#endif

static_assert(BW_BLOCK >= 32 && BW_BLOCK <= 1024 && BW_BLOCK % 32 == 0,
              "BW_BLOCK must be a multiple of 32 between 32 and 1024");
static_assert(BW_VECS_PER_THREAD >= 1 && BW_VECS_PER_THREAD <= 16,
              "BW_VECS_PER_THREAD must be between 1 and 16");
// The head is done by block 0's threads, one element each, with the tail.
static_assert(BW_HEAD_ALIGN == 16 || BW_HEAD_ALIGN == 32 || BW_HEAD_ALIGN == 64 ||
                  BW_HEAD_ALIGN == 128 || BW_HEAD_ALIGN == 256,
              "BW_HEAD_ALIGN must be a power of two from 16 to 256");
static_assert(BW_HEAD_ALIGN / 2 + 8 <= BW_BLOCK, "block 0 must cover head and tail");
static_assert(BW_STAGE_ELEMS >= 8 && BW_STAGE_ELEMS % 8 == 0 && BW_STAGE_ELEMS <= 8192,
              "BW_STAGE_ELEMS must be a multiple of 8 up to 8192");
static_assert(BW_STAGING >= 0 && BW_STAGING <= 2, "BW_STAGING must be 0, 1 or 2");
static_assert(BW_STAGE_BLOCK >= 32 && BW_STAGE_BLOCK <= 1024 && BW_STAGE_BLOCK % 32 == 0 &&
                  BW_HEAD_ALIGN / 2 + 8 <= BW_STAGE_BLOCK,
              "BW_STAGE_BLOCK must be a multiple of 32, at most 1024, covering head and tail");

// Every CUDA call on the host is checked. The function returns void, so a
// failure is reported on stderr (the grader shows it to the student).
#define CHECK_CUDA(call)                                                      \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            std::fprintf(stderr, "vector_sum: %s failed (%s:%d): %s\n", #call,\
                         __FILE__, __LINE__, cudaGetErrorString(err_));       \
            return;                                                           \
        }                                                                     \
    } while (0)

namespace {

constexpr int kElemsPerVec = 8;   // 16 bytes / 2 bytes per bf16
constexpr long long kTileVecs = (long long)BW_BLOCK * BW_VECS_PER_THREAD;

// Why 16 bytes: a load instruction costs the same issue slot whatever its
// width, and the memory system moves whole 32-byte sectors anyway. With
// 2-byte loads a warp requests 64 bytes per instruction; with 16-byte loads
// it requests 512 bytes, so far fewer instructions (and fewer outstanding
// requests to track) move the same data. 16 bytes is the widest load a
// thread can issue on sm_90, and it must be 16-byte aligned: hence the head.
__device__ __forceinline__ uint4 load_vec(const uint4* p)
{
#if BW_STREAMING
    return __ldcs(p);
#elif BW_LOAD_HINT > 0
    uint4 v;
    asm("ld.global" BW_LOAD_HINT_PTX ".v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
#else
    return *p;
#endif
}

__device__ __forceinline__ void store_vec(uint4* p, uint4 v)
{
#if BW_STREAMING
    __stcs(p, v);
#else
    *p = v;
#endif
}

// A bf16 is the upper half of a float, so widening is a shift: exact.
__device__ __forceinline__ float lo_bf16(unsigned int w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi_bf16(unsigned int w) { return __uint_as_float(w & 0xFFFF0000u); }

// Two packed bf16 of a and b -> two packed bf16 of a + b.
__device__ __forceinline__ unsigned int add2(unsigned int aw, unsigned int bw)
{
    const float lo = lo_bf16(aw) + lo_bf16(bw);
    const float hi = hi_bf16(aw) + hi_bf16(bw);
    // One instruction rounds both to bf16 (nearest even) and packs them.
    const __nv_bfloat162_raw r = __floats2bfloat162_rn(lo, hi);
    return (unsigned int)r.x | ((unsigned int)r.y << 16);
}

__device__ __forceinline__ uint4 add8(uint4 av, uint4 bv)
{
    uint4 r;
    r.x = add2(av.x, bv.x);
    r.y = add2(av.y, bv.y);
    r.z = add2(av.z, bv.z);
    r.w = add2(av.w, bv.w);
    return r;
}

// The arrays are cut in three parts, shown here for a pointer 6 bytes past
// a 16-byte boundary (o = element, | = 16-byte boundary):
//
//      |   o o o o o|o o o o o o o o|o o o o o o o o| ... |o o o o o o o o|o o o
//          \ head  / \------------ body: n_vec vectors of 8 -----------/ \tail/
//
// head: elements before the first aligned boundary: at least 16 bytes (a
//       16-byte load must start on a 16-byte boundary), by default 256 (see
//       vector_sum() below for why), so 0..127 elements, done one by one.
//       The contract says all arrays have the same address modulo 256 bytes,
//       so one head length aligns a, b and c alike.
// body: 16-byte vectors, the hot path.
// tail: the n_vec*8 body leaves 0..7 elements over at the end.
//
// Head and tail are at most 127 + 7 elements: the first threads of block 0 do
// them in the same launch (a second launch would cost more than the work).
//
// Body layout: tiles of BW_BLOCK * BW_VECS_PER_THREAD vectors; block b
// owns tile b (in grid-stride mode also tiles b + gridDim.x, ...).
// Thread t takes vectors t, t + BW_BLOCK, t + 2*BW_BLOCK, ... of the tile,
// so each load instruction of a warp covers 32 consecutive vectors (512
// contiguous bytes): coalesced.
__device__ __forceinline__ void head_and_tail(long long n, int head, long long n_vec,
                                              const nv_bfloat16* __restrict__ a,
                                              const nv_bfloat16* __restrict__ b,
                                              nv_bfloat16* __restrict__ c)
{
    // Scalar: thread j < head takes element j, the next threads take the
    // tail elements after the body. Block 0 calls this.
    const long long tail = n - head - n_vec * kElemsPerVec;
    const int j = threadIdx.x;
    if (j < head + tail) {
        const long long i = (j < head) ? j : head + n_vec * kElemsPerVec + (j - head);
        c[i] = __float2bfloat16_rn(__bfloat162float(a[i]) + __bfloat162float(b[i]));
    }
}

__global__ void __launch_bounds__(BW_BLOCK)
vector_sum_kernel(long long n, int head, long long n_vec,
                  const nv_bfloat16* __restrict__ a, const nv_bfloat16* __restrict__ b,
                  nv_bfloat16* __restrict__ c)
{
    // 64-bit indices: n can be 2^31 - 1, and any element index or byte
    // offset computed from a tile number (tile * elements per tile, vector
    // index * 8, index * 2 bytes) passes INT_MAX long before that. With
    // 32-bit ints such a product silently wraps to a negative offset.
    const uint4* __restrict__ av = reinterpret_cast<const uint4*>(a + head);
    const uint4* __restrict__ bv = reinterpret_cast<const uint4*>(b + head);
    uint4* __restrict__ cv = reinterpret_cast<uint4*>(c + head);
    const long long n_tiles = (n_vec + kTileVecs - 1) / kTileVecs;

    // One pass: gridDim.x == n_tiles and the loop body runs once.
    // Grid-stride (BW_BLOCKS_PER_SM > 0): each block walks several tiles.
    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        const long long v0 = tile * kTileVecs + threadIdx.x;

        if (v0 + (long long)(BW_VECS_PER_THREAD - 1) * BW_BLOCK < n_vec) {
            // Hot path: all of this thread's vectors exist. Issue the loads
            // first, then compute and store. The loads do not depend on each
            // other, so they are in flight together. Why that matters:
            // bandwidth = bytes in flight / latency (Little's law). A DRAM
            // access under load takes around a microsecond, so sustaining
            // ~3.3 TB/s needs ~3 MB in flight, ~25 KB per SM. One 16-byte
            // load per array and thread, over 2048 resident threads, is
            // 64 KB per SM: enough, and more per thread measured slower.
            uint4 ar[BW_VECS_PER_THREAD], br[BW_VECS_PER_THREAD];
#pragma unroll
            for (int k = 0; k < BW_VECS_PER_THREAD; ++k) {
                ar[k] = load_vec(av + v0 + k * BW_BLOCK);
                br[k] = load_vec(bv + v0 + k * BW_BLOCK);
            }
#pragma unroll
            for (int k = 0; k < BW_VECS_PER_THREAD; ++k)
                store_vec(cv + v0 + k * BW_BLOCK, add8(ar[k], br[k]));
        } else {
            // The last, partial tile: the same work, one checked vector at a time.
            for (int k = 0; k < BW_VECS_PER_THREAD; ++k) {
                const long long v = v0 + (long long)k * BW_BLOCK;
                if (v < n_vec)
                    store_vec(cv + v, add8(load_vec(av + v), load_vec(bv + v)));
            }
        }
    }

    if (blockIdx.x == 0)
        head_and_tail(n, head, n_vec, a, b, c);
}

#if BW_STAGING
// BW_STAGING = 1 or 2: the same work, with the copy engine (the "TMA")
// moving the data. One thread asks for the block's whole tile of a and b
// (two bulk copies, global -> shared memory, BW_STAGE_ELEMS elements each);
// every thread waits on a shared-memory barrier that counts the bytes as they
// arrive, then computes its vectors from shared memory. With 1 each thread
// stores its results; with 2 they are written back into shared memory and
// one thread sends the whole tile to memory with a third bulk copy.
//
// What it changes: the block's loads are two bulk copies issued by one
// thread instead of one 16-byte load per thread. Measured, not explained:
// on the H100 that is worth 0.35% (2) and 0.15% (1) over the register
// kernel, at this tile size only (CUB's own for this job on sm_90); on the
// H200 the register kernel is 1.5-3.6% faster. docs/BENCHMARKS.md has the
// figures; a profile of both kernels on both GPUs would be the next step.
// Bulk copies exist from sm_90 on; the host launches this kernel only where
// it was compiled for such a GPU (use_staged_kernel below).
constexpr int kStageVecs = BW_STAGE_ELEMS / kElemsPerVec;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

__global__ void __launch_bounds__(BW_STAGE_BLOCK)
vector_sum_staged_kernel(long long n, int head, long long n_vec,
                         const nv_bfloat16* __restrict__ a, const nv_bfloat16* __restrict__ b,
                         nv_bfloat16* __restrict__ c)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    __shared__ alignas(128) uint4 sa[kStageVecs];
    __shared__ alignas(128) uint4 sb[kStageVecs];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ block_barrier bar;

    const long long v_first = (long long)blockIdx.x * kStageVecs;
    const long long left = n_vec - v_first;
    const int count = left < kStageVecs ? (int)left : kStageVecs;
    if (count > 0) {
        if (threadIdx.x == 0) {
            init(&bar, blockDim.x);
            // The copy engine works outside the threads' view of shared
            // memory: make the initialized barrier visible to it.
            cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
        }
        __syncthreads();
        // The body starts on a 256-byte boundary and count is whole
        // vectors, so both copies meet the 16-byte alignment they need.
        const unsigned int bytes = (unsigned int)count * sizeof(uint4);
        block_barrier::arrival_token token;
        if (threadIdx.x == 0) {
            cuda::device::memcpy_async_tx(sa, reinterpret_cast<const uint4*>(a + head) + v_first,
                                          cuda::aligned_size_t<16>(bytes), bar);
            cuda::device::memcpy_async_tx(sb, reinterpret_cast<const uint4*>(b + head) + v_first,
                                          cuda::aligned_size_t<16>(bytes), bar);
            token = cuda::device::barrier_arrive_tx(bar, 1, 2 * bytes);
        } else {
            token = bar.arrive();
        }
        bar.wait(cuda::std::move(token));
        uint4* cv = reinterpret_cast<uint4*>(c + head) + v_first;
#if BW_STAGING == 2
        for (int v = threadIdx.x; v < count; v += BW_STAGE_BLOCK)
            sa[v] = add8(sa[v], sb[v]);
        // Each thread's shared-memory writes must be visible to the copy
        // engine before it reads them: fence, then wait for every thread.
        cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
        __syncthreads();
        if (threadIdx.x == 0) {
            cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared,
                                     cv, sa, bytes);
            cuda::ptx::cp_async_bulk_commit_group();
            // Shared memory is released when the block exits: wait until
            // the copy has read all of it (the writes to memory go on).
            cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
        }
#else
        for (int v = threadIdx.x; v < count; v += BW_STAGE_BLOCK)
            store_vec(cv + v, add8(sa[v], sb[v]));
#endif
    }
    if (blockIdx.x == 0)
        head_and_tail(n, head, n_vec, a, b, c);
#else
    __trap();   // never launched: see use_staged_kernel
#endif
}

// Bulk copies need sm_90 or newer. The staged kernel is launched only if the
// code loaded for this GPU was compiled for such an architecture; otherwise
// the register kernel runs. The PTX version is what __CUDA_ARCH__ was: code
// built for compute_80 and compiled by the driver for an H100 has binary
// version 90 but the __trap() body. Where it can run, the memory clock
// decides (BW_STAGED_BELOW_MHZ): the staged kernel won on the H100's HBM3,
// the register kernel on the H200's faster HBM3e. A process drives one GPU,
// so ask once.
bool use_staged_kernel()
{
    static int answer = -1;
    if (answer < 0) {
        cudaFuncAttributes attr;
        const cudaError_t err = cudaFuncGetAttributes(&attr, vector_sum_staged_kernel);
        int dev = 0, khz = 0;
        const bool bulk = err == cudaSuccess && attr.ptxVersion >= 90;
        const bool clock_known = cudaGetDevice(&dev) == cudaSuccess &&
                                 cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev) ==
                                     cudaSuccess && khz > 0;
        // An unknown clock keeps the kernel the H100 measured fastest.
        answer = bulk && (!clock_known || khz / 1000 < BW_STAGED_BELOW_MHZ);
        (void)cudaGetLastError();   // no image or attribute for this GPU: not an error here
    }
    return answer == 1;
}
#endif

// Grid-stride mode sizes the grid from the SM count. The query is not free,
// so it is done once and cached (the grader's worker uses one device).
#if BW_BLOCKS_PER_SM > 0
int sm_count()
{
    static int cached = 0;
    if (cached == 0) {
        int dev = 0, sms = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
            std::fprintf(stderr, "vector_sum: could not query the SM count: %s\n",
                         cudaGetErrorString(cudaGetLastError()));
            return 0;
        }
        cached = sms;
    }
    return cached;
}
#endif

} // namespace

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    if (n <= 0)
        return;

    // Elements before c's first BW_HEAD_ALIGN-byte boundary (the address is
    // even, so that is 0 .. BW_HEAD_ALIGN/2 - 1 elements). Every array has the
    // same address modulo 256, so the same count aligns them all.
    //
    // Why more than the 16 bytes a vector access needs: a warp's 16-byte
    // accesses cover 512 contiguous bytes. Starting on a 128-byte line, that
    // is exactly 4 lines (16 sectors of 32 bytes); starting merely 16-byte
    // aligned, it straddles 5 lines (17 sectors), and every warp pays the
    // extra sector and cache-line request. On the H100, 16-byte alignment
    // cost 4% at odd offsets, 128 bytes 1.7%, 256 bytes nothing measurable
    // (docs/BENCHMARKS.md); 256 is also the most the contract guarantees.
    const unsigned int mis = (unsigned int)(reinterpret_cast<uintptr_t>(c) & (BW_HEAD_ALIGN - 1u));
    int head = (int)(((BW_HEAD_ALIGN - mis) & (BW_HEAD_ALIGN - 1u)) / sizeof(nv_bfloat16));
    if (head > n)
        head = n;
    const long long n_vec = ((long long)n - head) / kElemsPerVec;

#if BW_STAGING
    if (use_staged_kernel()) {
        // One block per staged tile: at most 2^28 / 192 blocks.
        const long long tiles = (n_vec + kStageVecs - 1) / kStageVecs;
        vector_sum_staged_kernel<<<(unsigned int)(tiles > 0 ? tiles : 1), BW_STAGE_BLOCK>>>((long long)n, head, n_vec, a, b, c);
        CHECK_CUDA(cudaPeekAtLastError());
        return;
    }
#endif

    const long long n_tiles = (n_vec + kTileVecs - 1) / kTileVecs;

    // At least one block, which also does head and tail. In one-pass mode
    // n_tiles <= 2^28 / kTileVecs, far below the 2^31 - 1 limit of gridDim.x.
    long long blocks = n_tiles > 0 ? n_tiles : 1;
#if BW_BLOCKS_PER_SM > 0
    const int sms = sm_count();
    if (sms <= 0)
        return;
    if (blocks > (long long)sms * BW_BLOCKS_PER_SM)
        blocks = (long long)sms * BW_BLOCKS_PER_SM;
#endif

    vector_sum_kernel<<<(unsigned int)blocks, BW_BLOCK>>>((long long)n, head, n_vec, a, b, c);
    // A bad launch (configuration, missing kernel image) shows up here;
    // faults inside the kernel appear later, when the grader synchronizes.
    // Peek rather than Get: the error stays set for the caller to see too.
    CHECK_CUDA(cudaPeekAtLastError());
}
