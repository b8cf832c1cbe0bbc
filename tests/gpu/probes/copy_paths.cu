// Which way of copying device memory reaches cudaMemcpy's bandwidth: the
// kit's copy kernel, a grid-stride copy, per-block contiguous chunks, bulk
// copies through shared memory, and load/store cache hints, each timed
// against cudaMemcpy in the same process. Also asks whether cudaMemcpy runs
// on the SMs at all: it is started while a kernel holds every SM.
// Asks why a kernel that reads and writes each byte once (the transpose)
// stops short of cudaMemcpy on the H200 (docs/BENCHMARKS.md, transpose).
//   nvcc -O3 -std=c++17 -arch=sm_90 tests/gpu/probes/copy_paths.cu -o /tmp/cp && /tmp/cp [GiB]
//   PROBE_ONLY=name: only that variant, once after a warm-up, inside cudaProfilerStart/Stop
//   (for ncu --replay-mode app-range or kernel profiling).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include "copy_probe.h"

// One 16-byte vector a thread, 1024 threads a block (the kit's copy kernel).
template <int kLoad, int kStore>
__global__ void __launch_bounds__(1024) one_vec(const uint4* __restrict__ s, uint4* __restrict__ d, size_t n)
{
    size_t i = (size_t)blockIdx.x * 1024 + threadIdx.x;
    if (i >= n)
        return;
    uint4 v;
    if constexpr (kLoad == 0)
        v = s[i];
    else if constexpr (kLoad == 1)   // ask the L2 to fetch 256 bytes around the sector
        asm volatile("ld.global.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(s + i));
    else                   // evict-first: the source is not read again
        asm volatile("{ .reg .b64 p; createpolicy.fractional.L2::evict_first.b64 p, 1.0;\n"
                     "ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], p; }"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(s + i));
    if constexpr (kStore == 0)
        d[i] = v;
    else if constexpr (kStore == 1)
        __stcs(d + i, v);
    else
        asm volatile("{ .reg .b64 p; createpolicy.fractional.L2::evict_first.b64 p, 1.0;\n"
                     "st.global.L1::no_allocate.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, p; }"
                     :: "l"(d + i), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// Each block copies contiguous chunks of CHUNK vectors, a persistent grid
// walking the chunks in order.
template <int CHUNK>
__global__ void __launch_bounds__(512) chunks(const uint4* __restrict__ s, uint4* __restrict__ d, size_t n)
{
    const size_t nchunks = (n + CHUNK - 1) / CHUNK;
    for (size_t c = blockIdx.x; c < nchunks; c += gridDim.x) {
        const size_t base = c * CHUNK;
        uint4 v[CHUNK / 512];
#pragma unroll
        for (int k = 0; k < CHUNK / 512; ++k) {
            size_t i = base + k * 512 + threadIdx.x;
            if (i < n)
                v[k] = s[i];
        }
#pragma unroll
        for (int k = 0; k < CHUNK / 512; ++k) {
            size_t i = base + k * 512 + threadIdx.x;
            if (i < n)
                d[i] = v[k];
        }
    }
}

// Bulk copies: one thread moves a block's TILE bytes global -> shared ->
// global; one tile a block (the solutions' staged kernel, without compute).
using block_barrier = cuda::barrier<cuda::thread_scope_block>;
template <int TILE>
__global__ void __launch_bounds__(32) bulk(const uint4* __restrict__ s, uint4* __restrict__ d, size_t n)
{
    extern __shared__ uint4 sm[];   // dynamic shared memory starts 128-byte aligned
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ block_barrier bar;
    const size_t first = (size_t)blockIdx.x * (TILE / 16);
    const size_t left = n - first;
    const unsigned bytes = (unsigned)(left < TILE / 16 ? left * 16 : TILE);
    if (threadIdx.x == 0) {
        init(&bar, 1);
        cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
        cuda::device::memcpy_async_tx(sm, s + first, cuda::aligned_size_t<16>(bytes), bar);
        auto token = cuda::device::barrier_arrive_tx(bar, 1, bytes);
        bar.wait(cuda::std::move(token));
        cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, d + first, sm, bytes);
        cuda::ptx::cp_async_bulk_commit_group();
        cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
    }
}

// A source no misplaced copy can match: each vector names its own index.
__global__ void fill_pattern(uint4* s, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s[i] = {(unsigned)i, (unsigned)(i >> 32), ~(unsigned)i, 0x3c3c3c3cu};
}

// How many vectors of d differ from s.
__global__ void count_diff(const uint4* s, const uint4* d, size_t n, unsigned long long* bad)
{
    unsigned long long mine = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 a = s[i], b = d[i];
        mine += a.x != b.x || a.y != b.y || a.z != b.z || a.w != b.w;
    }
    if (mine)
        atomicAdd(bad, mine);
}

// Holds every SM until *flag is set (for the copy-engine question).
__global__ void hold(volatile int* flag, long long max_cycles)
{
    long long t0 = clock64();
    while (*flag == 0 && clock64() - t0 < max_cycles) {
    }
}

struct Ctx {
    uint4 *s, *d;
    size_t n;   // vectors
    int sms;
};

static size_t blocks_of(const Ctx& c, size_t per_block) { return (c.n + per_block - 1) / per_block; }

// Each variant: its name and how it is launched on c.
struct Variant {
    const char* name;
    void (*launch)(const Ctx& c);
};
static const Variant kVariants[] = {
    {"cudaMemcpy", [](const Ctx& c) { CK(cudaMemcpyAsync(c.d, c.s, c.n * 16, cudaMemcpyDeviceToDevice)); }},
    {"one_vec", [](const Ctx& c) { one_vec<0, 0><<<blocks_of(c, 1024), 1024>>>(c.s, c.d, c.n); }},
    {"ld256B", [](const Ctx& c) { one_vec<1, 0><<<blocks_of(c, 1024), 1024>>>(c.s, c.d, c.n); }},
    {"ldEF", [](const Ctx& c) { one_vec<2, 0><<<blocks_of(c, 1024), 1024>>>(c.s, c.d, c.n); }},
    {"stcs", [](const Ctx& c) { one_vec<0, 1><<<blocks_of(c, 1024), 1024>>>(c.s, c.d, c.n); }},
    {"stEF", [](const Ctx& c) { one_vec<0, 2><<<blocks_of(c, 1024), 1024>>>(c.s, c.d, c.n); }},
    {"ldEF_stEF", [](const Ctx& c) { one_vec<2, 2><<<blocks_of(c, 1024), 1024>>>(c.s, c.d, c.n); }},
    {"gs8x256", [](const Ctx& c) { copy_kernel<uint4><<<c.sms * 8, 256>>>(c.s, c.d, (long long)c.n); }},
    {"chunk4k", [](const Ctx& c) { chunks<4096><<<c.sms * 4, 512>>>(c.s, c.d, c.n); }},
    {"chunk8k", [](const Ctx& c) { chunks<8192><<<c.sms * 2, 512>>>(c.s, c.d, c.n); }},
    {"bulk16k", [](const Ctx& c) { bulk<16384><<<blocks_of(c, 1024), 32, 16384>>>(c.s, c.d, c.n); }},
    {"bulk48k", [](const Ctx& c) { bulk<49152><<<blocks_of(c, 3072), 32, 49152>>>(c.s, c.d, c.n); }},
};

static void launch(const char* name, const Ctx& c)
{
    for (const Variant& v : kVariants)
        if (!std::strcmp(name, v.name)) {
            v.launch(c);
            CK(cudaGetLastError());
            return;
        }
    std::printf("FATAL unknown variant %s\n", name);
    std::exit(1);
}

static double median_ms(const char* name, const Ctx& c, int reps)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < reps + 2; ++r) {
        CK(cudaEventRecord(a));
        launch(name, c);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float t;
        CK(cudaEventElapsedTime(&t, a, b));
        if (r >= 2)
            ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return ms[ms.size() / 2];
}

