/* A matrix exercise's case table: shapes rather than lengths. Every pair of
 * small dimensions; rows or columns of one; odd shapes that are no multiple
 * of any tile; tall and wide; and the largest that fit in an int's reach,
 * where 32-bit index or grid arithmetic wraps. */
#include "cases_build.h"

static const int64_t small_dims[] = {1, 2, 3, 5, 8, 17, 31, 33, 64, 65};

static const int64_t medium_shapes[][2] = {
    {1, 65537}, {65537, 1}, {255, 257}, {257, 255}, {1000, 1001}, {1001, 1000},
    {513, 4097}, {4097, 513}, {127, 8193}, {8193, 127}, {2047, 2049}, {64, 16384},
    {16384, 64}, {1024, 1024},
};
static const int medium_offsets[] = {0, 1, 7};

static const int64_t large_shapes[][2] = {
    {4099, 4093}, {4096, 4096}, {1048579, 17}, {17, 1048579},
    {1, 16777217}, {16777217, 1}, {3001, 5003}, {8191, 2049},
};

/* Every bit pattern (NaN payloads too) must arrive as it left. */
static const int64_t special_shapes[][2] = {
    {1, 1}, {7, 9}, {33, 31}, {64, 64}, {257, 255}, {1000, 3},
};

/* The largest square below 2^31 elements, and the widest pair of rows:
 * rows * cols fits an int, but a rounded-up grid or a byte offset does not. */
static const int64_t huge_shapes[][2] = {{46340, 46340}, {2, 1073741823}};

static void add_matrix(builder *b, bw_case_group g, int64_t rows, int64_t cols, int offset,
                       bw_value_class v)
{
    add_shaped(b, g, rows, cols, offset, v, "-", 0.0f);
}

static void matrix_public(builder *b)
{
    rng r = {bw_mix64(b->seed ^ UINT64_C(0x6D6174726978))};
    const int max_off = bw_exercise_max_offset(b->ex);
    int rot = 0;
    for (int i = 0; i < COUNT(small_dims); i++)
        for (int j = 0; j < COUNT(small_dims); j++)
            add_matrix(b, BW_GROUP_SMALL, small_dims[i], small_dims[j], rot++ % 16,
                       BW_VALUES_RANDOM);
    for (int i = 0; i < COUNT(medium_shapes); i++)
        for (int k = 0; k < COUNT(medium_offsets); k++)
            add_matrix(b, BW_GROUP_MEDIUM, medium_shapes[i][0], medium_shapes[i][1],
                       medium_offsets[k], BW_VALUES_RANDOM);
    for (int i = 0; i < COUNT(large_shapes); i++) {
        add_matrix(b, BW_GROUP_LARGE, large_shapes[i][0], large_shapes[i][1], 0,
                   BW_VALUES_RANDOM);
        add_matrix(b, BW_GROUP_LARGE, large_shapes[i][0], large_shapes[i][1],
                   1 + rng_below(&r, max_off - 1), BW_VALUES_RANDOM);
    }
    for (int i = 0; i < COUNT(special_shapes); i++)
        for (int k = 0; k < 2; k++)
            add_matrix(b, BW_GROUP_SPECIAL, special_shapes[i][0], special_shapes[i][1],
                       k == 0 ? 0 : 1 + rng_below(&r, 15), BW_VALUES_SPECIAL);
    for (int i = 0; i < COUNT(huge_shapes); i++)
        add_matrix(b, BW_GROUP_HUGE, huge_shapes[i][0], huge_shapes[i][1],
                   rng_below(&r, max_off), BW_VALUES_RANDOM);
}

/* A dimension from 1 to limit, small ones as often as the rest. */
static int64_t random_dim(rng *r, int limit)
{
    return rng_below(r, 2) ? 1 + rng_below(r, 16) : 1 + rng_below(r, limit);
}

static void matrix_hidden(builder *b)
{
    rng r = {bw_mix64(b->seed ^ UINT64_C(0x686964656D6174))};
    const int max_off = bw_exercise_max_offset(b->ex);
    for (int i = 0; i < 48; i++) {
        int64_t rows = random_dim(&r, 100), cols = random_dim(&r, 100);
        add_matrix(b, BW_GROUP_SMALL, rows, cols, rng_below(&r, max_off), BW_VALUES_RANDOM);
    }
    for (int i = 0; i < 16; i++) {
        int64_t rows = random_dim(&r, 2048), cols = 1 + rng_below(&r, (int)((1 << 20) / rows));
        add_matrix(b, group_for(rows * cols), rows, cols, rng_below(&r, max_off),
                   BW_VALUES_RANDOM);
    }
    for (int i = 0; i < 4; i++) {
        int64_t rows = random_dim(&r, 8192), cols = 1 + rng_below(&r, (int)((1 << 24) / rows));
        add_matrix(b, group_for(rows * cols), rows, cols, rng_below(&r, max_off),
                   BW_VALUES_RANDOM);
    }
    for (int i = 0; i < 4; i++)
        add_matrix(b, BW_GROUP_SPECIAL, random_dim(&r, 300), random_dim(&r, 300),
                   rng_below(&r, max_off), BW_VALUES_SPECIAL);
}

void bw_cases_matrix(builder *b, int hidden)
{
    matrix_public(b);
    if (hidden)
        matrix_hidden(b);
}
