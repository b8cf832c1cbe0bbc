/* The exercise table's checks (grader/judge/exercise_table.c) on
 * declarations made here: a matrix rule's .source must be a copy or a
 * transpose as its arrays' extents say, since the benchmark rotates and
 * moves elements on that assumption (grader/protocol/transplant.h). */
#include <string.h>
#include "check_support.h"
#include "exercise.h"

static int64_t transposed(int64_t o, int64_t rows, int64_t cols)
{
    (void)cols;
    return (o % rows) * cols + o / rows;   /* out (c, r) at c * rows + r holds in (r, c) */
}

static int64_t same(int64_t o, int64_t rows, int64_t cols)
{
    (void)rows;
    (void)cols;
    return o;
}

static int64_t flipped(int64_t o, int64_t rows, int64_t cols)
{
    return (rows - 1 - o / cols) * cols + o % cols;   /* out row r holds in row rows - 1 - r */
}

static const char *problem(bw_extent out, int64_t (*source)(int64_t, int64_t, int64_t))
{
    static bw_array_decl arrays[2];
    static bw_rule rule;
    static bw_exercise ex;
    arrays[0] = (bw_array_decl){"in", BW_BF16, BW_ROLE_IN, BW_EXTENT_ROWS_COLS};
    arrays[1] = (bw_array_decl){"out", BW_BF16, BW_ROLE_OUT, out};
    memset(&rule, 0, sizeof rule);
    rule.source = source;
    memset(&ex, 0, sizeof ex);
    ex.name = "toy_matrix";
    ex.summary = "a toy";
    ex.shape = BW_SHAPE_MATRIX;
    ex.arrays = arrays;
    ex.n_arrays = 2;
    ex.rule = &rule;
    ex.output = 1;
    return bw_exercise_problem(&ex);
}

/* Catches a check that lets a flip through (the benchmark would then call
 * every right answer not_recomputed), or one that refuses the transpose or
 * a copy. */
START_TEST(a_matrix_source_must_be_a_copy_or_a_transpose)
{
    ck_assert_ptr_null(bw_exercise_table_problem());
    ck_assert_ptr_null(problem(BW_EXTENT_COLS_ROWS, transposed));
    ck_assert_ptr_null(problem(BW_EXTENT_ROWS_COLS, same));
    const char *p = problem(BW_EXTENT_ROWS_COLS, flipped);
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(strstr(p, ".source") != NULL, "%s", p);
    ck_assert_ptr_nonnull(problem(BW_EXTENT_COLS_ROWS, same));    /* a copy into a transposed array */
    ck_assert_ptr_nonnull(problem(BW_EXTENT_ROWS_COLS, transposed));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("exercise_table");
    TCase *t = tcase_create("rules");
    tcase_add_test(t, a_matrix_source_must_be_a_copy_or_a_transpose);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return bw_run_suite(suite()); }
