/* The grader's view of an exercise: what exercises/NAME/exercise.def
 * declares (shape, scalars, arrays with their types, roles and extents) and
 * the rule of reference/NAME.c, for every exercise of the table
 * (exercises/exercises.def). Everything in the judge reads this; nothing
 * in the grader names an exercise. */
#ifndef BWLAB_EXERCISE_H
#define BWLAB_EXERCISE_H
#include <stdint.h>
#include "element.h"
#include "rule.h"

#define BW_MAX_SCALARS 4     /* the protocol's limit (bw_call); arrays: BW_MAX_ARRAYS */

typedef enum { BW_SHAPE_ELEMENTWISE = 0, BW_SHAPE_REDUCTION, BW_SHAPE_MATRIX } bw_shape;
typedef enum { BW_ROLE_IN = 1, BW_ROLE_OUT = 2, BW_ROLE_INOUT = 3 } bw_role;
typedef enum {
    BW_EXTENT_N = 0,         /* n elements */
    BW_EXTENT_ONE,           /* one element: a reduction's result */
    BW_EXTENT_ROWS_COLS,     /* rows * cols elements, rows x cols row-major */
    BW_EXTENT_COLS_ROWS      /* rows * cols elements, cols x rows row-major */
} bw_extent;

typedef struct {
    const char *name;        /* as in the student's signature */
    bw_type type;
    bw_role role;
    bw_extent extent;
} bw_array_decl;

typedef struct {
    const char *name;
    const char *summary;
    bw_shape shape;
    const char *const *scalars;   /* float scalars, in the signature's order */
    int n_scalars;
    const bw_array_decl *arrays;  /* in the signature's order */
    int n_arrays;
    const bw_rule *rule;
    /* Derived from the above (bw_exercise_at fills them): */
    int output;              /* the one array written (OUT or INOUT) */
    int in_place;            /* the output is read first (INOUT) */
    int uses_alpha;          /* takes a scalar: the case table gives it alpha classes */
} bw_exercise;

int bw_exercise_count(void);
const bw_exercise *bw_exercise_at(int i);
const bw_exercise *bw_exercise_find(const char *name); /* NULL if unknown */

/* NULL when every declaration of the table can be honoured; else a static
 * sentence naming the exercise and what is wrong (bwgrade refuses to start). */
const char *bw_exercise_table_problem(void);
/* The same for one declaration (ex's output and in_place already derived). */
const char *bw_exercise_problem(const bw_exercise *ex);

const char *bw_shape_name(bw_shape s);     /* "elementwise", "reduction", "matrix" */
const char *bw_role_name(bw_role r);       /* "in", "out", "inout" */
const char *bw_extent_name(bw_extent e);   /* "n", "one", "rows_cols", "cols_rows" */

/* Arrays read before the call (IN and INOUT). */
int bw_exercise_n_inputs(const bw_exercise *ex);
/* Is array k read by the function (so it must come back unchanged unless it is the output)? */
int bw_exercise_is_input(const bw_exercise *ex, int k);
/* Elements of array k in a call over n elements (a matrix: n = rows * cols). */
int64_t bw_exercise_count_of(const bw_exercise *ex, int k, int64_t n);
/* The output's element type. */
bw_type bw_exercise_out_type(const bw_exercise *ex);
/* The widest element of the arrays that hold n elements, in bytes: pointer
 * offsets are whole elements of it below 256 bytes. */
int bw_exercise_elem_bytes(const bw_exercise *ex);
/* Offsets (in elements) a case may use: 0 .. max - 1, so that an offset's
 * bytes stay below the 256 bytes every array shares. */
int bw_exercise_max_offset(const bw_exercise *ex);

/* Bytes a call over n elements must move: every array it reads once, every
 * array it writes once. */
int64_t bw_exercise_call_bytes(const bw_exercise *ex, int64_t n);
/* The least DRAM traffic of one call of n elements, in bytes: every input
 * byte read once (the benchmark flushes L2 first), and only the output bytes
 * an L2 of l2_bytes cannot hold. A write-back L2 may still hold up to its
 * size of output when the kernel ends, so a call whose output fits times
 * faster than its bytes at the datasheet peak, and honestly so. */
double bw_exercise_least_dram_bytes(const bw_exercise *ex, int64_t n, int64_t l2_bytes);

#endif
