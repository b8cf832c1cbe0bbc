// Reference solution: saxpy, y[i] = a * x[i] + y[i] in fp32, in place.
//
// saxpy does almost no arithmetic: per element it reads 8 bytes and writes 4.
// Its speed is set by DRAM bandwidth alone, so the whole job is to keep the
// memory system busy (the same plan as solutions/haxpy, with fp32 data):
//
//   1. Move 16 bytes (4 floats) per load and store instruction.
//   2. Have several of those loads in flight per thread before using any.
//   3. Keep every warp's accesses contiguous (coalesced).
//   4. Do the few leftover elements (head and tail) with plain scalar code.
//   5. On sm_90, let the copy engine move whole tiles (BW_STAGING below):
//      two bulk copies per block instead of one load per thread.
//
// Arithmetic: each element is one fused multiply-add, fmaf(a, x, y), rounded
// once to float. That is exactly what the CPU reference does (fmaf is
// correctly rounded there too), so the result matches it bit for bit.
// Subnormals are kept because we do not build with fast-math (which would
// flush them), and fmaf is never split into a multiply and an add.
//
// Compile-time knobs (try variants with -D, e.g. -DBW_VECS_PER_THREAD=2).
// The defaults are haxpy's (docs/BENCHMARKS.md), with tiles of the same size
// in bytes. Measured for saxpy on the H200 only (no H100 was available;
// tests/gpu/new_exercises_probe.sh, docs/BENCHMARKS.md): the register kernel
// the clock rule picks there, 4,399-4,409 GB/s at 2^28 - 1, offsets 0, 1, 7
// with 256-byte bodies (CUB 4,358-4,408 in the same process; with 4 KB
// bodies, in the kit, 4,425-4,429 against CUB's 4,359-4,411); the staged
// kernel forced there 4,332-4,342 (768-element tiles) and 4,368-4,371
// (1536); at 2^26 + 5, 256 or 512 threads 0.4-0.6% and 2 vectors per
// thread 0.9% slower than the defaults. The staged branch, for the H100, is
// haxpy's rule, unmeasured for saxpy:
//   BW_STAGING          how a block's tile reaches the SM                [2]
//                       0: each thread loads its vectors into registers;
//                       1: the copy engine fetches the tile of both inputs
//                          into shared memory (bulk copies);
//                       2: as 1, and the results go back to memory as one
//                          bulk copy too (see saxpy_staged_kernel).
//                       Bulk copies need sm_90: on older GPUs 1 and 2 run
//                       the register kernel.
//   BW_STAGED_BELOW_MHZ where BW_STAGING is 1 or 2, the staged kernel runs
//                       only on GPUs with bulk copies whose memory clock
//                       (cudaDevAttrMemoryClockRate) is below this; faster
//                       memory runs the register kernel               [3000]
//                       (haxpy: staged ahead on the H100's HBM3 at 2,619
//                       MHz, register ahead on the H200's HBM3e at 3,201).
//                       0: the register kernel everywhere; 100000: staged
//                       wherever it can.
//   BW_STAGE_ELEMS      with 1 or 2: elements per block's tile, a multiple
//                       of 4 [768]: 3 KB per array, haxpy's 1536 bf16 in
//                       bytes, and the tile CUB's DeviceTransform picks for
//                       two 4-byte inputs on sm_90 (48 KB in flight per SM)
//   BW_STAGE_BLOCK      with 1 or 2: threads per block                   [256]
//   BW_BLOCK            register kernel: threads per block (multiple of 32)
//                                                                       [1024]
// Register kernel only (BW_STAGING=0, or a GPU without bulk copies):
//   BW_VECS_PER_THREAD  16-byte vectors per thread per array, i.e. loads
//                       in flight per thread and array                    [1]
//                       (haxpy: 2 measured 1% slower, 4 2%; 2048 resident
//                       threads already keep enough in flight)
//   BW_STREAMING        1: streaming cache hints (ld/st .cs, "evict first");
//                       0: ordinary loads and stores                      [0]
//                       (haxpy: the hints cost 2.5% on the H100, 9% on the H200)
//   BW_LOAD_HINT        loads only: 1 L1::no_allocate, 2 L2::256B prefetch,
//                       3 both, 0 none [0] (haxpy: 1 and 3 cost 2-3%)
//   BW_BLOCKS_PER_SM    0: one pass, one block per tile of the array;
//                       k > 0: grid-stride loop over SMs * k blocks       [0]
// Both kernels:
//   BW_HEAD_ALIGN       bytes y's body is aligned to, a power of two from
//                       16 (the least a 16-byte access needs) to 16384:
//                       128 (one cache line) keeps every warp's 512-byte
//                       access on whole lines; 256 is the contract's shared
//                       alignment (haxpy: fastest on the H100); 4096 puts
//                       the register kernel's 16 KB block tiles 4 KB into
//                       each 16 KB of a cudaMalloc block in the grader's
//                       arrays. On the H200 at 2^28 - 1 that was 0.7287-0.7300
//                       ms a call at offsets 0, 1 and 7, against 0.7325-0.7367
//                       with 256 and 16384 (CUB 0.7312-0.7316 at offset 0);
//                       ncu counts the same DRAM and L2 sectors for both,
//                       only memory's throughput differs. Why that place
//                       suits the H200's memory was not found
//                       (docs/BENCHMARKS.md)                          [4096]
#include "saxpy.h"

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
#define BW_STAGE_ELEMS 768
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
#define BW_HEAD_ALIGN 4096
#endif

