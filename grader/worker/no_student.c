/* bw_worker_baseline: the worker core with an empty student call. No
 * submission's code is linked in, so what it times cannot be tampered with:
 * the copies that set the benchmark's baseline, and the cost of a sample
 * around a call that does nothing (bench_witness.h). */
#include "protocol.h"

void bw_student_call(const bw_call *call) { (void)call; }
