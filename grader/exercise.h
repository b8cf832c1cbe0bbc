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

#endif
