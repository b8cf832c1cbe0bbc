/* Kernels for the CPU stand-in worker written from an exercise's rule, so
 * that any exercise of the table (a new elementwise one included) runs
 * end to end without a GPU: a correct one and the canonical bugs of its
 * shape. A reduction's correct kernel sums as a GPU does (grid-stride
 * partial sums, block trees, blocks added in a scrambled order), since one
 * running sum over 2^24 elements is not a GPU's order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_kernels.h"
#include "exercise.h"

#define THREADS 65536          /* the emulated grid's threads */
#define BLOCK 256

static const bw_exercise *ex_of(const cpu_call *c) { return c->ex; }

static int vec_of(const bw_exercise *ex) { return 16 / bw_exercise_elem_bytes(ex); }

/* ---- elementwise ---------------------------------------------------------- */

static void reference(const cpu_call *c, int64_t n)
{
    const bw_exercise *ex = ex_of(c);
    float scalars[BW_MAX_SCALARS] = {c->alpha};
    ex->rule->reference(n, scalars, (void *const *)c->arrays, 1);
}

static int e_right(const cpu_call *c, const char **why)
{
    (void)why;
    reference(c, c->n);
    return 0;
}

static int e_nothing(const cpu_call *c, const char **why)
{
    (void)c;
    (void)why;
    return 0;
}

/* Whole 16-byte vectors only: the last n % V elements keep what they held. */
static int e_no_tail(const cpu_call *c, const char **why)
{
    (void)why;
    reference(c, c->n - c->n % vec_of(ex_of(c)));
    return 0;
}

/* A whole last vector stored: one element past n - 1 written. */
static int e_past_end(const cpu_call *c, const char **why)
{
    (void)why;
    const bw_exercise *ex = ex_of(c);
    reference(c, c->n);
    if (c->n % vec_of(ex) != 0)
        bw_elem_store(bw_exercise_out_type(ex), c->arrays[ex->output], c->n, 0x1234u);
    return 0;
}

/* Subnormal inputs and results flushed to zero. */
static int e_ftz(const cpu_call *c, const char **why)
{
    (void)why;
    const bw_exercise *ex = ex_of(c);
    for (int k = 0; k < ex->n_arrays; k++) {
        bw_type t = ex->arrays[k].type;
        if (!bw_exercise_is_input(ex, k))
            continue;
        for (int64_t i = 0; i < c->n; i++) {
            uint32_t v = bw_elem_load(t, c->arrays[k], i);
            if (bw_elem_is_tiny(t, v))
                bw_elem_store(t, c->arrays[k], i, bw_elem_sign(t, v) ? (t == BW_F32 ? 0x80000000u : 0x8000u) : 0u);
        }
    }
    reference(c, c->n);
    bw_type t = bw_exercise_out_type(ex);
    for (int64_t i = 0; i < c->n; i++) {
        uint32_t v = bw_elem_load(t, c->arrays[ex->output], i);
        if (bw_elem_is_tiny(t, v))
            bw_elem_store(t, c->arrays[ex->output], i, bw_elem_sign(t, v) ? (t == BW_F32 ? 0x80000000u : 0x8000u) : 0u);
    }
    return 0;
}

/* ---- a reduction ---------------------------------------------------------- */

typedef enum { SUM_RIGHT, SUM_BF16_ACC, SUM_LOST_TAIL, SUM_TWICE_FIRST, SUM_NOT_ZEROED,
               SUM_LOST_BLOCK, SUM_RACY } sum_bug;

static double term_at(const cpu_call *c, int64_t i)
{
    const bw_exercise *ex = ex_of(c);
    bw_type t = ex->arrays[0].type;
    uint32_t v = bw_elem_load(t, c->arrays[0], i);
    float scalars[BW_MAX_SCALARS] = {c->alpha};
    double in[1] = {bw_elem_to_double(t, v)};
    return ex->rule->term(scalars, in);
}

static float round_bf16(float f) { return bf16_to_float(bf16_from_float(f)); }

static int reduce(const cpu_call *c, sum_bug b)
{
    const bw_exercise *ex = ex_of(c);
    int64_t n = c->n;
    int64_t end = b == SUM_LOST_TAIL ? n - n % 8 : n;
    if (b == SUM_LOST_BLOCK)
        end = n - n % 2048;   /* a grid rounded down, 2048 elements a block */
    float *part = calloc(THREADS, sizeof *part);
    if (!part)
        return -1;
    for (int64_t th = 0; th < THREADS; th++) {
        float s = 0.0f;
        for (int64_t i = th; i < end; i += THREADS) {
            float x = (float)term_at(c, i);
            s = b == SUM_BF16_ACC ? round_bf16(s + x) : s + x;
        }
        part[th] = s;
    }
    if (b == SUM_TWICE_FIRST && n > 0)
        part[0] += (float)term_at(c, 0);
    /* Each block's tree, then the blocks added in a scrambled order, as
     * atomics would. A racy kernel loses one block's sum on every other run. */
    float total = 0.0f;
    int blocks = THREADS / BLOCK;
    for (int j = 0; j < blocks; j++) {
        int blk = (int)(((unsigned)j * 40503u) % (unsigned)blocks);
        for (int w = BLOCK / 2; w > 0; w /= 2)
            for (int t = 0; t < w; t++)
                part[blk * BLOCK + t] += part[blk * BLOCK + t + w];
        if (b == SUM_RACY && (c->run & 1u) && blk == 0)
            continue;
        total += part[blk * BLOCK];
    }
    free(part);
    bw_type t = bw_exercise_out_type(ex);
    float before = (float)bw_elem_to_double(t, bw_elem_load(t, c->arrays[ex->output], 0));
    if (b == SUM_NOT_ZEROED)
        total += before;
    bw_elem_store(t, c->arrays[ex->output], 0, bw_elem_from_float(t, total));
    return 0;
}

