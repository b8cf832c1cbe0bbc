/* The runner: the shared memory plus one worker process, restarted when it
 * dies, and the sanitizer log gathered from it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "mono_clock.h"
#include "runner.h"
#include "device_lock.h"
#include "run_dialogue.h"
#include "bench_witness.h"
#include "supervisor.h"
#include "text_buf.h"

#define OUTPUT_CAP 4096              /* student stdout+stderr kept per call */
#define STARTUP_TIMEOUT_S 60.0       /* context creation, slower under a sanitizer */

static void sb_adds(bw_text_buf *b, const char *s) { bw_text_add(b, s, strlen(s)); }

struct bw_runner {
    const bw_exercise *ex;
    bw_worker_opts opts;
    bw_shm *shm;
    bw_worker *w;
    bw_reply hello;      /* from the latest worker started */
    bw_reply trusted;    /* bw_runner_trust_device's, when has_trusted */
    int has_trusted;
    bw_text_buf san_log;      /* sanitizer output gathered since the last take */
    int san_carry;       /* a finding the last take ended in (sanitizer_log.h), or -1 */
    bw_device_lock lock; /* for cases with large device arrays (device_lock.h) */
    int owns_shm;        /* 0: borrowed from another runner (bw_runner_open_beside) */
    char *start_error;   /* bw_runner_open_unstarted's: no worker is ever started */
    char *halt;          /* why the run cannot honestly go on (bw_runner_halted) */
    int forged;          /* the last call's reply was one the kit's worker never sends */
};

static void gather_sanitizer_log(bw_runner *run)
{
    if (!run->opts.sanitizer || !run->w)
        return;
    char *s = bw_worker_take_sanitizer_log(run->w);
    if (s) {
        sb_adds(&run->san_log, s);
        free(s);
    }
}

/* The worker is gone or useless: keep what it logged, then reap it. */
static void drop_worker(bw_runner *run)
{
    if (!run->w)
        return;
    gather_sanitizer_log(run);
    bw_worker_stop(run->w);
    run->w = NULL;
}

static int start_worker(bw_runner *run, char **why, int *no_device)
{
    bw_reply hello;
    memset(&hello, 0, sizeof hello);
    char *wwhy = NULL;
    bw_worker *w = bw_worker_start(&run->opts, run->shm, &hello, &wwhy);
    hello.message[BW_TEXT - 1] = '\0';
    hello.device_name[BW_TEXT - 1] = '\0';
    hello.gpu_uuid[sizeof hello.gpu_uuid - 1] = '\0';
    int said_no_device = hello.magic == BW_PROTO_MAGIC && hello.status == BW_REP_NO_DEVICE;
    if (w && hello.status != BW_REP_OK) {
        bw_worker_stop(w);
        w = NULL;
    }
    if (!w) {
        if (no_device)
            *no_device = said_no_device;
        const char *msg = hello.message[0] ? hello.message : wwhy ? wwhy : "no reason given";
        if (said_no_device)
            *why = bw_format_alloc("no CUDA device: %s", msg);
        else if (wwhy)
            *why = bw_format_alloc("%s", wwhy);   /* already says what failed */
        else
            *why = bw_format_alloc("the worker would not start: %s", msg);
        free(wwhy);
        return -1;
    }
    free(wwhy);
    run->hello = hello;
    run->w = w;
    return 0;
}

bw_runner *bw_runner_open(const bw_exercise *ex, const char *worker_path, const char *sanitizer,
                          char **why, int *no_device)
{
    *why = NULL;
    *no_device = 0;
    bw_runner *run = calloc(1, sizeof *run);
    if (!run) {
        *why = bw_format_alloc("out of memory");
        return NULL;
    }
    run->ex = ex;
    bw_device_lock_init(&run->lock, NULL);
    run->opts.worker_path = worker_path;
    run->opts.sanitizer = sanitizer;
    run->opts.sanitizer_path = NULL;
    run->san_carry = -1;
    run->opts.output_cap = OUTPUT_CAP;
    run->opts.startup_timeout_s = STARTUP_TIMEOUT_S;
    run->shm = bw_shm_create();
    run->owns_shm = 1;
    if (!run->shm) {
        *why = bw_format_alloc("could not create shared memory: %s", strerror(errno));
        free(run);
        return NULL;
    }
    if (start_worker(run, why, no_device) != 0) {
        bw_shm_destroy(run->shm);
        free(run);
        return NULL;
    }
    return run;
}

bw_runner *bw_runner_open_unstarted(const bw_exercise *ex, const char *why, char **err)
{
    *err = NULL;
    bw_runner *run = calloc(1, sizeof *run);
    if (run) {
        run->ex = ex;
        bw_device_lock_init(&run->lock, NULL);
        run->san_carry = -1;
        run->owns_shm = 1;
        run->shm = bw_shm_create();
        run->start_error = bw_format_alloc("%s", why);
    }
    if (!run || !run->shm || !run->start_error) {
        *err = bw_format_alloc("%s", run && !run->shm ? "could not create shared memory"
                                                       : "out of memory");
        if (run && run->shm)
            bw_shm_destroy(run->shm);
        if (run)
            free(run->start_error);
        free(run);
        return NULL;
    }
    return run;
}

