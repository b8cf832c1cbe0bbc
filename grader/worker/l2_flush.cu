// The read-only L2 flush (see l2_flush.h).
#include <cstdint>
#include <cuda_runtime.h>
#include "l2_flush.h"

// Every thread sums what it reads; the store happens only if the sum has an
// impossible value, so the compiler cannot drop the loads and nothing is
// written in practice.
__global__ void bw_l2_flush_kernel(const uint4 *buf, size_t n, unsigned *sink)
{
    unsigned acc = 0;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint4 v = buf[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u && sink != nullptr)
        *sink = acc;
}

extern "C" cudaError_t bw_l2_flush_read(const void *buf, size_t bytes)
{
    static int blocks = 0;
    if (blocks == 0) {
        int sms = 0;
        cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
        if (e != cudaSuccess)
            return e;
        blocks = 8 * (sms > 0 ? sms : 1);
    }
    bw_l2_flush_kernel<<<blocks, 256>>>(static_cast<const uint4 *>(buf), bytes / 16, nullptr);
    return cudaGetLastError();
}
