// Does the mix of reads and writes set the bandwidth a kernel reaches at equal
// bytes? haxpy and vector_sum (two reads to one write) time 3-4 % above the
// same run's copy (one read to one write) at 2^28 - 1 (docs/BENCHMARKS.md).
// Each kernel here moves the same total bytes, one 16-byte vector per stream
// a thread, 1024 threads a block (the kit's copy kernel's shape), R streams
// read and W written; the L2 is flushed by a read before each call, as the
// worker does (grader/worker/l2_flush.h). Rounds run every variant in turn,
// so a drift of the clocks touches all alike; the median of the rounds.
// cudaMemcpy is also timed at sizes just short of the stream, between two
// buffers of exactly the copy's size, and after the worker's smaller flush,
// to match the worker's copy (grader/worker/bench_copy.c) step by step.
//   nvcc -O3 -std=c++17 -arch=sm_90 tests/gpu/probes/read_write_mix.cu -o /tmp/rw
//   /tmp/rw [total MiB, default 1536: haxpy's bytes at 2^28 - 1]
//   PROBE_ONCE=1: each variant once after a flush, for ncu's DRAM bytes:
//   PROBE_ONCE=1 ncu -k regex:mix_kernel --metrics dram__bytes_read.sum,dram__bytes_write.sum /tmp/rw
// Measured: docs/BENCHMARKS.md, "Figures above the copy".
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "copy_probe.h"

struct Streams {
    const uint4* in[3];
    uint4* out[3];
};

// R reads and W writes of one vector each; with W = 0 the sum is stored only
// if it takes an impossible value (nothing is written, the loads stay).
// in_place: the first output is the first input (haxpy's y).
template <int R, int W>
__global__ void __launch_bounds__(1024) mix_kernel(Streams s, size_t vecs, unsigned* sink)
{
    const size_t i = (size_t)blockIdx.x * 1024 + threadIdx.x;
    if (i >= vecs)
        return;
    uint4 v = make_uint4(i, i, i, i);
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const uint4 a = s.in[r][i];
        v.x ^= a.x, v.y ^= a.y, v.z ^= a.z, v.w ^= a.w;
    }
#pragma unroll
    for (int w = 0; w < W; ++w)
        s.out[w][i] = v;
    if (W == 0 && (v.x ^ v.y ^ v.z ^ v.w) == 0x9e3779b9u && sink)
        *sink = v.x;
}

__global__ void flush_kernel(const uint4* buf, size_t n, unsigned* sink)
{
    unsigned acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = buf[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u && sink)
        *sink = acc;
}

struct Variant {
    const char* name;
    int r, w;
    bool in_place;   // the output is input 0 (haxpy's y = a x + y)
    bool memcpy_;    // cudaMemcpy of one stream into another
    long short_by;   // bytes fewer than the stream (memcpy only)
    bool kit_buffers;  // memcpy between two buffers of exactly that size, as the worker allocates
    bool kit_flush;    // the worker's flush: a read of twice the L2, not 512 MiB
};

static uint4 *kit_src, *kit_dst;

static void launch(const Variant& v, uint4* const* buf, size_t vecs)
{
    if (v.memcpy_) {
        const size_t bytes = vecs * 16 - (size_t)v.short_by;
        CK(cudaMemcpyAsync(v.kit_buffers ? kit_dst : buf[3], v.kit_buffers ? kit_src : buf[0], bytes,
                           cudaMemcpyDeviceToDevice, 0));
        return;
    }
    Streams s{};
    for (int r = 0; r < 3; ++r)
        s.in[r] = buf[r];
    for (int w = 0; w < 3; ++w)
        s.out[w] = buf[3 + w];
    if (v.in_place)
        s.out[0] = buf[0];
    const unsigned blocks = (unsigned)((vecs + 1023) / 1024);
    switch (v.r * 10 + v.w) {
    case 10: mix_kernel<1, 0><<<blocks, 1024>>>(s, vecs, nullptr); break;
    case 1:  mix_kernel<0, 1><<<blocks, 1024>>>(s, vecs, nullptr); break;
    case 11: mix_kernel<1, 1><<<blocks, 1024>>>(s, vecs, nullptr); break;
    case 21: mix_kernel<2, 1><<<blocks, 1024>>>(s, vecs, nullptr); break;
    case 31: mix_kernel<3, 1><<<blocks, 1024>>>(s, vecs, nullptr); break;
    case 12: mix_kernel<1, 2><<<blocks, 1024>>>(s, vecs, nullptr); break;
    case 13: mix_kernel<1, 3><<<blocks, 1024>>>(s, vecs, nullptr); break;
    default: std::printf("FATAL no kernel for %d reads, %d writes\n", v.r, v.w); std::exit(1);
    }
    CK(cudaGetLastError());
}

