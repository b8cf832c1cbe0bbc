// Benchmark peer: haxpy through cuBLAS, cublasAxpyEx with bf16 x and y, a
// float alpha and float arithmetic (y = alpha*x + y, in place). cuBLAS may
// round alpha*x before adding y; the grader's tolerance (one ulp of alpha*x
// on top of one ulp of the result) allows for that.
#include "haxpy.h"

#include <cstdio>
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace {

// One handle for the life of the process: creating it is slow (it allocates
// and initializes), and the benchmark's untimed warm-up calls pay for it.
cublasHandle_t handle()
{
    static cublasHandle_t h = nullptr;
    if (h == nullptr) {
        const cublasStatus_t st = cublasCreate(&h);
        if (st != CUBLAS_STATUS_SUCCESS) {
            std::fprintf(stderr, "haxpy_cublas: cublasCreate failed: %s\n",
                         cublasGetStatusString(st));
            h = nullptr;
        }
    }
    return h;
}

} // namespace

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    if (n <= 0)
        return;
    cublasHandle_t h = handle();
    if (h == nullptr)
        return;
    // alpha lives on the host (the handle's default pointer mode).
    const cublasStatus_t st = cublasAxpyEx(h, n, &alpha, CUDA_R_32F,
                                           x, CUDA_R_16BF, 1,
                                           y, CUDA_R_16BF, 1,
                                           CUDA_R_32F);
    if (st != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "haxpy_cublas: cublasAxpyEx failed: %s\n",
                     cublasGetStatusString(st));
        return;
    }
    const cudaError_t err = cudaPeekAtLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy_cublas: launch failed: %s\n", cudaGetErrorString(err));
}