static_assert(BW_BLOCK >= 32 && BW_BLOCK <= 1024 && BW_BLOCK % 32 == 0,
              "BW_BLOCK must be a multiple of 32 between 32 and 1024");
static_assert(BW_VECS_PER_THREAD >= 1 && BW_VECS_PER_THREAD <= 16,
              "BW_VECS_PER_THREAD must be between 1 and 16");
// The head is done by block 0's threads, a few elements each, with the tail.
static_assert(BW_HEAD_ALIGN >= 16 && BW_HEAD_ALIGN <= 16384 && (BW_HEAD_ALIGN & (BW_HEAD_ALIGN - 1)) == 0,
              "BW_HEAD_ALIGN must be a power of two from 16 to 16384");
static_assert(BW_STAGE_ELEMS >= 4 && BW_STAGE_ELEMS % 4 == 0 && BW_STAGE_ELEMS <= 4096,
              "BW_STAGE_ELEMS must be a multiple of 4 up to 4096");
static_assert(BW_STAGING >= 0 && BW_STAGING <= 2, "BW_STAGING must be 0, 1 or 2");
static_assert(BW_STAGE_BLOCK >= 32 && BW_STAGE_BLOCK <= 1024 && BW_STAGE_BLOCK % 32 == 0,
              "BW_STAGE_BLOCK must be a multiple of 32, at most 1024");

// Every CUDA call on the host is checked. The function returns void, so a
// failure is reported on stderr (the grader shows it to the student).
#define CHECK_CUDA(call)                                                      \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            std::fprintf(stderr, "saxpy: %s failed (%s:%d): %s\n", #call,    \
                         __FILE__, __LINE__, cudaGetErrorString(err_));       \
            return;                                                           \
        }                                                                     \
    } while (0)