bw_runner *bw_runner_open_beside(bw_runner *owner, const char *worker_path, char **why)
{
    *why = NULL;
    bw_runner *run = calloc(1, sizeof *run);
    if (!run) {
        *why = bw_format_alloc("out of memory");
        return NULL;
    }
    run->ex = owner->ex;
    bw_device_lock_init(&run->lock, NULL);
    run->opts = owner->opts;
    run->opts.worker_path = worker_path;
    run->opts.sanitizer = NULL;
    run->shm = owner->shm;
    run->owns_shm = 0;
    if (start_worker(run, why, NULL) != 0) {
        free(run);
        return NULL;
    }
    return run;
}

void bw_runner_close(bw_runner *run)
{
    if (!run)
        return;
    double t0 = bw_mono_s();
    bw_worker_quit_soon(run->w);   /* the worker tears down while the memory is freed */
    if (run->owns_shm)
        bw_shm_destroy(run->shm);
    double t1 = bw_mono_s();
    bw_worker_stop(run->w);
    if (getenv("BWLAB_TIMING"))
        fprintf(stderr, "timing: shared memory release %.2f s, then worker stop %.2f s\n",
                t1 - t0, bw_mono_s() - t1);
    free(run->san_log.s);
    free(run->start_error);
    free(run->halt);
    free(run);
}

const char *bw_runner_halted(const bw_runner *run) { return run->halt; }

int bw_runner_last_forged(const bw_runner *run) { return run->forged; }

const bw_reply *bw_runner_device(const bw_runner *run)
{
    return run->has_trusted ? &run->trusted : &run->hello;
}

void bw_runner_trust_device(bw_runner *run, const bw_reply *dev)
{
    run->trusted = *dev;
    run->has_trusted = 1;
}

const bw_exercise *bw_runner_exercise(const bw_runner *run) { return run->ex; }
bw_shm *bw_runner_shm(bw_runner *run) { return run->shm; }

int bw_runner_restart(bw_runner *run, char **why)
{
    *why = NULL;
    if (run->start_error) {
        *why = bw_format_alloc("%s", run->start_error);
        return -1;
    }
    drop_worker(run);
    return start_worker(run, why, NULL);
}

void bw_runner_set_device_lock(bw_runner *run, const char *path)
{
    bw_device_lock_init(&run->lock, path);
}

void bw_runner_stop_worker(bw_runner *run) { drop_worker(run); }

int bw_runner_unstarted(const bw_runner *run) { return run->start_error != NULL; }

long bw_runner_worker_pid(const bw_runner *run) { return run->w ? bw_worker_pid(run->w) : 0; }

/* A worker to call: the current one, or a fresh one when it is gone.
 * 0, or -1 with *detail set. */
static int ready_worker(bw_runner *run, char **detail)
{
    if (run->start_error) {
        *detail = bw_format_alloc("%s", run->start_error);
        return -1;
    }
    if (run->w && !bw_worker_alive(run->w))
        drop_worker(run);
    if (!run->w) {
        char *why = NULL;
        if (start_worker(run, &why, NULL) != 0) {
            *detail = bw_format_alloc("the worker would not restart: %s", why ? why : "?");
            free(why);
            return -1;
        }
    }
    return 0;
}

/* What a call's status and reply mean for the case. */
static bw_outcome finish_call(bw_runner *run, bw_call_status st, char *why, double timeout_s,
                              bw_reply *rep, char **detail, char **output)
{
    *output = run->w ? bw_worker_take_output(run->w) : NULL;
    gather_sanitizer_log(run);
    rep->message[BW_TEXT - 1] = '\0';
    run->forged = st == BW_CALL_OK && rep->status != BW_REP_OK && rep->status != BW_REP_CUDA_ERROR;
    bw_outcome o = BW_OUTCOME_PASS;
    switch (st) {
    case BW_CALL_OK:
        if (rep->status == BW_REP_OK)
            break;
        if (rep->status == BW_REP_CUDA_ERROR) {
            o = BW_OUTCOME_CUDA_ERROR;
            *detail = rep->message[0] ? bw_format_alloc("%s", rep->message)
                                      : bw_format_alloc("CUDA error %d", (int)rep->cuda_error);
        } else if (rep->status == BW_REP_NO_DEVICE) {
            /* The kit's worker keeps the device its HELLO found and says
             * NO_DEVICE only there; a skip would cost nothing (corpus entry
             * forges_skip), so a worker that says it later has failed. */
            o = BW_OUTCOME_CRASH;
            *detail = bw_format_alloc("the worker answered \"no CUDA device\" (%s) after its "
                                      "first answer had found one: the kit's worker never does, "
                                      "so code in its process sent it; the case counts as failed",
                                      rep->message);
        } else {
            /* bwgrade sends no malformed request; only code in the worker's
             * process makes the kit's worker refuse one. */
            o = BW_OUTCOME_CRASH;
            *detail = bw_format_alloc("the worker refused bwgrade's request (%s), which the kit's "
                                      "worker does only when code in its process has written to "
                                      "its channel or memory; the case counts as failed (if your "
                                      "code does neither, tell your instructor)", rep->message);
        }
        /* After an error reply the worker exits; start clean next time. */
        drop_worker(run);
        break;
    case BW_CALL_CRASHED:
        o = BW_OUTCOME_CRASH;
        *detail = bw_format_alloc("%s", why ? why : "the worker process died");
        drop_worker(run);
        break;
    case BW_CALL_TIMEOUT:
        o = BW_OUTCOME_TIMEOUT;
        *detail = why ? bw_format_alloc("%s", why)
                      : bw_format_alloc("no answer within %.0f s", timeout_s);
        drop_worker(run);
        break;
    case BW_CALL_PROTOCOL:
        /* Student code can corrupt the worker's memory or descriptors. */
        o = BW_OUTCOME_CRASH;
        *detail = bw_format_alloc("the worker stopped answering properly (%s)",
                                  why ? why : "garbled reply");
        drop_worker(run);
        break;
    }
    free(why);
    return o;
}

