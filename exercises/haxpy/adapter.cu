// Grader glue: calls the student's haxpy with the arrays in table order.
#include "haxpy.h"
#include "protocol.h"

extern "C" void bw_student_call(int n, float alpha, void *const *arrays)
{
    haxpy(n, alpha, static_cast<const nv_bfloat16 *>(arrays[0]),
          static_cast<nv_bfloat16 *>(arrays[1]));
}
