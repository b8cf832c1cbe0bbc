/* The bf16 CPU references of haxpy and vector_sum (reference/haxpy.c,
 * reference/vector_sum.c), callable on their own: the kit's tests compare
 * them with exact oracles and their threaded paths with one thread. */
#ifndef BWLAB_REF_KERNELS_H
#define BWLAB_REF_KERNELS_H
#include <stdint.h>
#include "bf16.h"
#include "parallel_for.h"

/* Below this many elements the references run single-threaded. */
#define REF_THREAD_THRESHOLD ((int64_t)1 << 20)
/* Smallest share of work worth a thread of its own (128 KiB per bf16 array). */
#define REF_MIN_CHUNK ((int64_t)1 << 16)

/* Threads for a reference loop over n elements: one below the threshold
 * (thread start-up would cost more than the loop), else threads, or the
 * default when threads <= 0. */
static inline int ref_threads(int64_t n, int threads)
{
    if (n < REF_THREAD_THRESHOLD)
        return 1;
    return threads <= 0 ? parallel_default_threads() : threads;
}

/* y[i] = bf16(fmaf(alpha, x[i], y[i])) for 0 <= i < n. */
void haxpy_ref(int64_t n, float alpha, const bf16_t *x, bf16_t *y);
/* c[i] = bf16(a[i] + b[i]), the sum taken in float. */
void vector_sum_ref(int64_t n, const bf16_t *a, const bf16_t *b, bf16_t *c);

/* The same with an explicit thread count (1 = single-threaded). The result is
 * bit-identical for every thread count. */
void haxpy_ref_threads(int64_t n, float alpha, const bf16_t *x, bf16_t *y, int threads);
void vector_sum_ref_threads(int64_t n, const bf16_t *a, const bf16_t *b, bf16_t *c,
                            int threads);

#endif
