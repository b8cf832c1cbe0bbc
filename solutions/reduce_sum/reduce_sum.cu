// Reference solution: reduce_sum, *sum = x[0] + ... + x[n-1], bf16 in, one
// float out.
//
// A reduction reads 2 bytes per element and writes 4 bytes in all: its speed
// is set by DRAM read bandwidth alone, so the plan is haxpy's (16-byte loads,
// several in flight per thread, coalesced warps, scalar head and tail), and
// the only new part is combining the partial sums of many threads:
//
//   1. Each thread sums its share of the array in registers, in float.
//   2. Each block adds up its threads' sums: warp shuffles, then one value
//      per warp through shared memory.
//   3. Each block writes its sum to a __device__ array of partials and takes
//      a ticket (an atomic counter). The block that draws the last ticket
//      knows all partials are written: it adds them up in a fixed order,
//      writes *sum and sets the counter back to 0 for the next call.
//   All in one launch: no second kernel, no allocation, no host sync.
//
// Accuracy. The sum is taken in float (24-bit significand); every bf16 is
// exactly a float, so the only errors are the roundings of the additions.
// In any order of summation the error is at most about d * 2^-24 * sum|x|,
// where d is the depth: the most additions any one input passes through.
// Here d is small: 3 inside a 16-byte vector (a pairwise tree), 2 for the
// tree over a step's BW_VECS_PER_THREAD vectors, one per step of the
// thread's grid-stride loop, 10 in the block's shuffle tree, and in the last
// block 2 + 10 more for the partials. For n = 2^31 - 1 on an H100 (132 SMs x
// 2048 threads, 4 vectors a step) a thread takes 249 steps, so d is about
// 276: an error below 2^-15.9 * sum|x|, far inside the grader's bound (one
// float running sum over all of x would have d = n). With fewer SMs d grows:
// 16 SMs give about 2^-13. A bf16 running sum (8-bit significand) would
// drop every addend below about 2^-8 of the sum so far: useless.
// The result is deterministic: a given n and GPU always add in the same
// order (the BW_ATOMICS variant is not).
//
// Compile-time knobs (try variants with -D). The defaults keep ~128 KB of
// loads in flight per SM. Measured on the H200 (tests/gpu/new_exercises_probe.sh,
// 2^28 - 1, offsets 0, 1, 7): the defaults 4,327-4,339 GB/s, CUB 3,541-3,906;
// 2 or 8 vectors per thread, or 256 threads x 8 blocks per SM, within 0.5%
// of them (4,316-4,343); BW_ATOMICS=1 0.7% faster (4,356-4,364) but not
// deterministic, so not the default:
//   BW_BLOCK            threads per block (multiple of 32, >= 136)      [512]
//   BW_BLOCKS_PER_SM    blocks per SM of the persistent grid: the grid is
//                       SMs * this (fewer for small n), each block walks
//                       the array in grid-stride steps                  [4]
//                       (512 x 4 = 2048 threads, the most an SM holds)
//   BW_VECS_PER_THREAD  16-byte loads in flight per thread per step     [4]
//                       (2048 threads x 4 x 16 B = 128 KB per SM; Little's
//                       law asks ~32-48 KB at H100/H200 latency, but a
//                       thread that waits on its loads has none in flight
//                       until the next step's are issued)
//   BW_ATOMICS          0: last-block-done partials, deterministic        [0]
//                       1: cudaMemsetAsync(sum, 0) and one atomicAdd per
//                          block (two operations, order of adds varies)
//   BW_MAX_BLOCKS       size of the partials array, a grid cap        [4096]
//   BW_HEAD_ALIGN       bytes the body is aligned to (see haxpy)        [256]
#include "reduce_sum.h"

#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

#ifndef BW_BLOCK
#define BW_BLOCK 512
#endif
#ifndef BW_BLOCKS_PER_SM
#define BW_BLOCKS_PER_SM 4
#endif
#ifndef BW_VECS_PER_THREAD
#define BW_VECS_PER_THREAD 4
#endif
#ifndef BW_ATOMICS
#define BW_ATOMICS 0
#endif
#ifndef BW_MAX_BLOCKS
#define BW_MAX_BLOCKS 4096
#endif
#ifndef BW_HEAD_ALIGN
#define BW_HEAD_ALIGN 256
#endif

static_assert(BW_BLOCK >= 32 && BW_BLOCK <= 1024 && BW_BLOCK % 32 == 0,
              "BW_BLOCK must be a multiple of 32 between 32 and 1024");
static_assert(BW_BLOCKS_PER_SM >= 1 && BW_BLOCKS_PER_SM <= 32,
              "BW_BLOCKS_PER_SM must be between 1 and 32");