namespace {

constexpr int kElemsPerVec = 4;   // 16 bytes / 4 bytes per float
constexpr long long kTileVecs = (long long)BW_BLOCK * BW_VECS_PER_THREAD;

// Why 16 bytes: a load instruction costs the same issue slot whatever its
// width, and the memory system moves whole 32-byte sectors anyway. With
// 4-byte loads a warp requests 128 bytes per instruction; with 16-byte loads
// it requests 512 bytes, so far fewer instructions (and fewer outstanding
// requests to track) move the same data. 16 bytes is the widest load a
// thread can issue on sm_90, and it must be 16-byte aligned: hence the head.
__device__ __forceinline__ float4 load_vec(const float4* p)
{
#if BW_STREAMING
    return __ldcs(p);
#elif BW_LOAD_HINT > 0
    float4 v;
    asm("ld.global" BW_LOAD_HINT_PTX ".v4.f32 {%0, %1, %2, %3}, [%4];"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
#else
    return *p;
#endif
}

__device__ __forceinline__ void store_vec(float4* p, float4 v)
{
#if BW_STREAMING
    __stcs(p, v);
#else
    *p = v;
#endif
}

// Four floats of x and y -> four floats of a*x + y, one rounding each.
__device__ __forceinline__ float4 axpy4(float a, float4 xv, float4 yv)
{
    float4 r;
    r.x = fmaf(a, xv.x, yv.x);
    r.y = fmaf(a, xv.y, yv.y);
    r.z = fmaf(a, xv.z, yv.z);
    r.w = fmaf(a, xv.w, yv.w);
    return r;
}

// The array is cut in three parts, shown here for a pointer 8 bytes past a
// 16-byte boundary (o = element, | = 16-byte boundary):
//
//      |    o o|o o o o|o o o o| ... |o o o o|o o o
//       \head / \-- body: n_vec vectors of 4 -/ \tail/
//
// head: elements before the first aligned boundary: at least 16 bytes (a
//       16-byte load must start on a 16-byte boundary), by default 4096
//       (see BW_HEAD_ALIGN and saxpy() below for why), so 0..1023 elements,
//       done one by one. The contract says x and y have the same address
//       modulo 256 bytes, so the head that aligns y leaves x on at least a
//       256-byte boundary.
// body: 16-byte vectors, the hot path.
// tail: the n_vec*4 body leaves 0..3 elements over at the end.
//
// Head and tail are at most 1023 + 3 elements: block 0's threads do them in
// the same launch (a second launch would cost more than the work).
//
// Body layout: tiles of BW_BLOCK * BW_VECS_PER_THREAD vectors; block b
// owns tile b (in grid-stride mode also tiles b + gridDim.x, ...).
// Thread t takes vectors t, t + BW_BLOCK, t + 2*BW_BLOCK, ... of the tile,
// so each load instruction of a warp covers 32 consecutive vectors (512
// contiguous bytes): coalesced.
__device__ __forceinline__ void head_and_tail(long long n, int head, long long n_vec, float a,
                                              const float* __restrict__ x,
                                              float* __restrict__ y)
{
    // Scalar: j = 0 .. head - 1 are the head's elements, the next j the
    // tail's after the body; block 0's threads take every blockDim.x-th j.
    // Block 0 calls this.
    const long long tail = n - head - n_vec * kElemsPerVec;
    for (int j = threadIdx.x; j < head + tail; j += blockDim.x) {
        const long long i = (j < head) ? j : head + n_vec * kElemsPerVec + (j - head);
        y[i] = fmaf(a, x[i], y[i]);
    }
}

__global__ void __launch_bounds__(BW_BLOCK)
saxpy_kernel(long long n, int head, long long n_vec, float a,
             const float* __restrict__ x, float* __restrict__ y)
{
    // 64-bit indices: n can be 2^31 - 1, and any element index or byte
    // offset computed from a tile number (tile * elements per tile, vector
    // index * 4, index * 4 bytes) passes INT_MAX long before that. With
    // 32-bit ints such a product silently wraps to a negative offset.
    const float4* __restrict__ xv = reinterpret_cast<const float4*>(x + head);
    float4* __restrict__ yv = reinterpret_cast<float4*>(y + head);
    const long long n_tiles = (n_vec + kTileVecs - 1) / kTileVecs;

    // One pass: gridDim.x == n_tiles and the loop body runs once.
    // Grid-stride (BW_BLOCKS_PER_SM > 0): each block walks several tiles.
    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        const long long v0 = tile * kTileVecs + threadIdx.x;

        if (v0 + (long long)(BW_VECS_PER_THREAD - 1) * BW_BLOCK < n_vec) {
            // Hot path: all of this thread's vectors exist. Issue the loads
            // first, then compute and store: the loads do not depend on each
            // other, so they are in flight together (Little's law:
            // bandwidth = bytes in flight / latency; see solutions/haxpy).
            float4 xr[BW_VECS_PER_THREAD], yr[BW_VECS_PER_THREAD];
#pragma unroll
            for (int k = 0; k < BW_VECS_PER_THREAD; ++k) {
                xr[k] = load_vec(xv + v0 + k * BW_BLOCK);
                yr[k] = load_vec(yv + v0 + k * BW_BLOCK);
            }
#pragma unroll
            for (int k = 0; k < BW_VECS_PER_THREAD; ++k)
                store_vec(yv + v0 + k * BW_BLOCK, axpy4(a, xr[k], yr[k]));
        } else {
            // The last, partial tile: the same work, one checked vector at a time.
            for (int k = 0; k < BW_VECS_PER_THREAD; ++k) {
                const long long v = v0 + (long long)k * BW_BLOCK;
                if (v < n_vec)
                    store_vec(yv + v, axpy4(a, load_vec(xv + v), load_vec(yv + v)));
            }
        }
    }

    if (blockIdx.x == 0)
        head_and_tail(n, head, n_vec, a, x, y);
}

#if BW_STAGING
// BW_STAGING = 1 or 2: the same work, with the copy engine (the "TMA")
// moving the data. One thread asks for the block's whole tile of x and y
// (two bulk copies, global -> shared memory, BW_STAGE_ELEMS elements each);
// every thread waits on a shared-memory barrier that counts the bytes as they
// arrive, then computes its vectors from shared memory. With 1 each thread
// stores its results; with 2 they are written back into shared memory and
// one thread sends the whole tile to memory with a third bulk copy.
// Bulk copies exist from sm_90 on; the host launches this kernel only where
// it was compiled for such a GPU (use_staged_kernel below).
constexpr int kStageVecs = BW_STAGE_ELEMS / kElemsPerVec;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

__global__ void __launch_bounds__(BW_STAGE_BLOCK)
saxpy_staged_kernel(long long n, int head, long long n_vec, float a,
                    const float* __restrict__ x, float* __restrict__ y)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    __shared__ alignas(128) float4 sx[kStageVecs];
    __shared__ alignas(128) float4 sy[kStageVecs];
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
        const unsigned int bytes = (unsigned int)count * sizeof(float4);
        const float4* xv = reinterpret_cast<const float4*>(x + head) + v_first;
        float4* yv = reinterpret_cast<float4*>(y + head) + v_first;
        block_barrier::arrival_token token;
        if (threadIdx.x == 0) {
            cuda::device::memcpy_async_tx(sx, xv, cuda::aligned_size_t<16>(bytes), bar);
            cuda::device::memcpy_async_tx(sy, yv, cuda::aligned_size_t<16>(bytes), bar);
            token = cuda::device::barrier_arrive_tx(bar, 1, 2 * bytes);
        } else {
            token = bar.arrive();
        }
        bar.wait(cuda::std::move(token));
#if BW_STAGING == 2
        for (int v = threadIdx.x; v < count; v += BW_STAGE_BLOCK)
            sy[v] = axpy4(a, sx[v], sy[v]);
        // Each thread's shared-memory writes must be visible to the copy
        // engine before it reads them: fence, then wait for every thread.
        cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
        __syncthreads();
        if (threadIdx.x == 0) {
            cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared,
                                     yv, sy, bytes);
            cuda::ptx::cp_async_bulk_commit_group();
            // Shared memory is released when the block exits: wait until
            // the copy has read all of it (the writes to memory go on).
            cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
        }
