/* Builds the exercise table from each exercise's declaration. CMake writes
 * bw_exercise_list.inc from exercises/exercises.def: for each exercise,
 *
 *   BW_EXERCISE_BEGIN(name)
 *   #include "name/exercise.def"
 *   BW_EXERCISE_END(name)
 *
 * It is read four times here with different meanings of the macros: the
 * rules' declarations, each exercise's scalars, its arrays, then the table. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "exercise.h"
#include "protocol.h"

#define BW_SUMMARY(text)
#define BW_SHAPE(kind)
#define BW_SCALAR(name)
#define BW_ARRAY(name, type, role, extent)

/* 1: the rules (reference/NAME.c) */
#define BW_EXERCISE_BEGIN(ex) extern const bw_rule ex##_rule;
#define BW_EXERCISE_END(ex)
#include "bw_exercise_list.inc"
#undef BW_EXERCISE_BEGIN
#undef BW_EXERCISE_END

/* 2: the scalars, NULL-terminated */
#undef BW_SCALAR
#define BW_SCALAR(name) #name,
#define BW_EXERCISE_BEGIN(ex) static const char *const ex##_scalars[] = {
#define BW_EXERCISE_END(ex) NULL};
#include "bw_exercise_list.inc"
#undef BW_EXERCISE_BEGIN
#undef BW_EXERCISE_END
#undef BW_SCALAR
#define BW_SCALAR(name)

/* 3: the arrays, name-NULL-terminated */
#undef BW_ARRAY
#define BW_ARRAY(name, type, role, extent) {#name, BW_##type, BW_ROLE_##role, BW_EXTENT_##extent},
#define BW_EXERCISE_BEGIN(ex) static const bw_array_decl ex##_arrays[] = {
#define BW_EXERCISE_END(ex) {NULL, BW_BF16, BW_ROLE_IN, BW_EXTENT_N}};
#include "bw_exercise_list.inc"
#undef BW_EXERCISE_BEGIN
#undef BW_EXERCISE_END
#undef BW_ARRAY
#define BW_ARRAY(name, type, role, extent)

/* 4: the table */
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)
#undef BW_SUMMARY
#undef BW_SHAPE
#define BW_SUMMARY(text) .summary = text,
#define BW_SHAPE(kind) .shape = BW_SHAPE_##kind,
#define BW_EXERCISE_BEGIN(ex)                                                           \
    {.name = #ex, .scalars = ex##_scalars, .n_scalars = COUNT(ex##_scalars),            \
     .arrays = ex##_arrays, .n_arrays = COUNT(ex##_arrays), .rule = &ex##_rule,
#define BW_EXERCISE_END(ex) },
static bw_exercise table[] = {
#include "bw_exercise_list.inc"
};

static int derived;

/* The fields derived from the declaration; the first call (bwgrade's start,
 * single-threaded) fills them. */
static void derive(void)
{
    if (derived)
        return;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        bw_exercise *ex = &table[i];
        ex->output = -1;
        for (int k = 0; k < ex->n_arrays; k++)
            if (ex->arrays[k].role & BW_ROLE_OUT) {
                if (ex->output < 0)
                    ex->output = k;
                ex->in_place |= ex->arrays[k].role == BW_ROLE_INOUT;
            }
        ex->uses_alpha = ex->n_scalars > 0;
    }
    derived = 1;
}

int bw_exercise_count(void) { return (int)(sizeof table / sizeof table[0]); }

const bw_exercise *bw_exercise_at(int i)
{
    derive();
    return (i >= 0 && i < bw_exercise_count()) ? &table[i] : NULL;
}

const bw_exercise *bw_exercise_find(const char *name)
{
    for (int i = 0; i < bw_exercise_count(); i++)
        if (strcmp(table[i].name, name) == 0)
            return bw_exercise_at(i);
    return NULL;
}

static int extent_fits(bw_shape s, const bw_array_decl *a)
{
    switch (s) {
    case BW_SHAPE_ELEMENTWISE: return a->extent == BW_EXTENT_N;
    case BW_SHAPE_REDUCTION:
        return a->role == BW_ROLE_IN ? a->extent == BW_EXTENT_N : a->extent == BW_EXTENT_ONE;
    case BW_SHAPE_MATRIX:
        return a->extent == BW_EXTENT_ROWS_COLS || a->extent == BW_EXTENT_COLS_ROWS;
    }
    return 0;
}

/* Where element (r, c) of a rows x cols call lies in an array of extent e. */
static int64_t place_of(bw_extent e, int64_t r, int64_t c, int64_t rows, int64_t cols)
{
    return e == BW_EXTENT_COLS_ROWS ? c * rows + r : r * cols + c;
}

/* The benchmark rotates a matrix exercise's arrays by whole rows of the
 * input (its output along the same axis) and moves single elements
 * (grader/protocol/transplant.h): both assume output element (r, c), in its
 * array's extent, is input element (r, c), a copy or a transpose. */
static int source_is_pointwise(const bw_exercise *ex)
{
    static const int64_t shapes[][2] = {{3, 5}, {4, 4}, {1, 7}, {7, 1}};
    const bw_extent in = ex->arrays[ex->output == 0 ? 1 : 0].extent;
    const bw_extent out = ex->arrays[ex->output].extent;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1];
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                if (ex->rule->source(place_of(out, r, c, rows, cols), rows, cols) !=
                    place_of(in, r, c, rows, cols))
                    return 0;
    }
    return 1;
}

