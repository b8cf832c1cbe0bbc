// CORPUS: control with extra files. A correct grid-stride kernel, shipped
// with a hostile adapter.cu, a changed haxpy.h and a CMakeLists.txt: only
// haxpy.cu may be taken from a submission, so this must pass every case.
#include "haxpy.h"

__global__ void scaled_add(long long n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16* x, nv_bfloat16* y)
{
    scaled_add<<<1024, 256>>>(n, alpha, x, y);
}
