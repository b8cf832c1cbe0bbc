/* CPU reference for the exercises: the ground truth the grader compares to. */
#ifndef BWLAB_REF_KERNELS_H
#define BWLAB_REF_KERNELS_H
#include <stdint.h>
#include "bf16.h"

/* Below this many elements the references run single-threaded. */
#define REF_THREAD_THRESHOLD ((int64_t)1 << 20)

/* y[i] = bf16(fmaf(alpha, x[i], y[i])) for 0 <= i < n. */
void haxpy_ref(int64_t n, float alpha, const bf16_t *x, bf16_t *y);
/* c[i] = bf16(a[i] + b[i]), the sum taken in float. */
void vector_sum_ref(int64_t n, const bf16_t *a, const bf16_t *b, bf16_t *c);

/* The same with an explicit thread count (1 = single-threaded). The result is
 * bit-identical for every thread count. */
void haxpy_ref_threads(int64_t n, float alpha, const bf16_t *x, bf16_t *y,
                       int threads);
void vector_sum_ref_threads(int64_t n, const bf16_t *a, const bf16_t *b,
                            bf16_t *c, int threads);

/* Uniform entries named by the exercise table (exercises/exercises.def):
 * arrays[] in the order the student's function takes them, output last.
 * For an in-place exercise the output array holds its input on entry. */
void haxpy_ref_arrays(int64_t n, float alpha, bf16_t *const *arrays, int threads);
void vector_sum_ref_arrays(int64_t n, float alpha, bf16_t *const *arrays, int threads);

#endif
