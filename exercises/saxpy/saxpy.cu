// Exercise: saxpy, y = a * x + y in fp32, in place: the course's first kernel.
// Contract: saxpy.h. Guide: handout/saxpy.md.
// Check:  python3 run.py test saxpy      Speed:  python3 run.py benchmark saxpy
#include "saxpy.h"

void saxpy(int n, float a, const float* x, float* y)
{
    // TODO: launch your kernel here. Until you do, `python3 run.py test`
    // reports "saxpy: not implemented yet (no case changed the output)".
    (void)n; (void)a; (void)x; (void)y;
}
