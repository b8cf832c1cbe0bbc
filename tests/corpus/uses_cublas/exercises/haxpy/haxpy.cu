// CORPUS: policy. Lets cuBLAS do the work (cublasAxpyEx), which the course
// policy forbids for these exercises by default.
#include <cublas_v2.h>
#include "haxpy.h"

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    static cublasHandle_t h = nullptr;
    if (h == nullptr)
        cublasCreate(&h);
    cublasAxpyEx(h, n, &alpha, CUDA_R_32F, x, CUDA_R_16BF, 1, y, CUDA_R_16BF, 1, CUDA_R_32F);
}
