/* Input values for a case, regenerated bit for bit from the case's seed:
 * every element from a counter-based hash of (data seed, array, index), so
 * any range of elements can be filled on its own. Which values depends on
 * the case's value class, the exercise's shape and each array's type. */
#ifndef BWLAB_INPUTS_H
#define BWLAB_INPUTS_H
#include "cases.h"
#include "element.h"

#define BW_MAX_SPIKES 8     /* a reduction's spike case: 2^0 .. 2^7 */

/* Fill every input array of ex for case c (arrays[k] for each k with
 * bw_exercise_is_input(ex, k), of the type ex declares; others are left
 * alone). Never writes the type's poison. Deterministic for a given case
 * whatever the thread count. */
void bw_inputs_fill(const bw_exercise *ex, const bw_case *c, void *const *arrays, int threads);

/* The same values for elements [begin, end) only, in one thread:
 * element j of arrays[k] gets element begin + j. Lets a check regenerate a
 * block of inputs instead of keeping a copy of every array. */
void bw_inputs_fill_range(const bw_exercise *ex, const bw_case *c, void *const *arrays,
                          int64_t begin, int64_t end);

/* What generating a case's values needs, set up once: a fill's context,
 * and a reader of single elements (a matrix's check reads its input out of
 * order). */
typedef struct {
    const bw_exercise *ex;
    const bw_case *c;
    void *const *arrays;     /* a fill: element i of array k is element i - origin of arrays[k] */
    int64_t origin;
    uint64_t base[8];        /* each array's hash base (protocol.h: BW_MAX_ARRAYS) */
    int all_bf16;            /* every input is bf16 */
    int n_spikes;            /* a spikes case: where they lie */
    int64_t spikes[BW_MAX_SPIKES];
} bw_input_reader;

void bw_input_reader_init(bw_input_reader *r, const bw_exercise *ex, const bw_case *c);
/* Element i of input array k of a matrix exercise, as bits. */
uint32_t bw_input_read(const bw_input_reader *r, int k, int64_t i);

/* A reduction's spike case (BW_VALUES_SPIKES): how many spikes, and where
 * (pos[s] holds the value 2^s; every other element is 0). At most 8; the
 * positions are distinct, and the first two are 0 and n - 1. */
int bw_spike_positions(const bw_case *c, int64_t pos[BW_MAX_SPIKES]);

#endif
