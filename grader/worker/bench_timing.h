/* BENCH and COPY_BENCH in the worker: time many calls with CUDA events,
 * each from freshly rotated arrays and (optionally) a cold L2, until the mean is
 * known well enough. Both requests share one sampling loop (bench_timing.c);
 * BENCH is bench_student.c, COPY_BENCH bench_copy.c. */
#ifndef BWLAB_BENCH_TIMING_H
#define BWLAB_BENCH_TIMING_H
#include <stdint.h>
#include "protocol.h"

/* BENCH. images: the shared-memory file's mapping, already checked to hold
 * n_arrays images. Fills r: status BW_REP_OK with the statistics, the
 * per-call hash checks and the hash of the first call (whose arrays the
 * images in shared memory then hold), or BW_REP_CUDA_ERROR /
 * BW_REP_BAD_REQUEST with message.
 * batch_event_ms and batch_host_ms are totals for the host_batch calls
 * (not per call); their ratio is what matters. */
void bw_bench_student(const bw_request *q, uint8_t *images, bw_reply *r, int chan);

/* COPY_BENCH: a device-to-device cudaMemcpyAsync of copy_bytes. */
void bw_bench_copy(const bw_request *q, bw_reply *r, int chan);

#endif
