// CORPUS: deliberately broken: does nothing (the kit's stub, untouched).
// Nothing is ever written, so the grader must say "not implemented".
#include "vector_sum.h"

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c)
{
    (void)n; (void)a; (void)b; (void)c;
}
