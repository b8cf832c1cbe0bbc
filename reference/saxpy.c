/* saxpy, y = a * x + y in fp32, in place: its CPU reference and what counts
 * as correct (rule.h). */
#include <math.h>
#include <string.h>
#include "element.h"
#include "hot_loop.h"
#include "ref_kernels.h"
#include "rule.h"

typedef struct {
    float a;
    const float *x;
    float *y;
} saxpy_ctx;

BW_HOT_LOOP static void saxpy_body(int64_t begin, int64_t end, void *arg)
{
    const saxpy_ctx *c = arg;
    for (int64_t i = begin; i < end; i++)
        c->y[i] = fmaf(c->a, c->x[i], c->y[i]);   /* one rounding, as the GPU's FMA */
}

static void reference(int64_t n, const float *scalars, void *const *arrays, int threads)
{
    saxpy_ctx c = {scalars[0], arrays[0], arrays[1]};
    (void)parallel_for(n, ref_threads(n, threads), REF_MIN_CHUNK / 2, saxpy_body, &c);
}

static bw_exact exact(const float *scalars, const double *in)
{
    double x = in[0], y = in[1];
    double p = (double)scalars[0] * x;   /* exact: 24 + 24 significant bits */
    bw_exact e;
    e.value = p + y;
    /* A fused multiply-add rounds once; a multiply, then an add, also rounds
     * the product to float first: by up to half a float ulp of the product
     * (half the subnormal spacing when the product is that small). */
    e.slack = isfinite(p) ? 0.5 * bw_type_ulp_at(BW_F32, p) : 0.0;
    return e;
}

const bw_rule saxpy_rule = {
    .reference = reference,
    .exact = exact,
    .correct = "each y[i] is a*x[i] + y[i] rounded once to fp32, or with the product rounded "
               "to fp32 first",
};
