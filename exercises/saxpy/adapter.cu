// Grader glue: calls the student's saxpy with the declared arrays (exercise.def).
#include "saxpy.h"
#include "protocol.h"

extern "C" void bw_student_call(const bw_call *c)
{
    saxpy(static_cast<int>(c->n), c->scalars[0], static_cast<const float *>(c->arrays[0]),
          static_cast<float *>(c->arrays[1]));
}
