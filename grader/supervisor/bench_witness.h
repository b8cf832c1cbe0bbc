/* The grader's own clock on a benchmark (protocol.h, TICK): a worker's
 * figures come from events and clocks inside its own process, which student
 * code shares and can rewrite (patched cudaEventElapsedTime, a slowed
 * CLOCK_MONOTONIC). bwgrade notes on its own clock when each timed sample
 * starts and ends, and compares the spans with those of the baseline worker
 * (no student code) on the same row: what the student's worker took beyond
 * them is what its call cost, whatever the worker says. */
#ifndef BWLAB_BENCH_WITNESS_H
#define BWLAB_BENCH_WITNESS_H
#include "protocol.h"
#include "supervisor.h"

typedef struct {
    int count;           /* samples whose DONE came */
    int cap;
    double *span_ms;     /* per sample: from the go to its DONE */
    double *prep_ms;     /* per sample k >= 1: from DONE k-1 to READY k */
    double last_done;    /* bw_mono_s of the latest DONE */
    int ready;           /* a READY came and its DONE is due */
} bw_witness;

/* Medians of a witness, ms; NAN where it saw nothing. */
typedef struct {
    int samples;
    double span_ms, prep_ms;
} bw_witness_summary;

void bw_witness_init(bw_witness *wit);
void bw_witness_free(bw_witness *wit);
bw_witness_summary bw_witness_summarize(const bw_witness *wit);

/* Sends req (BENCH or COPY_BENCH; tick is set here) and answers the
 * worker's TICKs until its final reply, within timeout_s in all. A TICK out
 * of order, or a final OK reply whose sample count is not the number of
 * samples the clock saw, ends the worker (BW_CALL_PROTOCOL). Other results
 * as for bw_worker_call. */
bw_call_status bw_bench_dialogue(bw_worker *w, const bw_request *req, bw_reply *rep,
                                 double timeout_s, bw_witness *wit, char **why);

/* What the grader's clock says one call of the student's took: its span
 * beyond the baseline's, plus its preparation's excess beyond the
 * baseline's and a slack (work moved before the clock starts). */
typedef struct {
    double clock_ms;       /* span - baseline span */
    double prep_excess_ms; /* prep - baseline prep */
    double charged_ms;     /* what the call cost by the grader's clock */
    double allowed_ms;     /* the least figure accepted */
} bw_witness_verdict;

/* 0 when the worker's reported ms is at least verdict->allowed_ms. */
int bw_witness_judge(bw_witness_summary student, bw_witness_summary baseline, double reported_ms,
                     bw_witness_verdict *verdict);

#endif
