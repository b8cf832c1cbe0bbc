/* Input values for a case, regenerated bit for bit from the case's seed. */
#ifndef BWLAB_INPUTS_H
#define BWLAB_INPUTS_H
#include "cases.h"
#include "bf16.h"

/* Fill every input array of ex for case c (arrays[k] for each k with
 * bw_exercise_is_input(ex, k); others are left alone). Never writes BW_POISON.
 * Deterministic for a given case whatever the thread count. */
void bw_inputs_fill(const bw_exercise *ex, const bw_case *c, bf16_t *const *arrays,
                    int threads);

/* The same values for elements [begin, end) only, in one thread:
 * arrays[k][j] gets element begin + j. Lets a check regenerate a block of
 * inputs instead of keeping a copy of every array. */
void bw_inputs_fill_range(const bw_exercise *ex, const bw_case *c, bf16_t *const *arrays,
                          int64_t begin, int64_t end);

#endif