int main(int argc, char** argv)
{
    const double gib = argc > 1 ? std::atof(argv[1]) : 4.0;
    Ctx c;
    c.n = (size_t)(gib * (1 << 30)) / 16;
    CK(cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaFuncSetAttribute(bulk<49152>, cudaFuncAttributeMaxDynamicSharedMemorySize, 49152));
    CK(cudaMalloc(&c.s, c.n * 16));
    CK(cudaMalloc(&c.d, c.n * 16));
    fill_pattern<<<c.sms * 8, 256>>>(c.s, c.n);
    CK(cudaGetLastError());
    CK(cudaMemset(c.d, 0, c.n * 16));
    unsigned long long* bad;
    CK(cudaMalloc(&bad, sizeof *bad));
    const double moved = 2.0 * (double)c.n * 16;

    if (const char* only = std::getenv("PROBE_ONLY")) {
        launch(only, c);   // warm-up outside the profiled range
        CK(cudaDeviceSynchronize());
        CK(cudaProfilerStart());
        launch(only, c);
        CK(cudaDeviceSynchronize());
        CK(cudaProfilerStop());
        std::printf("ONLY %s done\n", only);
        return 0;
    }

    const double memcpy_ms = median_ms("cudaMemcpy", c, 9);
    for (const Variant& v : kVariants) {
        const char* name = v.name;
        double ms = !std::strcmp(name, "cudaMemcpy") ? memcpy_ms : median_ms(name, c, 9);
        // each variant checked once: every vector of the destination must
        // equal the source's
        CK(cudaMemset(c.d, 0, c.n * 16));
        CK(cudaMemset(bad, 0, sizeof *bad));
        launch(name, c);
        count_diff<<<c.sms * 8, 256>>>(c.s, c.d, c.n, bad);
        CK(cudaGetLastError());
        unsigned long long wrong = 0;
        CK(cudaMemcpy(&wrong, bad, sizeof wrong, cudaMemcpyDeviceToHost));
        std::printf("ROW %-11s %8.3f ms %7.1f GB/s %6.1f %% of cudaMemcpy", name, ms,
                    moved / (ms * 1e-3) / 1e9, 100.0 * memcpy_ms / ms);
        if (wrong)
            std::printf("  WRONG: %llu of %zu vectors differ", wrong, c.n);
        std::printf("\n");
    }

    // Does cudaMemcpy need the SMs? Hold every SM with a spinning kernel on
    // one stream, copy on another, and see whether the copy ends before the
    // spin is released.
    int* flag;
    CK(cudaMallocManaged(&flag, sizeof(int)));
    *flag = 0;
    cudaStream_t sa, sb;
    CK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hold, 1024, 0));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    hold<<<c.sms * per_sm, 1024, 0, sa>>>(flag, 4000000000LL);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e0, sb));
    CK(cudaMemcpyAsync(c.d, c.s, c.n * 16, cudaMemcpyDeviceToDevice, sb));
    CK(cudaEventRecord(e1, sb));
    // wait up to ~1 s for the copy while the SMs are held
    bool done = false;
    for (int k = 0; k < 1000 && !done; ++k) {
        done = cudaEventQuery(e1) == cudaSuccess;
        if (!done) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, nullptr);
        }
    }
    *flag = 1;
    CK(cudaDeviceSynchronize());
    float t;
    CK(cudaEventElapsedTime(&t, e0, e1));
    std::printf("HOLD cudaMemcpy while every SM is held: %s (%.3f ms from its start to its end)\n",
                done ? "finished before the SMs were released" : "waited for the SMs", t);
    return 0;
}