#else
        for (int v = threadIdx.x; v < count; v += BW_STAGE_BLOCK)
            store_vec(yv + v, axpy4(a, sx[v], sy[v]));
#endif
    }
    if (blockIdx.x == 0)
        head_and_tail(n, head, n_vec, a, x, y);
#else
    __trap();   // never launched: see use_staged_kernel
#endif
}

// Bulk copies need sm_90 or newer. The staged kernel is launched only if the
// code loaded for this GPU was compiled for such an architecture; otherwise
// the register kernel runs. The PTX version is what __CUDA_ARCH__ was: code
// built for compute_80 and compiled by the driver for an H100 has binary
// version 90 but the __trap() body. Where it can run, the memory clock
// decides (BW_STAGED_BELOW_MHZ), as for haxpy. A process drives one GPU,
// so ask once.
bool use_staged_kernel()
{
    static int answer = -1;
    if (answer < 0) {
        cudaFuncAttributes attr;
        const cudaError_t err = cudaFuncGetAttributes(&attr, saxpy_staged_kernel);
        int dev = 0, khz = 0;
        const bool bulk = err == cudaSuccess && attr.ptxVersion >= 90;
        const bool clock_known = cudaGetDevice(&dev) == cudaSuccess &&
                                 cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev) ==
                                     cudaSuccess && khz > 0;
        // An unknown clock keeps the kernel haxpy measured fastest on the H100.
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
            std::fprintf(stderr, "saxpy: could not query the SM count: %s\n",
                         cudaGetErrorString(cudaGetLastError()));
            return 0;
        }
        cached = sms;
    }
    return cached;
}
#endif

} // namespace

