/* `bwgrade bench`: a correctness gate, then bandwidth of the student's
 * function over a range of sizes and offsets, against the device's datasheet
 * peak and a plain device-to-device copy. */
#ifndef BWLAB_BENCH_MODE_H
#define BWLAB_BENCH_MODE_H
#include <stdint.h>
#include "exercise.h"

/* A benchmark size: n elements (rows 0), or a matrix of rows x cols. */
typedef struct {
    int64_t rows, cols;
} bw_size;

static inline int64_t bw_size_n(bw_size s) { return s.rows > 0 ? s.rows * s.cols : s.cols; }

typedef struct {
    const bw_exercise *ex;
    const char *worker_path;
    const char *label;        /* names the implementation in the JSON ("student") */
    const char *baseline_worker; /* NULL: bw_worker_baseline beside bwgrade */
    const bw_size *sizes;     /* NULL: the default size list */
    int n_sizes;
    const int *offsets;       /* NULL: the default offsets; with sizes given, {0} */
    int n_offsets;
    int no_copy;
    int quick;                /* one large size, shorter sampling */
    int profile_calls;        /* for a profiler: this many extra timed calls per row
                                 after the warmup, each bracketed with
                                 cudaProfilerStart/Stop; the run's figures are then
                                 not a measurement (one sample, no host batch) */
    const char *json_path;    /* NULL: no JSON */
    uint64_t seed;            /* for the gate's cases and the timed inputs */
} bw_bench_opts;

/* Runs the whole bench mode; returns the process exit code (0, 1 or 3). */
int bw_bench_main(const bw_bench_opts *o);

#endif
