/* What a test or bench run found, and its student-facing text form.
 * The structures here are filled by test_mode.c / bench_mode.c (and
 * bench_rows.c) and read by both report writers (text here, JSON in
 * report_json.h); the writers only format, so they can be tested on made-up
 * results. */
#ifndef BWLAB_REPORT_TEXT_H
#define BWLAB_REPORT_TEXT_H

/* Diagnoses are word-wrapped to this many columns. */
#define WRAP_WIDTH 78
#include <stdint.h>
#include <stdio.h>
#include "containment.h"
#include "bf16.h"
#include "case_result.h"
#include "cases.h"
#include "diagnose.h"
#include "format_value.h"
#include "exercise.h"
#include "protocol.h"

/* ---- test mode ---------------------------------------------------------- */

/* One pass over a set of cases: the plain run, or one sanitizer tool's. */
typedef struct {
    const char *sanitizer;          /* NULL for a plain run, else "memcheck", ... */
    const bw_case *cases;           /* cases[i] produced results[i] */
    const bw_case_result *results;
    int count;
    const bw_diagnosis *diags;
    int n_diags;
    int passed, failed, skipped;    /* failed: fail, crash, timeout, cuda_error */
    int not_run;                    /* of the skipped: left out by --fail-fast */
    const char *status;             /* "pass", "fail" or "not_implemented" */
    const char *note;               /* NULL, or one sentence shown under the summary */
} bw_test_section;

typedef struct {
    const bw_exercise *ex;
    uint64_t seed;
    int hidden;
    const bw_reply *device;         /* the worker's HELLO reply; NULL if none started */
    const bw_containment *containment;  /* what confined the workers; NULL: not said */
    const char *status;             /* "pass", "fail", "not_implemented" or "error" */
    const char *error;              /* status "error": what stopped the run */
    int no_device;                  /* the error: the baseline worker found no device */
    const bw_test_section *sections;
    int n_sections;
    int passed, failed, skipped, total;   /* over all sections */
    int not_run;                          /* of the skipped: left out by --fail-fast */
} bw_test_report;

/* The report a student reads. quiet: one summary line per section. */
void bw_report_test_text(FILE *f, const bw_test_report *r, int quiet);

/* ---- bench mode --------------------------------------------------------- */

typedef struct {
    int64_t n;
    int64_t rows, cols;             /* a matrix's shape (rows * cols = n); 0 for a vector */
    int offset;
    int64_t bytes;                  /* memory traffic of one call */
    const char *status;             /* "ok", "wrong", "impossible", "timing_mismatch",
                                       "not_recomputed", "crash", "timeout", "cuda_error",
                                       "skipped" */
    char *detail;                   /* malloc'd or NULL */
    const char *rule;               /* the submission rule a refused figure broke, or NULL */
    int timed;                      /* the timing fields below are filled */
    int samples;
    double ms_median, ms_q1, ms_q3, ms_min, ms_max, noise;
    double timer_ms;                /* the events' own span, already subtracted */
    double event_ms, host_ms, ratio;    /* host clock cross-check; ratio NAN if none */
    double lag_ms, lag_excess_ms;       /* per-sample host-clock lag (median), and its
                                           excess over the copy's; NAN if none */
    int calls_checked, calls_bad, first_bad_call, first_bad_rotation; /* output hashes */
    int by_value;                   /* results compared by value (a reduction), not hashed */
    double first_bad_value, want_value;   /* ... the first wrong result, and the first call's */
    long worker_pid;                /* the fresh worker process the row was timed in; 0: none */
    /* The grader's own clock (bench_witness.h): medians per sample, ms, of
     * the student's worker and of the baseline worker on the same row */
    int clocked;                    /* these fields are filled */
    int clock_retried;              /* timed a second time after the clock refused it */
    char *clock_first_refusal;      /* malloc'd: the refused first timing's detail when
                                       the row was timed again, whatever the retry gave */
    int clock_samples, base_clock_samples;
    double span_ms, prep_ms, base_span_ms, base_prep_ms;
    double clock_ms, charged_ms, allowed_ms; /* bench_witness.h's verdict; NAN: none */
    double gbs, pct_peak, pct_copy;     /* NAN when no figure is reported */
    double pct_memcpy;              /* against cudaMemcpy alone (policies written before
                                       the baseline became the faster copy) */
} bw_bench_row;

typedef struct {
    int run;                        /* 0 with --no-copy */
    const char *method;             /* "memcpy" or "kernel" (BW_COPY_*) */
    int64_t bytes;                  /* copied one way; read + write is twice this */
    const char *status;             /* "ok", or why there is no figure */
    char *detail;                   /* malloc'd or NULL */
    int samples;
    double ms_median, gbs, pct_peak;    /* NAN when not measured */
    double ms_q1, ms_q3;                /* quartiles of the samples (the spread scoring uses) */
    double lag_ms;                      /* per-sample host-clock lag (median); NAN if none */
    double timer_ms;                    /* the events' own span, already subtracted */
} bw_bench_copy;

typedef struct {
    const bw_exercise *ex;
    const char *label;
    const bw_reply *device;         /* NULL if no worker started */
    const bw_containment *containment;  /* what confined the workers; NULL: not said */
    double peak_gbs;                /* datasheet; NAN if the device did not say */
    const char *status;             /* "ok", "fail", "wrong" or "error" */
    const char *error;              /* status "error": why */
    int no_device;                  /* the error: the baseline worker found no device */
    bw_bench_copy copy;             /* the baseline: the faster of copies[] */
    bw_bench_copy copies[2];        /* [BW_COPY_MEMCPY], [BW_COPY_KERNEL] */
    bw_bench_row *rows;
    int n_rows;
} bw_bench_report;

/* Datasheet DRAM bandwidth from the HELLO reply: clock x 2 (double data
 * rate) x bus width in bytes. NAN when clock or width is unknown (0). */
double bw_peak_gbs(const bw_reply *device);

/* Printed as a bench run goes, so a long run shows progress. */
void bw_report_bench_header(FILE *f, const bw_bench_report *r);
void bw_report_bench_copy(FILE *f, const bw_bench_report *r);
void bw_report_bench_table_head(FILE *f, const bw_bench_report *r);
void bw_report_bench_row(FILE *f, const bw_bench_row *row);
void bw_report_bench_footer(FILE *f, const bw_bench_report *r);


#endif
