/* One case, start to end: build its images, call the student's function in
 * the worker within a time limit, check, and re-run a failure to tell a race
 * from a plain bug. */
#ifndef BWLAB_CASE_RUN_H
#define BWLAB_CASE_RUN_H
#include <stdint.h>
#include "case_result.h"
#include "cases.h"
#include "runner.h"

/* Seconds a RUN call of n elements may take (see case_run.c). */
double bw_case_time_limit(const bw_exercise *ex, int64_t n, int sanitized);
/* The limit once a case has hung: a fifth of the usual. A kernel that hangs
 * everywhere then costs the full limit once, not once per case, while an
 * honest call stays far inside it (the largest case's copies take ~1 s). */
double bw_case_time_limit_after_hang(const bw_exercise *ex, int64_t n, int sanitized);

/* Runs one case in RUN mode, with all checks and the race re-run. limit_s:
 * seconds each call may take; 0 for bw_case_time_limit. */
void bw_test_run_case(bw_runner *run, const bw_case *c, const char *sanitizer, double limit_s,
                      bw_case_result *r);

#endif
