/* `bwgrade test`, and the per-case machinery that `bwgrade bench` reuses:
 * a runner (shared memory plus a worker that is restarted when it dies),
 * and a case's private data (inputs, expected output) with the checks. */
#ifndef BWLAB_TEST_MODE_H
#define BWLAB_TEST_MODE_H
#include <stdint.h>
#include "case_result.h"
#include "cases.h"
#include "exercise.h"
#include "format_alloc.h"
#include "image.h"
#include "protocol.h"
#include "shm.h"

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
    const char *sanitize;    /* NULL, or tools as accepted by bw_parse_sanitizers */
    const char *json_path;   /* NULL: no JSON */
    int quiet;
} bw_test_opts;

/* Runs the whole test mode; returns the process exit code (0, 1, 2 or 3). */
int bw_test_main(const bw_test_opts *o);

#define BW_MAX_SANITIZERS 3
/* "memcheck,racecheck", "initcheck", "all" -> tool names in tools[] (static
 * strings, no repeats). Returns the count, or -1 for an unknown or empty name. */
int bw_parse_sanitizers(const char *list, const char *tools[BW_MAX_SANITIZERS]);

/* ---- shared with bench mode --------------------------------------------- */


typedef struct bw_runner bw_runner;

/* Creates the shared memory and starts a worker (under sanitizer if not
 * NULL). On failure returns NULL, sets *no_device when the worker said there
 * is no usable CUDA device, and puts a malloc'd message in *why. */
bw_runner *bw_runner_open(const bw_exercise *ex, const char *worker_path, const char *sanitizer,
                          char **why, int *no_device);
void bw_runner_close(bw_runner *run);
/* The HELLO reply of the latest worker started. */
const bw_reply *bw_runner_device(const bw_runner *run);
bw_shm *bw_runner_shm(bw_runner *run);
/* Replaces the worker with a fresh process, so that the next call is the
 * first its student code sees (nothing it settled on an earlier call, such as
 * a library's tile size, carries over). 0, or -1 with a malloc'd *why. */
int bw_runner_restart(bw_runner *run, char **why);
/* The process id of the current worker; 0 when none is running. */
long bw_runner_worker_pid(const bw_runner *run);

/* Sends req (starting a fresh worker first if the last one is gone) and
 * waits up to timeout_s. Returns BW_OUTCOME_PASS when the worker replied OK
 * (*rep filled); CRASH, TIMEOUT or CUDA_ERROR when the student's code is to
 * blame; SKIPPED for trouble on the grader's side. *detail (malloc'd or NULL)
 * says what happened; *output gets the captured student output or NULL. */
bw_outcome bw_runner_call(bw_runner *run, const bw_request *req, double timeout_s, bw_reply *rep,
                          char **detail, char **output);

/* compute-sanitizer's findings since the last take, with its banner and
 * zero-error summaries removed; NULL when there is nothing else. */
char *bw_runner_take_sanitizer_log(bw_runner *run);

/* One case's grader-side data: the inputs as generated and the expected output. */
typedef struct {
    const bw_exercise *ex;
    bw_case c;
    bw_image_layout layout;
    bf16_t *orig[BW_MAX_ARRAYS];  /* inputs; NULL for an output that is not read */
    bf16_t *expected;
    int threads;
} bw_case_data;

/* Allocates and fills inputs, runs the CPU reference. Returns 0, or -1 when
 * out of memory (d is then empty, safe to free). */
int bw_case_data_prepare(bw_case_data *d, const bw_exercise *ex, const bw_case *c, int sanitize,
                         int threads);
void bw_case_data_free(bw_case_data *d);

/* Lays out the images in shared memory: guards, inputs, BW_POISON in an
 * output that is not read. Returns the first image, or NULL with *why set. */
uint8_t *bw_case_data_build(const bw_case_data *d, bw_shm *shm, char **why);

/* A request of the given kind for these images. */
void bw_case_data_request(const bw_case_data *d, bw_req_kind kind, bw_request *req);

/* Checks the images the worker sent back: guards, inputs unchanged, output
 * against expected, nothing written. Sets outcome to PASS or FAIL. */
void bw_case_data_check(const bw_case_data *d, uint8_t *images, bw_case_result *r);

/* NULL when a case of n elements fits in host and device memory (with
 * margins), else a malloc'd sentence saying what it needs. extra_device:
 * device bytes needed besides the images. */
char *bw_memory_shortfall(const bw_exercise *ex, int64_t n, const bw_image_layout *l,
                          uint64_t extra_device, const bw_reply *device, bw_shm *shm);

/* Runs one case in RUN mode, with all checks and the race re-run. */
void bw_test_run_case(bw_runner *run, const bw_case *c, const char *sanitizer,
                      bw_case_result *r);

/* A result with nothing found yet (indices -1, pointers NULL). */
void bw_test_result_init(bw_case_result *r);

#endif