static_assert(BW_VECS_PER_THREAD >= 1 && BW_VECS_PER_THREAD <= 16,
              "BW_VECS_PER_THREAD must be between 1 and 16");
static_assert(BW_HEAD_ALIGN == 16 || BW_HEAD_ALIGN == 32 || BW_HEAD_ALIGN == 64 ||
                  BW_HEAD_ALIGN == 128 || BW_HEAD_ALIGN == 256,
              "BW_HEAD_ALIGN must be a power of two from 16 to 256");
// The head is done by block 0's threads, one element each, with the tail.
static_assert(BW_HEAD_ALIGN / 2 + 8 <= BW_BLOCK, "block 0 must cover head and tail");
static_assert(BW_MAX_BLOCKS >= 1 && BW_MAX_BLOCKS <= 65536, "BW_MAX_BLOCKS out of range");
static_assert(BW_ATOMICS == 0 || BW_ATOMICS == 1, "BW_ATOMICS must be 0 or 1");

#define CHECK_CUDA(call)                                                      \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            std::fprintf(stderr, "reduce_sum: %s failed (%s:%d): %s\n", #call,\
                         __FILE__, __LINE__, cudaGetErrorString(err_));       \
            return;                                                           \
        }                                                                     \
    } while (0)

namespace {

constexpr int kElemsPerVec = 8;   // 16 bytes / 2 bytes per bf16
constexpr int kWarps = BW_BLOCK / 32;

#if !BW_ATOMICS
// Scratch that lives as long as the program: one partial sum per block and
// the ticket counter. The counter is 0 between calls: the last block of each
// call puts it back. (Two calls running at once on two streams would share
// them; the contract has one call at a time.)
__device__ float g_partials[BW_MAX_BLOCKS];
__device__ unsigned int g_ticket = 0;
#endif

// A bf16 is the upper half of a float, so widening is a shift: exact.
__device__ __forceinline__ float lo_bf16(unsigned int w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi_bf16(unsigned int w) { return __uint_as_float(w & 0xFFFF0000u); }

// The 8 bf16 of a 16-byte vector, added as a tree (depth 3, see the top).
__device__ __forceinline__ float sum8(uint4 v)
{
    const float a = lo_bf16(v.x) + hi_bf16(v.x);
    const float b = lo_bf16(v.y) + hi_bf16(v.y);
    const float c = lo_bf16(v.z) + hi_bf16(v.z);
    const float d = lo_bf16(v.w) + hi_bf16(v.w);
    return (a + b) + (c + d);
}

// The block's total, valid in thread 0. Shuffles add within each warp (a
// butterfly: fixed order), then warp 0 adds the warps' sums. Every thread of
// the block must call it; it may be called twice (the barrier at its end
// comes after warp 0 has read the shared array).
__device__ __forceinline__ float block_sum(float v)
{
    __shared__ float warp_sums[kWarps];
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        v += __shfl_xor_sync(0xFFFFFFFFu, v, d);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < kWarps ? warp_sums[lane] : 0.0f;
#pragma unroll
        for (int d = 16; d > 0; d >>= 1)
            v += __shfl_xor_sync(0xFFFFFFFFu, v, d);
    }
    __syncthreads();
    return v;
}

// The array is cut in three parts as in haxpy: a scalar head up to the first
// BW_HEAD_ALIGN-byte boundary (0..127 elements), a body of n_vec 16-byte
// vectors, a scalar tail of 0..7 elements. Block 0's first threads add head
// and tail to their own sums.
//
// Body: a persistent grid walks the vectors in steps of gridDim.x *
// BW_BLOCK * BW_VECS_PER_THREAD. In a step, block b's thread t loads
// vectors base + t + k * BW_BLOCK (k < BW_VECS_PER_THREAD): each load
// instruction of a warp covers 512 contiguous bytes (coalesced), and a
// thread's loads are independent, so all are in flight together.
__global__ void __launch_bounds__(BW_BLOCK)
reduce_sum_kernel(long long n, int head, long long n_vec,
                  const nv_bfloat16* __restrict__ x, float* __restrict__ sum)
{
    // 64-bit indices: n can be 2^31 - 1, whose byte offsets pass 2^32.
    const uint4* __restrict__ xv = reinterpret_cast<const uint4*>(x + head);
    constexpr long long kStepPerBlock = (long long)BW_BLOCK * BW_VECS_PER_THREAD;
    const long long step = (long long)gridDim.x * kStepPerBlock;

    float acc = 0.0f;
    for (long long v0 = blockIdx.x * kStepPerBlock + threadIdx.x; v0 < n_vec; v0 += step) {
        if (v0 + (long long)(BW_VECS_PER_THREAD - 1) * BW_BLOCK < n_vec) {
            uint4 r[BW_VECS_PER_THREAD];
#pragma unroll
            for (int k = 0; k < BW_VECS_PER_THREAD; ++k)
                r[k] = xv[v0 + k * BW_BLOCK];
            // Add the step's vectors as a tree too, then into the running sum.
            float s[BW_VECS_PER_THREAD];
#pragma unroll
            for (int k = 0; k < BW_VECS_PER_THREAD; ++k)
                s[k] = sum8(r[k]);
#pragma unroll
            for (int w = 1; w < BW_VECS_PER_THREAD; w *= 2)
#pragma unroll
                for (int k = 0; k + w < BW_VECS_PER_THREAD; k += 2 * w)
                    s[k] += s[k + w];
            acc += s[0];
        } else {
            // The last, partial step: one checked vector at a time.
            for (int k = 0; k < BW_VECS_PER_THREAD; ++k) {
                const long long v = v0 + (long long)k * BW_BLOCK;
                if (v < n_vec)
                    acc += sum8(xv[v]);
            }
        }
    }
    if (blockIdx.x == 0) {
        const long long tail = n - head - n_vec * kElemsPerVec;
        const int j = threadIdx.x;
        if (j < head + tail) {
            const long long i = (j < head) ? j : head + n_vec * kElemsPerVec + (j - head);
            acc += __bfloat162float(x[i]);
        }
    }

    const float block_total = block_sum(acc);

#if BW_ATOMICS
    // The host zeroed *sum before the launch.
    if (threadIdx.x == 0)
        atomicAdd(sum, block_total);
#else
    __shared__ bool is_last;
    if (threadIdx.x == 0) {
        g_partials[blockIdx.x] = block_total;
        // The partial must reach memory before the ticket does: a block that
        // sees our ticket must also see our partial.
        __threadfence();
        is_last = atomicAdd(&g_ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (is_last) {
        // Every other block has written its partial and fenced. Read them
        // from L2 (__ldcg), where they are, not from a stale L1 line.
        __threadfence();
        float p = 0.0f;
        for (unsigned int b = threadIdx.x; b < gridDim.x; b += BW_BLOCK)
            p += __ldcg(&g_partials[b]);
        p = block_sum(p);
        if (threadIdx.x == 0) {
            *sum = p;
            g_ticket = 0;   // the next call starts from 0 (kernel boundaries order it)
        }
    }
#endif
}

// The grid is sized from the SM count. The query is not free, so it is done
// once and cached (the grader's worker uses one device).
int sm_count()
{
    static int cached = 0;
    if (cached == 0) {
        int dev = 0, sms = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
            std::fprintf(stderr, "reduce_sum: could not query the SM count: %s\n",
                         cudaGetErrorString(cudaGetLastError()));
            return 0;
        }
        cached = sms;
    }
    return cached;
}

} // namespace

void reduce_sum(int n, const nv_bfloat16* x, float* sum)
{
    if (n <= 0)
        return;

    // Elements before x's first BW_HEAD_ALIGN-byte boundary (x is only
    // 2-byte aligned: 0 .. BW_HEAD_ALIGN/2 - 1 elements).
    const unsigned int mis = (unsigned int)(reinterpret_cast<uintptr_t>(x) & (BW_HEAD_ALIGN - 1u));
    int head = (int)(((BW_HEAD_ALIGN - mis) & (BW_HEAD_ALIGN - 1u)) / sizeof(nv_bfloat16));
    if (head > n)
        head = n;
    const long long n_vec = ((long long)n - head) / kElemsPerVec;

    // A persistent grid: enough blocks to fill every SM, fewer when the
    // array has less than one step's worth for each, and never more than
    // there are partials. At least one block: block 0 does head and tail,
    // and someone must write *sum even when n is tiny.
    const int sms = sm_count();
    if (sms <= 0)
        return;
    constexpr long long kStepPerBlock = (long long)BW_BLOCK * BW_VECS_PER_THREAD;
    long long blocks = (long long)sms * BW_BLOCKS_PER_SM;
    const long long needed = (n_vec + kStepPerBlock - 1) / kStepPerBlock;
    if (blocks > needed)
        blocks = needed;
    if (blocks > BW_MAX_BLOCKS)
        blocks = BW_MAX_BLOCKS;
    if (blocks < 1)
        blocks = 1;

#if BW_ATOMICS
    // *sum holds garbage on entry: zero it first, in stream order.
    CHECK_CUDA(cudaMemsetAsync(sum, 0, sizeof(float), cudaStream_t{0}));
#endif
    reduce_sum_kernel<<<(unsigned int)blocks, BW_BLOCK>>>((long long)n, head, n_vec, x, sum);
    // A bad launch (configuration, missing kernel image) shows up here;
    // faults inside the kernel appear later, when the grader synchronizes.
    CHECK_CUDA(cudaPeekAtLastError());
}
