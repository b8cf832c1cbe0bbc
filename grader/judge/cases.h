/* The test cases: deterministic from a seed, each replayable by its index. */
#ifndef BWLAB_CASES_H
#define BWLAB_CASES_H
#include <stdint.h>
#include "exercise.h"

/* The seed used when neither --seed nor BWLAB_SEED is given: fixed, so every
 * student sees the same public cases (the bytes of "bwlab"). */
#define BW_PUBLIC_SEED UINT64_C(0x62776c6162)

typedef enum {
    BW_VALUES_RANDOM = 0,   /* random normal-range values, random signs */
    BW_VALUES_SPECIAL,      /* +-0, subnormals, huge magnitudes, overflow to Inf, NaN, Inf
                             * (a reduction: a sum that overflows, or a NaN or Infs
                             * planted; a matrix: every bit pattern, NaN payloads too) */
    BW_VALUES_CANCEL,       /* alpha*x close to -y: large relative error exposes bad rounding */
    /* reductions (inputs.c says how each is built): */
    BW_VALUES_POSITIVE,     /* positive values only: a sum that only grows */
    BW_VALUES_EXACT,        /* multiples of 2^-9 whose every partial sum is a float */
    BW_VALUES_SPIKES,       /* zeros with up to eight powers 2^0..2^7 at chosen indices */
    BW_VALUES_EXACT_POSITIVE /* the exact class's magnitudes, all positive (bw_timed_values) */
} bw_value_class;

typedef enum {
    BW_GROUP_SMALL = 0,     /* n <= 1025: every offset 0..15 */
    BW_GROUP_MEDIUM,        /* up to 2^20: offsets 0..15 up to n = 65537, else 0,1,7,8,15 */
    BW_GROUP_LARGE,         /* up to 2^24 (+-1): random offsets below 256 bytes */
    BW_GROUP_SPECIAL,       /* special values and alpha classes */
    BW_GROUP_HUGE           /* n = INT_MAX, skipped when memory is short */
} bw_case_group;
#define BW_N_GROUPS 5

typedef struct {
    int index;              /* K in `--case K` */
    int64_t n;              /* elements; a matrix: rows * cols */
    int64_t rows, cols;     /* a matrix's shape; else 1 and n */
    int offset_elems;       /* same for every array of n elements; bytes < 256 */
    float alpha;            /* 0 when the exercise takes no alpha */
    const char *alpha_kind; /* "0", "1", "-1", "tiny", "huge", "random", or "-" */
    bw_value_class values;
    bw_case_group group;
    uint64_t data_seed;     /* seeds this case's input values */
} bw_case;

typedef struct {
    bw_case *items;
    int count;
} bw_case_list;

/* The cases of ex's shape (cases.c, cases_matrix.c).
 * hidden != 0 adds the instructor's extra cases (after the public ones, so
 * public case indices do not move). Returns 0, or -1 on allocation failure. */
int bw_cases_generate(const bw_exercise *ex, uint64_t seed, int hidden, bw_case_list *out);
void bw_cases_free(bw_case_list *list);

/* The call's scalars for case c: the first is the case's alpha; any others
 * (no exercise has them yet) random like a random alpha, from the data seed. */
void bw_case_scalars(const bw_exercise *ex, const bw_case *c, float out[BW_MAX_SCALARS]);

const char *bw_case_group_name(bw_case_group g);
/* "small,special" -> a mask with bit (1u << group) set for each group named.
 * Returns how many were named, or -1 for an empty or unknown name. */
int bw_parse_groups(const char *list, unsigned *mask);
const char *bw_value_class_name(bw_value_class v);

/* The values a benchmark's timed calls (and bwgrade once's) run on. A
 * reduction's are exact and positive. Every correct call returns the exact
 * sum, so the by-value check of each timed call (bench_student.c) allows
 * only rounding, far less than any element: a call that skips part of x
 * and scales up what it read is seen. And that sum is far from its
 * negation, which a remembered result must match on the calls whose
 * inputs are negated. */
bw_value_class bw_timed_values(const bw_exercise *ex);

#endif
