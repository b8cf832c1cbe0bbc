/* transpose, out (cols x rows) = in (rows x cols) transposed, bf16 bit for
 * bit: what counts as correct (rule.h). */
#include "rule.h"

/* Output element o is out[c][r], at c * rows + r; it holds in[r][c]. */
static int64_t source(int64_t o, int64_t rows, int64_t cols)
{
    int64_t c = o / rows, r = o % rows;
    return r * cols + c;
}

const bw_rule transpose_rule = {
    .source = source,
    .correct = "out[c*rows + r] holds the bits of in[r*cols + c]",
};