void saxpy(int n, float a, const float* x, float* y)
{
    if (n <= 0)
        return;

    // Elements before y's first BW_HEAD_ALIGN-byte boundary (the address is
    // a multiple of 4, so that is 0 .. BW_HEAD_ALIGN/4 - 1 elements). x has
    // the same address modulo 256, so the same count puts it on at least a
    // 256-byte boundary.
    //
    // Why more than the 16 bytes a vector access needs: a warp's 16-byte
    // accesses cover 512 contiguous bytes. Starting on a 128-byte line, that
    // is exactly 4 lines (16 sectors of 32 bytes); starting merely 16-byte
    // aligned, it straddles 5 lines (17 sectors), and every warp pays the
    // extra sector and cache-line request (haxpy on the H100: 4% at odd
    // offsets with 16, 1.7% with 128, nothing measurable with 256).
    const unsigned int mis = (unsigned int)(reinterpret_cast<uintptr_t>(y) & (BW_HEAD_ALIGN - 1u));
    int head = (int)(((BW_HEAD_ALIGN - mis) & (BW_HEAD_ALIGN - 1u)) / sizeof(float));
    if (head > n)
        head = n;
    const long long n_vec = ((long long)n - head) / kElemsPerVec;

#if BW_STAGING
    if (use_staged_kernel()) {
        // One block per staged tile: at most 2^29 / 192 blocks.
        const long long tiles = (n_vec + kStageVecs - 1) / kStageVecs;
        saxpy_staged_kernel<<<(unsigned int)(tiles > 0 ? tiles : 1), BW_STAGE_BLOCK>>>((long long)n, head, n_vec, a, x, y);
        CHECK_CUDA(cudaPeekAtLastError());
        return;
    }
#endif

    const long long n_tiles = (n_vec + kTileVecs - 1) / kTileVecs;

    // At least one block, which also does head and tail. In one-pass mode
    // n_tiles <= 2^29 / kTileVecs, far below the 2^31 - 1 limit of gridDim.x.
    long long blocks = n_tiles > 0 ? n_tiles : 1;
#if BW_BLOCKS_PER_SM > 0
    const int sms = sm_count();
    if (sms <= 0)
        return;
    if (blocks > (long long)sms * BW_BLOCKS_PER_SM)
        blocks = (long long)sms * BW_BLOCKS_PER_SM;
#endif

    saxpy_kernel<<<(unsigned int)blocks, BW_BLOCK>>>((long long)n, head, n_vec, a, x, y);
    // A bad launch (configuration, missing kernel image) shows up here;
    // faults inside the kernel appear later, when the grader synchronizes.
    // Peek rather than Get: the error stays set for the caller to see too.
    CHECK_CUDA(cudaPeekAtLastError());
}
