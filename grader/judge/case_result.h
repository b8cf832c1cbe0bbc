/* What the grader found for one case. */
#ifndef BWLAB_CASE_RESULT_H
#define BWLAB_CASE_RESULT_H
#include <stdint.h>
#include "validate.h"

typedef enum {
    BW_OUTCOME_PASS = 0,
    BW_OUTCOME_FAIL,        /* ran, but output, guards or inputs are wrong */
    BW_OUTCOME_CRASH,       /* the worker died: signal, exit(), abort */
    BW_OUTCOME_TIMEOUT,     /* did not return within the case's time limit */
    BW_OUTCOME_CUDA_ERROR,  /* a CUDA error after the call (illegal address, launch failure, ...) */
    BW_OUTCOME_SKIPPED      /* not run: too little memory, and so on (detail says why) */
} bw_outcome;

/* What a reduction's or a matrix's check found beyond the element counts:
 * what the diagnoses read to tell a lost element from a wrong sum, or a
 * copy from a transpose. All 0 for an elementwise exercise. */
typedef struct {
    /* REDUCTION */
    int sum_checked;            /* the result was read */
    double sum_exact;           /* the exact sum (NaN, +-Inf possible) */
    double sum_bound;           /* how far a correct result may land, before its own rounding */
    double sum_abs;             /* the sum of the terms' magnitudes */
    uint32_t sum_got;           /* the result, as bits of its type */
    /* MATRIX: of the wrong output elements, those that hold ... */
    int64_t copy_like;          /* ... the input element at their own index (a copy) */
    int64_t swap_like;          /* ... what rows and cols swapped would put there */
    int64_t interior_bad[3];    /* wrong elements whose source lies in whole 16, 32, 64 tiles */
} bw_shape_findings;

typedef struct {
    bw_outcome outcome;
    bw_compare_result out;          /* valid when the case ran to completion */
    int nothing_written;            /* output identical to what was there before the call */
    int64_t guard_bad_bytes;        /* bytes changed in guard zones, all arrays */
    int guard_array;                /* first array with a damaged guard, -1 if none */
    int64_t guard_first, guard_last;/* byte positions relative to that array's start */
    int input_array;                /* first input array changed by the call, -1 if none */
    int64_t input_changed, input_first;
    int nondeterministic;           /* a re-run on the same inputs gave other output bits */
    bw_shape_findings shape;
    int not_run;                    /* SKIPPED by --fail-fast, not for a reason of its own */
    int never_started;              /* CRASH: the worker would not start at all, where the
                                     * baseline worker did (trusted_device.h) */
    int forged_reply;               /* CRASH: a reply the kit's worker never sends (runner.h) */
    char *detail;                   /* malloc'd or NULL: signal, CUDA error, skip reason */
    char *student_output;           /* malloc'd or NULL: captured stdout/stderr, capped */
    char *sanitizer_note;           /* malloc'd or NULL: what the sanitizer noted that costs
                                     * nothing (CUDA API errors the code got back) */
    double seconds;
} bw_case_result;

const char *bw_outcome_name(bw_outcome o);   /* "pass", "fail", "crash", ... */
/* A result with nothing found yet (indices -1, pointers NULL). */
void bw_case_result_init(bw_case_result *r);
void bw_case_result_free(bw_case_result *r); /* frees detail and student_output */

#endif
