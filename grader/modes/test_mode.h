/* `bwgrade test`: which cases run, in which order, and when to stop. */
#ifndef BWLAB_TEST_MODE_H
#define BWLAB_TEST_MODE_H
#include <stdint.h>
#include "case_result.h"
#include "cases.h"
#include "exercise.h"
#include "format_alloc.h"

/* Consecutive crashes/hangs/CUDA errors after which the remaining cases are
 * skipped, so a kernel that hangs everywhere does not take hours. */
#define BW_GIVE_UP_AFTER 8
/* ... and after this many in all: each costs a fresh worker (a new CUDA
 * context), and a kernel that faults at every misaligned offset would
 * otherwise need hundreds of them, a cost multiplied across a class. */
#define BW_GIVE_UP_TOTAL 32

typedef struct {
    const bw_exercise *ex;
    const char *worker_path;
    uint64_t seed;
    int hidden;
    int case_index;          /* -1: every case */
    unsigned groups;         /* cases of these groups only (bit 1u << group); 0: every
                              * group, or under a sanitizer small, medium and special */
    int group_fail_fast;     /* once a case of a group fails, skip the group's other
                              * cases: one failure decides a group's points */
    int fail_fast;           /* stop once the diagnosis is clear (students' default in
                              * run.py test; grading never sets it) */
    const char *sanitize;    /* NULL, or tools as accepted by bw_parse_sanitizers */
    double case_limit_s;     /* > 0: no case's time limit exceeds it (run.py grade's
                              * memcheck run after the plain test hung) */
    const char *json_path;   /* NULL: no JSON */
    const char *device_lock; /* NULL, or a lock file shared with other bwgrade
                              * processes on this GPU (device_lock.h) */
    const char *baseline_worker; /* NULL: bw_worker_baseline beside bwgrade; which
                              * cases fit is its word (trusted_device.h) */
    int quiet;
} bw_test_opts;

/* Runs the whole test mode; returns the process exit code (0, 1, 2 or 3). */
int bw_test_main(const bw_test_opts *o);

#define BW_MAX_SANITIZERS 3
/* "memcheck,racecheck", "initcheck", "all" -> tool names in tools[] (static
 * strings, no repeats). Returns the count, or -1 for an unknown or empty name. */
int bw_parse_sanitizers(const char *list, const char *tools[BW_MAX_SANITIZERS]);

#endif
