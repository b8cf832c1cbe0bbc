/* A runner: the shared memory of the images plus the worker process that
 * runs student code, restarted when it dies. Used by bwgrade test, bench
 * and once. */
#ifndef BWLAB_RUNNER_H
#define BWLAB_RUNNER_H
#include "case_result.h"
#include "exercise.h"
#include "format_alloc.h"
#include "protocol.h"
#include "sanitizer_log.h"
#include "run_dialogue.h"
#include "shm.h"
#include "bench_witness.h"

typedef struct bw_runner bw_runner;

/* Creates the shared memory and starts a worker (under sanitizer if not
 * NULL). On failure returns NULL, sets *no_device when the worker said there
 * is no usable CUDA device, and puts a malloc'd message in *why. */
bw_runner *bw_runner_open(const bw_exercise *ex, const char *worker_path, const char *sanitizer,
                          char **why, int *no_device);
void bw_runner_close(bw_runner *run);
/* A runner whose worker would not start, where a worker without student code
 * did (trusted_device.h): every call fails at once as a CRASH, its detail
 * why, and no start is tried again (a worker that hangs before HELLO would
 * cost the start-up limit each time). NULL with a malloc'd *err when even
 * the shared memory cannot be had. */
bw_runner *bw_runner_open_unstarted(const bw_exercise *ex, const char *why, char **err);
/* NULL while the run can go on; else why not: bwgrade's own trouble (no
 * shared memory for a case), which must end the run as an error, never
 * pass for a case skipped. */
const char *bw_runner_halted(const bw_runner *run);
/* 1 when the last call's CRASH was a reply the kit's worker never sends
 * after HELLO (no device, or a refused request): code in the worker's
 * process wrote it. */
int bw_runner_last_forged(const bw_runner *run);
/* 1 for a runner from bw_runner_open_unstarted. */
int bw_runner_unstarted(const bw_runner *run);
/* A second runner on owner's shared memory (owner must outlive it), with a
 * worker of another executable: the baseline worker, which reads the images
 * owner's worker was given. NULL with a malloc'd *why on failure. */
bw_runner *bw_runner_open_beside(bw_runner *owner, const char *worker_path, char **why);
/* The HELLO reply of the latest worker started, or the one given to
 * bw_runner_trust_device. */
const bw_reply *bw_runner_device(const bw_runner *run);
/* From now on bw_runner_device answers dev (trusted_device.h): what a
 * worker with no student code saw, not what the student's worker says. */
void bw_runner_trust_device(bw_runner *run, const bw_reply *dev);
bw_shm *bw_runner_shm(bw_runner *run);
const bw_exercise *bw_runner_exercise(const bw_runner *run);
/* Replaces the worker with a fresh process, so that the next call is the
 * first its student code sees (nothing it settled on an earlier call, such as
 * a library's tile size, carries over). 0, or -1 with a malloc'd *why. */
int bw_runner_restart(bw_runner *run, char **why);
/* RUNs with large device arrays hold this lock file while they run
 * (device_lock.h); NULL: none (the default). path must outlive run. */
void bw_runner_set_device_lock(bw_runner *run, const char *path);
/* Ends the current worker (the next call starts a fresh one): nothing of the
 * student's may run while the baseline worker times the copies and the
 * calibration. */
void bw_runner_stop_worker(bw_runner *run);
/* The process id of the current worker; 0 when none is running. */
long bw_runner_worker_pid(const bw_runner *run);

/* Sends req (starting a fresh worker first if the last one is gone) and
 * waits up to timeout_s. Returns BW_OUTCOME_PASS when the worker replied OK
 * (*rep filled); CRASH, TIMEOUT or CUDA_ERROR when the student's code is to
 * blame, a worker's reply that it has no device or refuses the request
 * included (the kit's worker sends neither once it has started); SKIPPED
 * for trouble on the grader's side, which also halts the runner. *detail (malloc'd or NULL)
 * says what happened; *output gets the captured student output or NULL. */
bw_outcome bw_runner_call(bw_runner *run, const bw_request *req, double timeout_s, bw_reply *rep,
                          char **detail, char **output);

/* A BENCH or COPY_BENCH with the grader's clock on every timed sample
 * (bench_witness.h): *wit gets the spans. Outcomes as for bw_runner_call. */
bw_outcome bw_runner_bench(bw_runner *run, const bw_request *req, double timeout_s,
                           bw_witness *wit, bw_reply *rep, char **detail, char **output);

/* A RUN (req: its plan made, stream_plan.h) as a dialogue through a ring at
 * the start of the shared memory: ops fill and take each chunk. Outcomes as
 * for bw_runner_call; PASS means every chunk was taken. */
bw_outcome bw_runner_run(bw_runner *run, const bw_request *req, const bw_chunk_ops *ops,
                         double timeout_s, bw_reply *rep, char **detail, char **output);

/* compute-sanitizer's log since the last take, sorted (sanitizer_log.h):
 * memory errors apart from the API errors that cost nothing, each text cut
 * to about cap bytes. Returns 0 when the sanitizer wrote nothing new. */
int bw_runner_take_sanitizer_findings(bw_runner *run, size_t cap, bw_sanitizer_findings *f);

#endif
