/* CPU references for the exercises. Each element depends only on its own
 * inputs, so splitting the range across threads cannot change any bit. */
#include <math.h>
#include "hot_loop.h"
#include "parallel_for.h"
#include "ref_kernels.h"

/* Smallest share of work worth a thread of its own (128 KiB per array). */
#define REF_MIN_CHUNK ((int64_t)1 << 16)

static int ref_threads(int64_t n, int threads)
{
    if (n < REF_THREAD_THRESHOLD)
        return 1; /* thread start-up would cost more than the loop */
    return threads <= 0 ? parallel_default_threads() : threads;
}

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

void haxpy_ref_threads(int64_t n, float alpha, const bf16_t *x, bf16_t *y,
                       int threads)
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

void vector_sum_ref_threads(int64_t n, const bf16_t *a, const bf16_t *b,
                            bf16_t *c, int threads)
{
    vsum_ctx v = {a, b, c};
    (void)parallel_for(n, ref_threads(n, threads), REF_MIN_CHUNK, vsum_body, &v);
}

void vector_sum_ref(int64_t n, const bf16_t *a, const bf16_t *b, bf16_t *c)
{
    vector_sum_ref_threads(n, a, b, c, 0);
}

void haxpy_ref_arrays(int64_t n, float alpha, bf16_t *const *arrays, int threads)
{
    haxpy_ref_threads(n, alpha, arrays[0], arrays[1], threads);
}

void vector_sum_ref_arrays(int64_t n, float alpha, bf16_t *const *arrays, int threads)
{
    (void)alpha; /* the table passes it to every exercise; a sum has none */
    vector_sum_ref_threads(n, arrays[0], arrays[1], arrays[2], threads);
}
