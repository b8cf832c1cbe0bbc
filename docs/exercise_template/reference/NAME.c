/* NAME, y = a * x in fp16: its CPU reference and what counts as correct
 * (rule.h). */
#include <math.h>
#include "fp16.h"
#include "hot_loop.h"
#include "ref_kernels.h"
#include "rule.h"

typedef struct {
    float a;
    const fp16_t *x;
    fp16_t *y;
} NAME_ctx;

BW_HOT_LOOP static void NAME_body(int64_t begin, int64_t end, void *arg)
{
    const NAME_ctx *c = arg;
    for (int64_t i = begin; i < end; i++) {
        float p = c->a * fp16_to_float(c->x[i]);   /* the product in float, as a kernel takes it */
        c->y[i] = fp16_from_float(p);
    }
}

/* One correct answer, bit for bit the one most kernels give. arrays: in
 * exercise.def's order; y holds the poison on entry. */
static void reference(int64_t n, const float *scalars, void *const *arrays, int threads)
{
    NAME_ctx c = {scalars[0], arrays[0], arrays[1]};
    (void)parallel_for(n, ref_threads(n, threads), REF_MIN_CHUNK, NAME_body, &c);
}

/* What the grader accepts for one element: the exact value, rounded once to
 * fp16, give or take the slack a correct kernel may add. */
static bw_exact exact(const float *scalars, const double *in)
{
    double p = (double)scalars[0] * in[0];   /* exact: 24 + 11 significant bits */
    bw_exact e;
    e.value = p;
    /* The product rounded to float before fp16 may round a second time. */
    e.slack = isfinite(p) ? BW_FLOAT_SLACK * fabs(p) : 0.0;
    return e;
}

const bw_rule NAME_rule = {
    .reference = reference,
    .exact = exact,
    .correct = "each y[i] is a*x[i] rounded once to fp16 (a float product may move it by a "
               "float ulp)",
};
