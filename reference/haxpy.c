/* haxpy, y = alpha * x + y in bf16, in place: its CPU reference and what
 * counts as correct (rule.h). Each element depends only on its own inputs,
 * so splitting the range across threads cannot change any bit. */
#include <math.h>
#include "hot_loop.h"
#include "ref_kernels.h"
#include "rule.h"

typedef struct {
    float alpha;
    const bf16_t *x;
    bf16_t *y;
} haxpy_ctx;

BW_HOT_LOOP static void haxpy_body(int64_t begin, int64_t end, void *arg)
{
    const haxpy_ctx *c = arg;
    for (int64_t i = begin; i < end; i++) {
        /* fmaf rounds once, as the GPU's fused multiply-add does; libm's
         * fmaf is exact even where the CPU has no FMA instruction. */
        float r = fmaf(c->alpha, bf16_to_float(c->x[i]), bf16_to_float(c->y[i]));
        c->y[i] = bf16_from_float(r);
    }
}

void haxpy_ref_threads(int64_t n, float alpha, const bf16_t *x, bf16_t *y, int threads)
{
    haxpy_ctx c = {alpha, x, y};
    /* The return value only says whether threads started; the work is
     * complete either way. */
    (void)parallel_for(n, ref_threads(n, threads), REF_MIN_CHUNK, haxpy_body, &c);
}

void haxpy_ref(int64_t n, float alpha, const bf16_t *x, bf16_t *y)
{
    haxpy_ref_threads(n, alpha, x, y, 0);
}

static void reference(int64_t n, const float *scalars, void *const *arrays, int threads)
{
    haxpy_ref_threads(n, scalars[0], arrays[0], arrays[1], threads);
}

static bw_exact exact(const float *scalars, const double *in)
{
    float alpha = scalars[0];
    double x = in[0], y = in[1];
    double p = (double)alpha * x;   /* exact: 24 + 8 significant bits */
    bw_exact e;
    e.value = p + y;
    /* A correct kernel may round alpha to bf16 first (bf16 FMA instructions
     * take bf16 operands): that moves the product by |x| * |alpha - bf16(alpha)|. */
    double alpha_b = bf16_to_float(bf16_from_float(alpha));
    double alpha_err = isfinite(alpha_b) ? fabs((double)alpha - alpha_b) : 0.0;
    e.slack = fabs(x) * alpha_err + BW_FLOAT_SLACK * (fabs(p) + fabs(y));
    if (!isfinite(e.slack))
        e.slack = 0.0;
    return e;
}

const bw_rule haxpy_rule = {
    .reference = reference,
    .exact = exact,
    .correct = "each y[i] is alpha*x[i] + y[i] rounded once to bf16 (float intermediates, or "
               "alpha rounded to bf16 first, may move it by a few float ulps)",
};
