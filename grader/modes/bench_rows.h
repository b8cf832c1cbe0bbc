/* What bench_mode.c and bench_rows.c share: a row's size and offset, the
 * sampling settings, the steps that measure and judge one row
 * (bench_rows.c), and the timed calls both make (bench_mode.c). Private to
 * bwgrade bench. */
#ifndef BWLAB_BENCH_ROWS_H
#define BWLAB_BENCH_ROWS_H
#include <stdint.h>
#include "bench_mode.h"
#include "bench_witness.h"
#include "report_text.h"
#include "runner.h"

typedef struct {
    bw_size size;
    int offset;
} row_spec;

/* Sampling settings shared by the function's rows and the copy. */
typedef struct {
    int warmup, min_samples, max_samples, host_batch, flush_l2;
    double target_noise, time_cap_s;
} sampling;

/* ---- bench_mode.c ---- */

void apply_sampling(bw_request *req, const sampling *s);
/* A row's or a copy's status word for an outcome other than a pass. */
const char *outcome_status(bw_outcome o);
/* A BENCH or COPY_BENCH with the grader's clock on every sample. */
bw_outcome witnessed_bench(bw_runner *run, const bw_request *req, bw_witness_summary *seen,
                           bw_reply *r, char **detail);

/* ---- bench_rows.c ---- */

/* The rows to measure (malloc'd), *count of them. */
row_spec *make_rows(const bw_bench_opts *o, int *count);
void init_row(bw_bench_row *row, const bw_exercise *ex, row_spec spec);
/* Which rows fit: status NULL (to be measured) or "skipped". */
void mark_rows_that_fit(bw_runner *run, const bw_exercise *ex, const bw_reply *device,
                        bw_bench_row *rows, int n_rows, int64_t *largest);
/* Times one row and checks its output; 0 with *out filled for judge_row. */
int measure_row(bw_runner *run, bw_runner *base, const bw_bench_opts *o,
                const sampling *s, bw_bench_row *row, int fresh, bw_reply *out);
/* A measured row against the rules that need the copy's figures. */
void judge_row(const bw_reply *r, const sampling *s, const bw_bench_report *rep,
               bw_bench_row *row);
/* A row the clock refused, timed once more in a fresh worker. */
void retry_if_clock_refused(bw_runner *run, bw_runner *base, const bw_bench_opts *o,
                            const sampling *s, const bw_bench_report *rep,
                            bw_bench_row *row);

#endif