#define SUM_KERNEL(fname, b)                                   \
    static int fname(const cpu_call *c, const char **why)      \
    {                                                          \
        *why = "cpu stand-in: out of memory";                  \
        return reduce(c, b);                                   \
    }
SUM_KERNEL(s_right, SUM_RIGHT)
SUM_KERNEL(s_bf16_acc, SUM_BF16_ACC)
SUM_KERNEL(s_lost_tail, SUM_LOST_TAIL)
SUM_KERNEL(s_twice_first, SUM_TWICE_FIRST)
SUM_KERNEL(s_not_zeroed, SUM_NOT_ZEROED)
SUM_KERNEL(s_lost_block, SUM_LOST_BLOCK)
SUM_KERNEL(s_racy, SUM_RACY)

/* ---- a matrix ------------------------------------------------------------- */

typedef enum { MAT_RIGHT, MAT_COPY, MAT_SWAPPED, MAT_EDGE32 } mat_bug;

static int matrix(const cpu_call *c, mat_bug b)
{
    const bw_exercise *ex = ex_of(c);
    int in_k = ex->output == 0 ? 1 : 0;
    bw_type ti = ex->arrays[in_k].type, to = bw_exercise_out_type(ex);
    int64_t rows = c->rows, cols = c->cols;
    for (int64_t o = 0; o < c->n; o++) {
        int64_t src = ex->rule->source(o, rows, cols);
        if (b == MAT_COPY)
            src = o;
        else if (b == MAT_SWAPPED)
            src = ex->rule->source(o, cols, rows);
        else if (b == MAT_EDGE32) {
            int64_t r = src / cols, col = src % cols;
            if (r >= rows - rows % 32 || col >= cols - cols % 32)
                continue;   /* a partial tile: skipped */
        }
        bw_elem_store(to, c->arrays[ex->output], o, bw_elem_load(ti, c->arrays[in_k], src));
    }
    return 0;
}

#define MAT_KERNEL(fname, b)                                   \
    static int fname(const cpu_call *c, const char **why)      \
    {                                                          \
        (void)why;                                             \
        return matrix(c, b);                                   \
    }
MAT_KERNEL(m_right, MAT_RIGHT)
MAT_KERNEL(m_copy, MAT_COPY)
MAT_KERNEL(m_swapped, MAT_SWAPPED)
MAT_KERNEL(m_edge32, MAT_EDGE32)

/* ---- the table ------------------------------------------------------------ */

typedef struct {
    bw_shape shape;
    const char *variant;
    cpu_kernel_fn fn;
} entry;

static const entry kernels[] = {
    {BW_SHAPE_ELEMENTWISE, "right", e_right},   {BW_SHAPE_ELEMENTWISE, "nothing", e_nothing},
    {BW_SHAPE_ELEMENTWISE, "no_tail", e_no_tail}, {BW_SHAPE_ELEMENTWISE, "past_end", e_past_end},
    {BW_SHAPE_ELEMENTWISE, "ftz", e_ftz},
    {BW_SHAPE_REDUCTION, "right", s_right},     {BW_SHAPE_REDUCTION, "nothing", e_nothing},
    {BW_SHAPE_REDUCTION, "bf16_acc", s_bf16_acc}, {BW_SHAPE_REDUCTION, "lost_tail", s_lost_tail},
    {BW_SHAPE_REDUCTION, "twice_first", s_twice_first},
    {BW_SHAPE_REDUCTION, "not_zeroed", s_not_zeroed},
    {BW_SHAPE_REDUCTION, "lost_block", s_lost_block}, {BW_SHAPE_REDUCTION, "racy", s_racy},
    {BW_SHAPE_MATRIX, "right", m_right},        {BW_SHAPE_MATRIX, "nothing", e_nothing},
    {BW_SHAPE_MATRIX, "copy", m_copy},          {BW_SHAPE_MATRIX, "swapped", m_swapped},
    {BW_SHAPE_MATRIX, "edge32", m_edge32},
};

cpu_kernel_fn cpu_shape_kernel_find(const char *exercise, const char *variant)
{
    const bw_exercise *ex = bw_exercise_find(exercise);
    if (!ex)
        return NULL;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if (kernels[i].shape == ex->shape && strcmp(kernels[i].variant, variant) == 0)
            return kernels[i].fn;
    return NULL;
}
