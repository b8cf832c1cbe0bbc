/* vector_sum, c = a + b in bf16: its CPU reference and what counts as
 * correct (rule.h). */
#include <math.h>
#include "hot_loop.h"
#include "ref_kernels.h"
#include "rule.h"

typedef struct {
    const bf16_t *a, *b;
    bf16_t *c;
} vsum_ctx;

BW_HOT_LOOP static void vsum_body(int64_t begin, int64_t end, void *arg)
{
    const vsum_ctx *v = arg;
    for (int64_t i = begin; i < end; i++) {
        /* A lone add: nothing for the compiler to fuse. Stored in a float so
         * the sum is rounded to float even where excess precision exists. */
        float s = bf16_to_float(v->a[i]) + bf16_to_float(v->b[i]);
        v->c[i] = bf16_from_float(s);
    }
}

void vector_sum_ref_threads(int64_t n, const bf16_t *a, const bf16_t *b, bf16_t *c, int threads)
{
    vsum_ctx v = {a, b, c};
    (void)parallel_for(n, ref_threads(n, threads), REF_MIN_CHUNK, vsum_body, &v);
}

void vector_sum_ref(int64_t n, const bf16_t *a, const bf16_t *b, bf16_t *c)
{
    vector_sum_ref_threads(n, a, b, c, 0);
}

static void reference(int64_t n, const float *scalars, void *const *arrays, int threads)
{
    (void)scalars;
    vector_sum_ref_threads(n, arrays[0], arrays[1], arrays[2], threads);
}

static bw_exact exact(const float *scalars, const double *in)
{
    (void)scalars;
    double a = in[0], b = in[1];
    bw_exact e;
    e.value = a + b;
    e.slack = BW_FLOAT_SLACK * (fabs(a) + fabs(b));
    if (!isfinite(e.slack))
        e.slack = 0.0;
    return e;
}

const bw_rule vector_sum_rule = {
    .reference = reference,
    .exact = exact,
    .correct = "each c[i] is a[i] + b[i] rounded once to bf16 (a float sum may move it by a "
               "few float ulps)",
};
