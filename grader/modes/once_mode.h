/* `bwgrade once`: exactly one validated call of the student's function at a
 * chosen size, so that a profiler (run.py profile) sees only those kernels. */
#ifndef BWLAB_ONCE_MODE_H
#define BWLAB_ONCE_MODE_H
#include <stdint.h>
#include "bench_mode.h"
#include "exercise.h"

/* Returns the exit code: 0 the call was right, 1 it was not, 3 could not run. */
int bw_once_main(const bw_exercise *ex, const char *worker_path, bw_size size, int offset,
                 uint64_t seed);

#endif
