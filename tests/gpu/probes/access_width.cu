// How the width of each thread's access limits a device-to-device copy:
// the same bytes moved with 2-, 4-, 8- and 16-byte loads and stores (a
// grid-stride loop, 8 accesses in flight per thread), against cudaMemcpy.
// Asks whether a transpose that moves bf16 one element at a time can reach
// the copy's bandwidth at all (docs/BENCHMARKS.md, transpose).
//   nvcc -O3 -std=c++17 -arch=sm_90 tests/gpu/probes/access_width.cu -o /tmp/aw && /tmp/aw
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "copy_probe.h"

__global__ void flush_kernel(const int4* p, long long n, int* sink)
{
    int acc = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        acc ^= p[i].x;
    if (acc == 0x7fffffff)
        *sink = acc;
}

template <typename F>
static double median_ms(F&& f, const int4* flush, long long flush_n, int* sink)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < 25; ++r) {
        flush_kernel<<<1024, 256>>>(flush, flush_n, sink);
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaGetLastError());
        float t;
        CK(cudaEventElapsedTime(&t, a, b));
        if (r >= 3)
            ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

template <typename T>
static void run(const char* name, void* src, void* dst, size_t bytes, const int4* flush,
                long long flush_n, int* sink, int sms, double memcpy_gbs)
{
    long long n = (long long)(bytes / sizeof(T));
    double ms = median_ms([&] {
        copy_kernel<T><<<sms * 8, 256>>>((const T*)src, (T*)dst, n);
    }, flush, flush_n, sink);
    double gbs = 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
    std::printf("ROW %-10s %7.1f GB/s  %5.1f %% of cudaMemcpy\n", name, gbs, 100.0 * gbs / memcpy_gbs);
}

int main()
{
    const size_t bytes = (size_t)1 << 30;
    void *src, *dst;
    int4* flush;
    int* sink;
    int l2 = 0, sms = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long long flush_n = 2LL * l2 / (long long)sizeof(int4);
    CK(cudaMalloc(&src, bytes));
    CK(cudaMalloc(&dst, bytes));
    CK(cudaMalloc(&flush, (size_t)flush_n * sizeof(int4)));
    CK(cudaMalloc(&sink, sizeof(int)));
    CK(cudaMemset(src, 0x3c, bytes));
    CK(cudaMemset(flush, 1, (size_t)flush_n * sizeof(int4)));
    double ms = median_ms([&] { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); },
                          flush, flush_n, sink);
    double memcpy_gbs = 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
    std::printf("ROW %-10s %7.1f GB/s  (1 GiB each way, read + write counted)\n", "cudaMemcpy", memcpy_gbs);
    run<unsigned short>("2-byte", src, dst, bytes, flush, flush_n, sink, sms, memcpy_gbs);
    run<unsigned int>("4-byte", src, dst, bytes, flush, flush_n, sink, sms, memcpy_gbs);
    run<unsigned long long>("8-byte", src, dst, bytes, flush, flush_n, sink, sms, memcpy_gbs);
    run<int4>("16-byte", src, dst, bytes, flush, flush_n, sink, sms, memcpy_gbs);
    return 0;
}
