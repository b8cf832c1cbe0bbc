// Corpus entry: a correct vector_sum that stages each tile of a and b in
// shared memory with Hopper's asynchronous bulk copies (cp.async.bulk via
// cuda::device::memcpy_async_tx, completing on a shared-memory barrier),
// then adds from shared memory and stores 16-byte vectors.
// What it tests: the benchmark's figure for a kernel whose loads are done by
// the copy engine, not by its threads, must agree with Nsight Compute's
// duration of the same call (run.py crosscheck). Needs sm_90.
#include "vector_sum.h"

#include <cstdio>
#include <cuda/barrier>
#include <cuda/std/utility>

namespace {

constexpr int kThreads = 256;
constexpr int kTileElems = 4096;              // 8 KiB of each input per block
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

__device__ __forceinline__ unsigned int add2(unsigned int a, unsigned int b)
{
    const float lo = __uint_as_float(a << 16) + __uint_as_float(b << 16);
    const float hi = __uint_as_float(a & 0xFFFF0000u) + __uint_as_float(b & 0xFFFF0000u);
    const __nv_bfloat162_raw r = __floats2bfloat162_rn(lo, hi);
    return (unsigned int)r.x | ((unsigned int)r.y << 16);
}

// Block b owns body elements [b * kTileElems, ...) ; block 0 also does the
// scalar head (before the 256-byte boundary) and tail (after the last vector).
__global__ void __launch_bounds__(kThreads)
bulk_tiles(long long n, int head, long long n_body, const nv_bfloat16* a,
           const nv_bfloat16* b, nv_bfloat16* c)
{
    __shared__ alignas(128) uint4 sa[kTileElems / 8];
    __shared__ alignas(128) uint4 sb[kTileElems / 8];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ block_barrier bar;

    const long long first = (long long)blockIdx.x * kTileElems;
    const long long left = n_body - first;
    const int count = left < kTileElems ? (int)left : kTileElems;   // a multiple of 8
    if (count > 0) {
        if (threadIdx.x == 0) {
            init(&bar, blockDim.x);
            // The copy engine (the "async proxy") must see the initialized barrier.
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        }
        __syncthreads();
        const unsigned int bytes = (unsigned int)count * sizeof(nv_bfloat16);
        block_barrier::arrival_token token;
        if (threadIdx.x == 0) {
            cuda::device::memcpy_async_tx(sa, reinterpret_cast<const uint4*>(a + head + first),
                                          cuda::aligned_size_t<16>(bytes), bar);
            cuda::device::memcpy_async_tx(sb, reinterpret_cast<const uint4*>(b + head + first),
                                          cuda::aligned_size_t<16>(bytes), bar);
            token = cuda::device::barrier_arrive_tx(bar, 1, 2 * bytes);
        } else {
            token = bar.arrive();
        }
        bar.wait(cuda::std::move(token));

        uint4* cv = reinterpret_cast<uint4*>(c + head + first);
        for (int v = threadIdx.x; v < count / 8; v += kThreads) {
            const uint4 x = sa[v], y = sb[v];
            cv[v] = make_uint4(add2(x.x, y.x), add2(x.y, y.y), add2(x.z, y.z), add2(x.w, y.w));
        }
    }
    if (blockIdx.x == 0) {
        const long long tail = n - head - n_body;
        for (long long j = threadIdx.x; j < head + tail; j += kThreads) {
            const long long i = j < head ? j : head + n_body + (j - head);
            c[i] = __float2bfloat16_rn(__bfloat162float(a[i]) + __bfloat162float(b[i]));
        }
    }
}

} // namespace

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    if (n <= 0)
        return;
    // a, b and c share their address modulo 256 bytes (the contract).
    const unsigned int mis = (unsigned int)(reinterpret_cast<uintptr_t>(c) & 255u);
    long long head = (long long)((256u - mis) & 255u) / 2;
    if (head > n)
        head = n;
    const long long n_body = (n - head) / 8 * 8;
    const long long blocks = n_body > 0 ? (n_body + kTileElems - 1) / kTileElems : 1;
    bulk_tiles<<<(unsigned int)blocks, kThreads>>>(n, (int)head, n_body, a, b, c);
    const cudaError_t err = cudaPeekAtLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "vector_sum: launch failed: %s\n", cudaGetErrorString(err));
}
