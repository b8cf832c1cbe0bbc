// Probe: what the benchmark's two events add around one call, next to the
// kernel's own duration (run it under ncu for that). Not part of the kit's
// build; tests/gpu/probe_call_overhead.sh builds and runs it.
//
// Links one haxpy() (a solution build or a peer) and times it at n in five
// arrangements, SAMPLES calls each, printing the median and minimum in us:
//   bench   flush, event, call, event     (the benchmark: the flush kernel
//                                          is still running when the call is
//                                          enqueued)
//   idle    flush, sync, event, call, event   (the host's launch latency
//                                              lands between the events)
//   spin    flush, sync, a 200 us spin on one thread, event, call, event
//           (the call is queued behind a kernel that leaves memory idle)
//   empty   flush, event, empty kernel, event
//   events  flush, event, event
// Each arrangement's calls are consecutive, so ncu's list of haxpy kernels
// splits into bench, idle, spin in that order.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#include "haxpy.h"
#include "l2_flush.h"

#define CK(call)                                                                   \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        if (e_ != cudaSuccess) {                                                   \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,      \
                         cudaGetErrorString(e_));                                  \
            std::exit(1);                                                          \
        }                                                                          \
    } while (0)

__global__ void empty_kernel() {}

__global__ void spin_kernel(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

enum Mode { BENCH, IDLE, SPIN, EMPTY, EVENTS };
static const char *kNames[] = {"bench", "idle", "spin", "empty", "events"};

int main(int argc, char **argv)
{
    const int n = argc > 1 ? std::atoi(argv[1]) : 67108869;
    const int offset = argc > 2 ? std::atoi(argv[2]) : 0;
    const int samples = argc > 3 ? std::atoi(argv[3]) : 31;
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    const size_t flush_bytes = (size_t)2 * l2;
    void *flush = nullptr;
    nv_bfloat16 *x = nullptr, *y = nullptr;
    CK(cudaMalloc(&flush, flush_bytes));
    CK(cudaMemset(flush, 0x5a, flush_bytes));
    const size_t bytes = ((size_t)n + offset) * sizeof(nv_bfloat16);
    CK(cudaMalloc(&x, bytes));
    CK(cudaMalloc(&y, bytes));
    CK(cudaMemset(x, 0x3f, bytes));   // bf16 0x3f3f ~ 0.75: finite values
    CK(cudaMemset(y, 0x3f, bytes));
    const float alpha = 0.5f;
    haxpy(n, alpha, x + offset, y + offset);   // the first call, at this size
    CK(cudaDeviceSynchronize());
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int m = BENCH; m <= EVENTS; m++) {
        std::vector<float> t;
        for (int i = 0; i < samples; i++) {
            CK(bw_l2_flush_read(flush, flush_bytes));
            if (m != BENCH && m != EMPTY && m != EVENTS)
                CK(cudaDeviceSynchronize());
            if (m == SPIN) {
                spin_kernel<<<1, 1>>>(200000ull);
                CK(cudaGetLastError());
            }
            CK(cudaEventRecord(e0, 0));
            if (m == EMPTY) {
                empty_kernel<<<1, 1>>>();
                CK(cudaGetLastError());
            } else if (m != EVENTS) {
                haxpy(n, alpha, x + offset, y + offset);
                CK(cudaGetLastError());
            }
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms * 1000.0f);
        }
        std::sort(t.begin(), t.end());
        std::printf("%-7s n=%d offset=%d median %.2f us  min %.2f us  max %.2f us\n", kNames[m], n,
                    offset, t[t.size() / 2], t.front(), t.back());
    }
    CK(cudaDeviceSynchronize());
    return 0;
}
