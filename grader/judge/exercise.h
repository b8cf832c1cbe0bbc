/* The grader's view of an exercise, built from exercises/exercises.def. */
#ifndef BWLAB_EXERCISE_H
#define BWLAB_EXERCISE_H
#include <stdint.h>
#include "bf16.h"
#include "exact.h"

typedef void (*bw_ref_fn)(int64_t n, float alpha, bf16_t *const *arrays, int threads);
/* Exact value of one element from its inputs (see reference/exact.h). */
typedef bw_exact (*bw_exact_fn)(float alpha, const bf16_t *in);

typedef struct {
    const char *name;
    int n_arrays;       /* arrays passed to the student's function; output is last */
    int in_place;       /* the output array also carries an input */
    int uses_alpha;     /* takes alpha; its effect on correctness is in `exact` */
    const char *summary;
    bw_ref_fn reference;
    bw_exact_fn exact;  /* what correct means: name##_exact in reference/exact.c */
} bw_exercise;

int bw_exercise_count(void);
const bw_exercise *bw_exercise_at(int i);
const bw_exercise *bw_exercise_find(const char *name); /* NULL if unknown */

/* Arrays read before the call: all but the output, plus the output if in place. */
int bw_exercise_n_inputs(const bw_exercise *ex);
/* Is array k read by the function (so it must come back unchanged unless it is the output)? */
int bw_exercise_is_input(const bw_exercise *ex, int k);
/* Bytes of device memory traffic per element: each read array once, the output once. */
int64_t bw_exercise_bytes_per_element(const bw_exercise *ex);
/* The least DRAM traffic of one call of n elements, in bytes: every input
 * byte read once (the benchmark flushes L2 first), and only the output bytes
 * an L2 of l2_bytes cannot hold. A write-back L2 may still hold up to its
 * size of output when the kernel ends, so a call whose output fits times
 * faster than bytes_per_element * n at the datasheet peak, and honestly so. */
double bw_exercise_least_dram_bytes(const bw_exercise *ex, int64_t n, int64_t l2_bytes);

#endif