int main(int argc, char** argv)
{
    const double total_mib = argc > 1 ? std::atof(argv[1]) : 1536.0;
    const size_t total = (size_t)(total_mib * 1048576.0);
    const bool once = std::getenv("PROBE_ONCE") != nullptr;
    const Variant vars[] = {
        {"read only (1R)", 1, 0, false, false, 0, false, false},
        {"3R:1W", 3, 1, false, false, 0, false, false},
        {"2R:1W (vector_sum)", 2, 1, false, false, 0, false, false},
        {"2R:1W in place (haxpy)", 2, 1, true, false, 0, false, false},
        {"1R:1W copy (the kit's kernel)", 1, 1, false, false, 0, false, false},
        {"1R:1W cudaMemcpy", 1, 1, false, true, 0, false, false},
        {"1R:1W cudaMemcpy, 4 bytes short", 1, 1, false, true, 4, false, false},   // the kit's at 2^28 - 1
        {"1R:1W cudaMemcpy, 16 bytes short", 1, 1, false, true, 16, false, false},
        {"1R:1W cudaMemcpy, 1 MiB short", 1, 1, false, true, 1 << 20, false, false},
        {"1R:1W cudaMemcpy, 8 MiB short", 1, 1, false, true, 8 << 20, false, false},
        {"1R:1W cudaMemcpy, 64 MiB short", 1, 1, false, true, 64 << 20, false, false},
        {"  4 bytes short, the kit's buffers", 1, 1, false, true, 4, true, false},
        {"  4 bytes short, the kit's flush", 1, 1, false, true, 4, false, true},
        {"  4 bytes short, the kit's both", 1, 1, false, true, 4, true, true},
        {"  the kit's kernel, the kit's flush", 1, 1, false, false, 0, false, true},
        {"1R:2W", 1, 2, false, false, 0, false, false},
        {"1R:3W", 1, 3, false, false, 0, false, false},
        {"write only (1W)", 0, 1, false, false, 0, false, false},
    };
    const int nv = sizeof vars / sizeof vars[0];
    const size_t max_vecs = total / 16;   // the read-only and write-only streams
    uint4* buf[6];
    for (auto& b : buf) {
        CK(cudaMalloc(&b, max_vecs * 16));
        CK(cudaMemset(b, 0x3c, max_vecs * 16));
    }
    const size_t kit_bytes = total / 2 - 4;   // as bench_copy.c: cudaMalloc'd, src 0x3c, dst 0
    CK(cudaMalloc(&kit_src, kit_bytes));
    CK(cudaMalloc(&kit_dst, kit_bytes));
    CK(cudaMemset(kit_src, 0x3c, kit_bytes));
    CK(cudaMemset(kit_dst, 0, kit_bytes));
    int sms = 0, l2 = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    const size_t flush_bytes = 512u << 20, kit_flush_bytes = (2 * (size_t)l2 + 15) / 16 * 16;
    uint4* flush;
    CK(cudaMalloc(&flush, flush_bytes));
    CK(cudaMemset(flush, 1, flush_bytes));
    auto do_flush = [&](bool kit = false) {
        flush_kernel<<<8 * sms, 256>>>(flush, (kit ? kit_flush_bytes : flush_bytes) / 16, nullptr);
        CK(cudaGetLastError());
    };
    auto vecs_of = [&](const Variant& v) { return total / 16 / (size_t)(v.r + v.w); };

    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    std::printf("%s, %.0f MiB moved by every variant (the L2 flushed by a read before each call)\n",
                p.name, total_mib);
    if (once) {
        for (const auto& v : vars) {
            do_flush(v.kit_flush);
            launch(v, buf, vecs_of(v));
        }
        CK(cudaDeviceSynchronize());
        return 0;
    }
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    float span = 1e9f;   // the events' own span, as the worker subtracts it
    for (int k = 0; k < 21; ++k) {
        do_flush();
        CK(cudaEventRecord(a));
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        span = std::min(span, ms);
    }
    const int rounds = 15;
    std::vector<std::vector<float>> ms(nv);
    for (int round = 0; round < rounds + 1; ++round)
        for (int i = 0; i < nv; ++i) {
            do_flush(vars[i].kit_flush);
            CK(cudaEventRecord(a));
            launch(vars[i], buf, vecs_of(vars[i]));
            CK(cudaEventRecord(b));
            CK(cudaEventSynchronize(b));
            float t;
            CK(cudaEventElapsedTime(&t, a, b));
            if (round > 0)   // the first round warms up
                ms[i].push_back(t - span);
        }
    std::vector<double> med(nv);
    for (int i = 0; i < nv; ++i) {
        std::sort(ms[i].begin(), ms[i].end());
        med[i] = ms[i][rounds / 2];
    }
    double copy_ms = 1e30;   // the faster whole-vector copy, as the kit's baseline
    for (int i = 0; i < nv; ++i)
        if (vars[i].r == 1 && vars[i].w == 1 && vars[i].short_by == 0)
            copy_ms = std::min(copy_ms, med[i]);
    std::printf("events' span %.4f ms, subtracted; median of %d rounds\n", span, rounds);
    std::printf("%-36s %9s %9s %10s %8s\n", "variant", "ms", "q1-q3", "GB/s", "% copy");
    for (int i = 0; i < nv; ++i) {
        const double bytes = ((double)vecs_of(vars[i]) * 16 - vars[i].short_by) * (vars[i].r + vars[i].w);
        std::printf("%-36s %9.4f %4.1f-%4.1f%% %10.1f %8.1f\n", vars[i].name, med[i],
                    100 * (ms[i][rounds / 4] / med[i] - 1), 100 * (ms[i][3 * rounds / 4] / med[i] - 1),
                    bytes / med[i] / 1e6, 100 * copy_ms / med[i]);
    }
    return 0;
}
