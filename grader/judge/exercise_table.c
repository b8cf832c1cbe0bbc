/* Builds the exercise table from exercises/exercises.def. */
#include <string.h>
#include "exercise.h"
#include "ref_kernels.h"

static const bw_exercise table[] = {
#define BW_EXERCISE(name, n_arrays, in_place, uses_alpha, summary) \
    {#name, n_arrays, in_place, uses_alpha, summary, name##_ref_arrays, name##_exact},
#include "exercises.def"
#undef BW_EXERCISE
};

int bw_exercise_count(void) { return (int)(sizeof table / sizeof table[0]); }

const bw_exercise *bw_exercise_at(int i)
{
    return (i >= 0 && i < bw_exercise_count()) ? &table[i] : NULL;
}

const bw_exercise *bw_exercise_find(const char *name)
{
    for (int i = 0; i < bw_exercise_count(); i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

int bw_exercise_n_inputs(const bw_exercise *ex) { return ex->n_arrays - 1 + ex->in_place; }

int bw_exercise_is_input(const bw_exercise *ex, int k)
{
    return k < ex->n_arrays - 1 || (k == ex->n_arrays - 1 && ex->in_place);
}

int64_t bw_exercise_bytes_per_element(const bw_exercise *ex)
{
    return 2 * (int64_t)(ex->n_arrays + ex->in_place);
}

double bw_exercise_least_dram_bytes(const bw_exercise *ex, int64_t n, int64_t l2_bytes)
{
    const double element = 2.0;   /* bytes of one bf16 */
    double reads = element * (double)n * (double)bw_exercise_n_inputs(ex);
    double writes = element * (double)n - (double)(l2_bytes > 0 ? l2_bytes : 0);
    return reads + (writes > 0.0 ? writes : 0.0);
}