bw_outcome bw_runner_call(bw_runner *run, const bw_request *req, double timeout_s, bw_reply *rep,
                          char **detail, char **output)
{
    *detail = NULL;
    *output = NULL;
    memset(rep, 0, sizeof *rep);
    run->forged = 0;
    if (ready_worker(run, detail) != 0)
        return BW_OUTCOME_CRASH;
    char *why = NULL;
    bw_call_status st = bw_worker_call(run->w, req, rep, timeout_s, &why);
    return finish_call(run, st, why, timeout_s, rep, detail, output);
}

bw_outcome bw_runner_bench(bw_runner *run, const bw_request *req, double timeout_s,
                           bw_witness *wit, bw_reply *rep, char **detail, char **output)
{
    *detail = NULL;
    *output = NULL;
    memset(rep, 0, sizeof *rep);
    run->forged = 0;
    if (ready_worker(run, detail) != 0)
        return BW_OUTCOME_CRASH;
    char *why = NULL;
    bw_call_status st = bw_bench_dialogue(run->w, req, rep, timeout_s, wit, &why);
    return finish_call(run, st, why, timeout_s, rep, detail, output);
}

bw_outcome bw_runner_run(bw_runner *run, const bw_request *req, const bw_chunk_ops *ops,
                         double timeout_s, bw_reply *rep, char **detail, char **output)
{
    *detail = NULL;
    *output = NULL;
    memset(rep, 0, sizeof *rep);
    run->forged = 0;
    uint8_t *ring = bw_shm_reserve(run->shm, (size_t)req->shm_bytes);
    if (!ring) {
        /* The grader's trouble, not the case's: no neutral skip, which would
         * let a group's weight go to the others; the run ends (bw_runner_halted). */
        free(run->halt);
        run->halt = bw_format_alloc("bwgrade could not reserve %llu bytes of shared memory "
                                    "for a case: %s", (unsigned long long)req->shm_bytes,
                                    strerror(errno));
        *detail = bw_format_alloc("%s", run->halt ? run->halt : "no shared memory");
        return BW_OUTCOME_SKIPPED;
    }
    if (ready_worker(run, detail) != 0)
        return BW_OUTCOME_CRASH;
    /* Without the lock file the case still runs, as it would alone. */
    uint64_t images = 0;
    for (int k = 0; k < req->n_arrays && k < BW_MAX_ARRAYS; k++)
        images += req->arrays[k].image_bytes;
    (void)bw_device_lock_take(&run->lock, images, bw_runner_device(run)->mem_total);
    char *why = NULL;
    bw_call_status st = bw_run_dialogue(run->w, req, ring, ops, rep, timeout_s, &why);
    bw_device_lock_release(&run->lock);
    return finish_call(run, st, why, timeout_s, rep, detail, output);
}

int bw_runner_take_sanitizer_findings(bw_runner *run, size_t cap, bw_sanitizer_findings *f)
{
    memset(f, 0, sizeof *f);
    f->open_kind = -1;
    if (!run->san_log.s || run->san_log.len == 0)
        return 0;
    /* While the worker lives, a last line without its newline may still be
     * being written: it waits for the next take, so that no line is read in
     * two halves (each half would look like a finding of its own). */
    size_t take = run->san_log.len;
    if (run->w) {
        while (take > 0 && run->san_log.s[take - 1] != '\n')
            take--;
        if (take == 0)
            return 0;
    }
    char saved = run->san_log.s[take];
    run->san_log.s[take] = '\0';
    bw_sanitizer_sort(run->san_log.s, cap, run->san_carry, f);
    run->san_log.s[take] = saved;
    run->san_carry = f->open_kind;
    size_t rest = run->san_log.len - take;
    memmove(run->san_log.s, run->san_log.s + take, rest);
    run->san_log.len = rest;
    run->san_log.s[rest] = '\0';
    return 1;
}