const char *bw_exercise_problem(const bw_exercise *ex)
{
    int written = 0;
    if (ex->n_arrays < 1 || ex->n_arrays > BW_MAX_ARRAYS)
        return "it must declare 1 to 8 arrays (BW_ARRAY)";
    if (ex->n_scalars > BW_MAX_SCALARS)
        return "it may declare at most 4 scalars (BW_SCALAR)";
    if (!ex->summary)
        return "it has no BW_SUMMARY";
    for (int k = 0; k < ex->n_arrays; k++) {
        written += (ex->arrays[k].role & BW_ROLE_OUT) != 0;
        if (!extent_fits(ex->shape, &ex->arrays[k]))
            return ex->shape == BW_SHAPE_ELEMENTWISE ? "an elementwise exercise's arrays all hold N elements"
                   : ex->shape == BW_SHAPE_REDUCTION
                       ? "a reduction reads N-element arrays (IN) and writes ONE element (OUT)"
                       : "a matrix exercise's arrays are ROWS_COLS or COLS_ROWS";
    }
    if (written != 1)
        return "exactly one array must be written (OUT or INOUT)";
    const bw_rule *r = ex->rule;
    switch (ex->shape) {
    case BW_SHAPE_ELEMENTWISE:
        if (!r->reference || !r->exact)
            return "an elementwise rule needs .reference and .exact (reference/rule.h)";
        break;
    case BW_SHAPE_REDUCTION:
        if (!r->term || !r->bound)
            return "a reduction's rule needs .term and .bound (reference/rule.h)";
        if (ex->in_place)
            return "a reduction's result is OUT, not INOUT";
        break;
    case BW_SHAPE_MATRIX:
        if (!r->source)
            return "a matrix rule needs .source (reference/rule.h)";
        if (ex->in_place || bw_exercise_n_inputs(ex) != 1 || ex->n_arrays != 2)
            return "a matrix exercise reads one IN array and writes one OUT array";
        if (!source_is_pointwise(ex))
            return "a matrix rule's .source must give output element (r, c) input element "
                   "(r, c), each where its array's extent puts it (a copy or a transpose): "
                   "the benchmark's checks move elements on that assumption";
        break;
    }
    return NULL;
}

const char *bw_exercise_table_problem(void)
{
    static char text[256];
    derive();
    for (int i = 0; i < bw_exercise_count(); i++) {
        const char *p = bw_exercise_problem(&table[i]);
        if (p) {
            snprintf(text, sizeof text, "exercises/%s/exercise.def: %s", table[i].name, p);
            return text;
        }
    }
    return NULL;
}

const char *bw_shape_name(bw_shape s)
{
    static const char *const names[] = {"elementwise", "reduction", "matrix"};
    return names[s];
}

const char *bw_role_name(bw_role r)
{
    return r == BW_ROLE_IN ? "in" : r == BW_ROLE_OUT ? "out" : "inout";
}

const char *bw_extent_name(bw_extent e)
{
    static const char *const names[] = {"n", "one", "rows_cols", "cols_rows"};
    return names[e];
}

int bw_exercise_n_inputs(const bw_exercise *ex)
{
    int k = 0;
    for (int a = 0; a < ex->n_arrays; a++)
        k += bw_exercise_is_input(ex, a);
    return k;
}

int bw_exercise_is_input(const bw_exercise *ex, int k)
{
    return k >= 0 && k < ex->n_arrays && (ex->arrays[k].role & BW_ROLE_IN) != 0;
}

int64_t bw_exercise_count_of(const bw_exercise *ex, int k, int64_t n)
{
    return ex->arrays[k].extent == BW_EXTENT_ONE ? 1 : n;
}

bw_type bw_exercise_out_type(const bw_exercise *ex) { return ex->arrays[ex->output].type; }

int bw_exercise_elem_bytes(const bw_exercise *ex)
{
    int b = 2;
    for (int k = 0; k < ex->n_arrays; k++)
        if (ex->arrays[k].extent != BW_EXTENT_ONE && bw_type_bytes(ex->arrays[k].type) > b)
            b = bw_type_bytes(ex->arrays[k].type);
    return b;
}

int bw_exercise_max_offset(const bw_exercise *ex) { return 256 / bw_exercise_elem_bytes(ex); }

static void traffic(const bw_exercise *ex, int64_t n, double *reads, double *writes)
{
    *reads = *writes = 0.0;
    for (int k = 0; k < ex->n_arrays; k++) {
        double bytes = (double)bw_type_bytes(ex->arrays[k].type) * (double)bw_exercise_count_of(ex, k, n);
        if (ex->arrays[k].role & BW_ROLE_IN)
            *reads += bytes;
        if (ex->arrays[k].role & BW_ROLE_OUT)
            *writes += bytes;
    }
}

int64_t bw_exercise_call_bytes(const bw_exercise *ex, int64_t n)
{
    double r, w;
    traffic(ex, n, &r, &w);
    return (int64_t)(r + w);
}

double bw_exercise_least_dram_bytes(const bw_exercise *ex, int64_t n, int64_t l2_bytes)
{
    double reads, writes;
    traffic(ex, n, &reads, &writes);
    writes -= (double)(l2_bytes > 0 ? l2_bytes : 0);
    return reads + (writes > 0.0 ? writes : 0.0);
}
