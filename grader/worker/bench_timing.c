/* BENCH / COPY_BENCH timing in the worker, see bench_timing.h.
 *
 * One sample: [prepare: reset device state; rotate the arrays]
 *             [flush: a kernel reading twice the L2 size (l2_flush.cu)]
 *             event start, the operation, event stop, synchronize,
 *             [check: hash the output (BENCH with rotation)].
 * Only the span between the two events is measured, less the events' own
 * cost: two events with nothing between them, recorded the same way, span
 * about 1.25 us on an H100 (tests/gpu/probe_call_overhead.sh), and a call
 * timed between events comes out that much longer than Nsight Compute's
 * duration of its kernel. Each worker measures that span (the least of
 * TIMER_PROBES) and subtracts it from every sample. All of it is enqueued
 * on the legacy default stream, which orders itself against the blocking
 * streams a student may create; a cudaDeviceSynchronize after every sample
 * makes sure nothing of one sample runs into the next, and the host clock
 * around each sample shows work the events could not see (a non-blocking
 * stream, another thread): its excess over the event time is reported.
 *
 * Against calls that remember: before every student call, each array's
 * elements are rewritten rotated by a fresh random amount r (the pointers
 * stay the same; a matrix by whole rows, its transpose within rows), and
 * after it the arrays are hashed keyed by each element's unrotated
 * position. A call that did all its work gives the hash of the first,
 * validated call whatever r was; one that skipped work, replayed an earlier
 * result or worked only on the sizes it recognised does not. A result of
 * one value (a reduction) is compared by value instead, within the
 * request's tolerance, with the inputs negated on every other call. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "bench_timing.h"
#include "copy_kernel.h"
#include "device_arrays.h"
#include "l2_flush.h"
#include "mix64.h"
#include "mono_clock.h"
#include "sample_check.h"
#include "sample_tick.h"

#define MAX_SAMPLES_LIMIT 1000000
#define MIN_FLUSH_BYTES ((size_t)8 << 20)
#define TIMER_PROBES 21

typedef cudaError_t (*bw_enqueue_fn)(void *ctx);

typedef struct {
    bw_enqueue_fn op;        /* the timed operation */
    bw_enqueue_fn prepare;   /* untimed, before each call; NULL: nothing */
    bw_enqueue_fn check;     /* untimed, after each synchronized call; NULL: nothing */
    void *ctx;
    void *flush;             /* L2 eviction buffer; NULL: no flush */
    size_t flush_bytes;
    int profile_left;        /* timed calls still to bracket for a profiler */
    double timer_ms;         /* the events' own span, subtracted from each sample */
    cudaEvent_t ev0, ev1;
    int tick;                /* exchange TICKs around every timed sample (protocol.h) */
    int chan;                /* ... on this channel, */
    uint64_t nonce;          /* ... echoing the request's nonce */
} bw_timed_op;

static void fail(bw_reply *r, cudaError_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(bw_reply *r, cudaError_t e, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    bw_reply_cuda_error(r, e, what);
}

static void bad_request(bw_reply *r, const char *text)
{
    r->status = BW_REP_BAD_REQUEST;
    snprintf(r->message, sizeof r->message, "%s", text);
}

/* Waits for the device; the first error of the synchronize or the sticky/last one. */
static cudaError_t sync_and_check(void)
{
    cudaError_t e = cudaDeviceSynchronize();
    cudaError_t last = cudaGetLastError();
    return e != cudaSuccess ? e : last;
}

static cudaError_t flush_l2(bw_timed_op *t)
{
    if (t->flush == NULL)
        return cudaSuccess;
    return bw_l2_flush_read(t->flush, t->flush_bytes);
}

/* Settings a call may have left for the next one (a persisting-L2 window
 * that would survive the flush) are undone before every call. */
static cudaError_t prepare(bw_timed_op *t)
{
    bw_reset_device_state();
    return t->prepare != NULL ? t->prepare(t->ctx) : cudaSuccess;
}

static cudaError_t check(bw_timed_op *t)
{
    return t->check != NULL ? t->check(t->ctx) : cudaSuccess;
}

/* The operation, plus any launch error it left behind. */
static cudaError_t enqueue_op(bw_timed_op *t)
{
    cudaError_t e = t->op(t->ctx);
    cudaError_t last = cudaGetLastError();
    return e != cudaSuccess ? e : last;
}

/* One untimed call from freshly prepared arrays, synchronized. */
static cudaError_t untimed_call(bw_timed_op *t)
{
    cudaError_t e = prepare(t);
    if (e == cudaSuccess)
        e = sync_and_check(); /* as in timed_call */
    if (e == cudaSuccess)
        e = enqueue_op(t);
    cudaError_t s = sync_and_check();
    if (e == cudaSuccess)
        e = s;
    return e != cudaSuccess ? e : check(t);
}

/* One timed call; *ms gets the event time, *lag_ms how much longer the host
 * clock saw from the start event to the end of a device-wide synchronize.
 * sample >= 0: a sample of the statistics, which the grader's clock sees
 * (TICKs, when t->tick); -1: a call that is not one. */
static cudaError_t timed_call(bw_timed_op *t, double *ms, double *lag_ms, int64_t sample)
{
    /* The preparation done before the clocks start: a call on a stream that
     * does not wait for the default one must not find it half done, and
     * the host clock must not count it. */
    cudaError_t e = prepare(t);
    if (e == cudaSuccess)
        e = sync_and_check();
    /* The grader's clock starts here: after the preparation, before the
     * flush that the start event waits for (the flush's length is the same
     * in the worker it is compared with). */
    int ticked = t->tick && sample >= 0 && e == cudaSuccess;
    if (ticked)
        bw_tick_ready(t->chan, t->nonce, sample);
    if (e == cudaSuccess)
        e = flush_l2(t);
    /* A profiler's range holds the timed call alone: the preparation and
     * the flush were launched before it opens. */
    int profiled = t->profile_left > 0 && e == cudaSuccess;
    if (profiled) {
        t->profile_left--;
        e = cudaProfilerStart();
    }
    /* The flush may still be running: the lag includes the rest of it, the
     * same for every operation measured, the copy included. */
    double h0 = bw_mono_s();
    if (e == cudaSuccess)
        e = cudaEventRecord(t->ev0, (cudaStream_t)0);
    if (e == cudaSuccess)
        e = enqueue_op(t);
    if (e == cudaSuccess)
        e = cudaEventRecord(t->ev1, (cudaStream_t)0);
    if (e == cudaSuccess)
        e = cudaEventSynchronize(t->ev1);
    cudaError_t s = sync_and_check();
    double h1 = bw_mono_s();
    if (ticked)
        bw_tick_done(t->chan, t->nonce, sample);
    if (e == cudaSuccess)
        e = s;
    if (profiled && e == cudaSuccess)
        e = cudaProfilerStop();
    if (e != cudaSuccess)
        return e;
    float f = 0.0f;
    e = cudaEventElapsedTime(&f, t->ev0, t->ev1);
    *ms = (double)f > t->timer_ms ? (double)f - t->timer_ms : 0.0;
    *lag_ms = (h1 - h0) * 1e3 - (double)f;
    return e != cudaSuccess ? e : check(t);
}

static cudaError_t no_op(void *ctx)
{
    (void)ctx;
    return cudaSuccess;
}

/* The span of two events with nothing between them, recorded by timed_call
 * itself (after the same flush): the least of TIMER_PROBES, so that what is
 * subtracted is never more than the events cost. */
static cudaError_t timer_span(const bw_timed_op *t, double *span_ms)
{
    bw_timed_op idle = *t;
    idle.op = no_op;
    idle.prepare = NULL;
    idle.check = NULL;
    idle.profile_left = 0;
    idle.timer_ms = 0.0;
    double least = 0.0;
    for (int i = 0; i < TIMER_PROBES; i++) {
        double ms = 0.0, lag = 0.0;
        cudaError_t e = timed_call(&idle, &ms, &lag, -1);
        if (e != cudaSuccess)
            return e;
        if (i == 0 || ms < least)
            least = ms;
    }
    *span_ms = least;
    return cudaSuccess;
}

/* Calls until the standard error of the mean is small enough relative to
 * the mean (after min_samples), or max_samples, or the time cap. */
static cudaError_t sample_loop(bw_timed_op *t, const bw_request *q, int min_samples,
                               int max_samples, double *ms, double *lag, int *count,
                               int *failed_at)
{
    double mean = 0.0, m2 = 0.0;
    double t0 = bw_mono_s();
    int k = 0;
    *count = 0;
    while (k < max_samples) {
        double x = 0.0;
        *failed_at = k;
        cudaError_t e = timed_call(t, &x, &lag[k], k);
        if (e != cudaSuccess)
            return e;
        ms[k++] = x;
        *count = k;
        double d = x - mean;
        mean += d / (double)k;
        m2 += d * (x - mean);
        if (k >= min_samples) {
            double noise = 0.0;
            if (k > 1 && mean > 0.0)
                noise = sqrt(m2 / (double)(k - 1)) / sqrt((double)k) / mean;
            if (noise <= q->target_noise)
                break;
        }
        if (q->time_cap_s > 0.0 && bw_mono_s() - t0 >= q->time_cap_s)
            break;
    }
    return cudaSuccess;
}

/* batch calls back to back, timed by events and by the host clock; both
 * results are totals for the batch, in milliseconds. */
static cudaError_t host_batch(bw_timed_op *t, int batch, double *event_ms, double *host_ms)
{
    cudaError_t e = prepare(t);
    if (e == cudaSuccess)
        e = flush_l2(t);
    cudaError_t s = sync_and_check();
    if (e == cudaSuccess)
        e = s;
    if (e != cudaSuccess)
        return e;
    double h0 = bw_mono_s();
    e = cudaEventRecord(t->ev0, (cudaStream_t)0);
    for (int i = 0; i < batch && e == cudaSuccess; i++)
        e = t->op(t->ctx);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaEventRecord(t->ev1, (cudaStream_t)0);
    s = cudaDeviceSynchronize();
    double h1 = bw_mono_s();
    if (e == cudaSuccess)
        e = s;
    s = cudaGetLastError();
    if (e == cudaSuccess)
        e = s;
    if (e != cudaSuccess)
        return e;
    float f = 0.0f;
    e = cudaEventElapsedTime(&f, t->ev0, t->ev1);
    *event_ms = (double)f;          /* totals for the whole batch */
    *host_ms = (h1 - h0) * 1e3;
    return e;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between closest ranks; s sorted, k >= 1. */
static double quantile(const double *s, int k, double p)
{
    double h = (double)(k - 1) * p;
    int lo = (int)floor(h);
    int hi = lo + 1 < k ? lo + 1 : lo;
    return s[lo] + (h - (double)lo) * (s[hi] - s[lo]);
}

static void fill_stats(double *ms, int k, bw_reply *r)
{
    r->samples = k;
    if (k <= 0)
        return;
    double sum = 0.0;
    for (int i = 0; i < k; i++)
        sum += ms[i];
    double mean = sum / (double)k;
    double ss = 0.0;
    for (int i = 0; i < k; i++)
        ss += (ms[i] - mean) * (ms[i] - mean);
    qsort(ms, (size_t)k, sizeof *ms, cmp_double);
    r->ms_min = ms[0];
    r->ms_max = ms[k - 1];
    r->ms_median = quantile(ms, k, 0.5);
    r->ms_q1 = quantile(ms, k, 0.25);
    r->ms_q3 = quantile(ms, k, 0.75);
    r->ms_mean = mean;
    r->noise = (k > 1 && mean > 0.0) ? sqrt(ss / (double)(k - 1)) / sqrt((double)k) / mean : 0.0;
}

/* Checks and clamps the sampling fields; 0 if usable. */
static int sampling_params(const bw_request *q, bw_reply *r, int *warmup, int *min_s,
                           int *max_s, int *batch)
{
    if (q->max_samples < 1 || q->max_samples > MAX_SAMPLES_LIMIT) {
        bad_request(r, "max_samples must be between 1 and 1000000");
        return -1;
    }
    if (!(q->target_noise >= 0.0) || !(q->time_cap_s >= 0.0)) {
        bad_request(r, "target_noise and time_cap_s must be non-negative numbers");
        return -1;
    }
    *max_s = q->max_samples;
    *min_s = q->min_samples < 1 ? 1 : (q->min_samples > *max_s ? *max_s : q->min_samples);
    *warmup = q->warmup < 0 ? 0 : (q->warmup > MAX_SAMPLES_LIMIT ? MAX_SAMPLES_LIMIT : q->warmup);
    *batch = q->host_batch < 0 ? 0
             : (q->host_batch > MAX_SAMPLES_LIMIT ? MAX_SAMPLES_LIMIT : q->host_batch);
    return 0;
}

/* The shared part of both requests: flush buffer, events, warmup, samples,
 * host batch. Fills r's statistics or its error. 0 on success. */
static int measure(bw_timed_op *t, const bw_request *q, bw_reply *r, const char *what)
{
    int warmup, min_s, max_s, batch;
    if (sampling_params(q, r, &warmup, &min_s, &max_s, &batch) != 0)
        return -1;
    int rc = -1;
    int have_ev0 = 0, have_ev1 = 0;
    double *ms = malloc((size_t)max_s * sizeof *ms);
    double *lag = malloc((size_t)max_s * sizeof *lag);
    if (ms == NULL || lag == NULL) {
        free(ms);
        free(lag);
        bad_request(r, "worker out of host memory for the samples");
        return -1;
    }
    cudaError_t e;
    if (q->flush_l2) {
        int l2 = 0;
        e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
        if (e != cudaSuccess) {
            fail(r, e, "querying the L2 size");
            goto out;
        }
        size_t bytes = 2 * (size_t)(l2 > 0 ? l2 : 0);
        t->flush_bytes = bytes > MIN_FLUSH_BYTES ? bytes : MIN_FLUSH_BYTES;
        t->flush_bytes = (t->flush_bytes + 15) / 16 * 16;
        e = cudaMalloc(&t->flush, t->flush_bytes);
        if (e != cudaSuccess) {
            t->flush = NULL;
            fail(r, e, "allocating the %zu-byte L2 flush buffer", t->flush_bytes);
            goto out;
        }
        /* Written once here, so the per-sample flush only reads. */
        e = cudaMemset(t->flush, 0x5a, t->flush_bytes);
        if (e != cudaSuccess) {
            fail(r, e, "initializing the L2 flush buffer");
            goto out;
        }
    }
    e = cudaEventCreate(&t->ev0);
    have_ev0 = e == cudaSuccess;
    if (e == cudaSuccess) {
        e = cudaEventCreate(&t->ev1);
        have_ev1 = e == cudaSuccess;
    }
    if (e != cudaSuccess) {
        fail(r, e, "creating timing events");
        goto out;
    }
    for (int i = 0; i < warmup; i++) {
        e = untimed_call(t);
        if (e != cudaSuccess) {
            fail(r, e, "%s, warmup call %d", what, i + 1);
            goto out;
        }
    }
    e = timer_span(t, &t->timer_ms);
    if (e != cudaSuccess) {
        fail(r, e, "timing two events with nothing between them");
        goto out;
    }
    r->timer_ms = t->timer_ms;
    /* Calls for a profiler: timed exactly as the samples are, each bracketed
     * alone for it, then left out of the statistics. */
    for (int i = 0; t->profile_left > 0; i++) {
        double skip_ms = 0.0, skip_lag = 0.0;
        e = timed_call(t, &skip_ms, &skip_lag, -1);
        if (e != cudaSuccess) {
            fail(r, e, "%s, profiled call %d", what, i + 1);
            goto out;
        }
    }
    int count = 0, failed_at = 0;
    e = sample_loop(t, q, min_s, max_s, ms, lag, &count, &failed_at);
    if (e != cudaSuccess) {
        fail(r, e, "%s, timed call %d", what, failed_at + 1);
        goto out;
    }
    fill_stats(ms, count, r);
    if (count > 0) {
        qsort(lag, (size_t)count, sizeof *lag, cmp_double);
        r->lag_median_ms = quantile(lag, count, 0.5);
    }
    if (batch > 0) {
        e = host_batch(t, batch, &r->batch_event_ms, &r->batch_host_ms);
        if (e != cudaSuccess) {
            fail(r, e, "%s, host-clock batch of %d calls", what, batch);
            goto out;
        }
    }
    rc = 0;
out:
    if (have_ev1)
        (void)cudaEventDestroy(t->ev1);
    if (have_ev0)
        (void)cudaEventDestroy(t->ev0);
    if (t->flush != NULL)
        (void)cudaFree(t->flush);
    t->flush = NULL;
    free(ms);
    free(lag);
    return rc;
}

/* ------------------------------------------------------------ BENCH */

typedef struct {
    const bw_request *q;
    bw_call call;
    void *pristine[BW_MAX_ARRAYS];  /* copies of every array's data */
    uint64_t rng;                 /* state for the rotation amounts */
    int64_t axis;                 /* rotations lie in [1, axis) */
    int64_t rot;                  /* the rotation of the current call */
    int negated;                  /* by value: this call's inputs are negated */
    uint64_t key, want;           /* hash key; the validated call's hash */
    double want_value;            /* by value: the validated call's result */
    unsigned long long *acc;      /* device accumulator for the hash */
    int checked, bad, first_bad;
    int64_t first_bad_rot;
    double first_bad_value;
} student_ctx;

static cudaError_t student_op(void *p)
{
    student_ctx *c = p;
    bw_student_call(&c->call);
    return cudaSuccess;
}

static int by_value(const student_ctx *c) { return c->q->by_value >= 0; }

/* The rotation array k takes: a whole array (a reduction's one result)
 * never moves. */
static int64_t rotation_of(const student_ctx *c, int k)
{
    return (c->q->arrays[k].flags & BW_ARRAY_WHOLE) ? 0 : c->rot;
}

/* A value's sign bit, to negate an input. */
static uint32_t sign_bit(const bw_array_geom *g)
{
    return g->elem_bytes == 4 ? 0x80000000u : 0x8000u;
}

/* Every array rewritten from its pristine copy, rotated by r; with negate,
 * the inputs negated too (by value only). */
static cudaError_t rotate_all(student_ctx *c, int64_t r, int negate)
{
    c->rot = r;
    c->negated = negate;
    for (int k = 0; k < c->q->n_arrays; k++) {
        const bw_array_geom *g = &c->q->arrays[k];
        if (!c->pristine[k])
            continue;
        uint32_t flip = negate && (g->flags & BW_ARRAY_INPUT) ? sign_bit(g) : 0u;
        cudaError_t e = bw_rotate_array(c->call.arrays[k], c->pristine[k], g, rotation_of(c, k), flip);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

/* A fresh rotation in [1, axis), never the previous one: a call that leaves
 * the last result in place is then always wrong. By value, the inputs are
 * negated on every other call: the result must follow. */
static cudaError_t student_rotate(void *p)
{
    student_ctx *c = p;
    int negate = by_value(c) && !c->negated;
    if (c->axis < 3)
        return rotate_all(c, c->axis == 2 ? 1 - c->rot : 0, negate);
    int64_t r;
    do {
        c->rng += UINT64_C(0x9E3779B97F4A7C15);
        r = 1 + (int64_t)(bw_mix64(c->rng) % (uint64_t)(c->axis - 1));
    } while (r == c->rot);
    return rotate_all(c, r, negate);
}

/* The hash of all arrays as they are now, keyed by unrotated position. */
static cudaError_t hash_now(student_ctx *c, uint64_t *h)
{
    cudaError_t e = cudaMemsetAsync(c->acc, 0, sizeof *c->acc, (cudaStream_t)0);
    for (int k = 0; k < c->q->n_arrays && e == cudaSuccess; k++)
        e = bw_hash_array(c->call.arrays[k], &c->q->arrays[k], rotation_of(c, k), c->key, k, c->acc);
    unsigned long long v = 0;
    if (e == cudaSuccess)
        e = cudaMemcpy(&v, c->acc, sizeof v, cudaMemcpyDeviceToHost);
    *h = (uint64_t)v;
    return e;
}

/* By value: the result array's one element, as a double. */
static cudaError_t value_now(const student_ctx *c, double *v)
{
    const bw_array_geom *g = &c->q->arrays[c->q->by_value];
    uint32_t bits = 0;
    cudaError_t e = cudaMemcpy(&bits, c->call.arrays[c->q->by_value], g->elem_bytes,
                               cudaMemcpyDeviceToHost);
    if (g->elem_bytes == 4) {
        float f;
        memcpy(&f, &bits, sizeof f);
        *v = (double)f;
    } else {
        uint32_t u = bits << 16;   /* a bf16 result: its float */
        float f;
        memcpy(&f, &u, sizeof f);
        *v = (double)f;
    }
    return e;
}

static void note_bad(student_ctx *c, double value)
{
    c->bad++;
    if (c->first_bad == 0) {
        c->first_bad = c->checked;
        c->first_bad_rot = c->rot;
        c->first_bad_value = value;
    }
}

static cudaError_t student_check(void *p)
{
    student_ctx *c = p;
    if (by_value(c)) {
        double v = 0;
        cudaError_t e = value_now(c, &v);
        if (e != cudaSuccess)
            return e;
        c->checked++;
        double want = c->negated ? -c->want_value : c->want_value;
        if (!(fabs(v - want) <= c->q->value_tol))
            note_bad(c, v);
        return cudaSuccess;
    }
    uint64_t h = 0;
    cudaError_t e = hash_now(c, &h);
    if (e != cudaSuccess)
        return e;
    c->checked++;
    if (h != c->want)
        note_bad(c, 0.0);
    return cudaSuccess;
}

/* The axis rotations run along: the first array that rotates. */
static int64_t axis_of(const bw_request *q)
{
    for (int k = 0; k < q->n_arrays; k++) {
        const bw_array_geom *g = &q->arrays[k];
        if (g->flags & BW_ARRAY_WHOLE)
            continue;
        return (g->flags & BW_ARRAY_ROTATE_OUTER) ? g->outer : g->count / (g->outer > 0 ? g->outer : 1);
    }
    return 0;
}

/* Pristine copies of every array a call reads or may rewrite, then the
 * validated call (unrotated, arrays back to shared memory) whose hash (and,
 * by value, whose result) later calls must give. 0 on success. */
static int rotation_setup(student_ctx *c, const bw_request *q, const bw_dev_arrays *a,
                          uint8_t *images, bw_reply *r)
{
    cudaError_t e = cudaMalloc((void **)&c->acc, sizeof *c->acc);
    if (e != cudaSuccess) {
        c->acc = NULL;
        fail(r, e, "grader allocating the hash accumulator");
        return -1;
    }
    for (int k = 0; k < q->n_arrays; k++) {
        const bw_array_geom *g = &q->arrays[k];
        /* A one-element result is not rotated: the call overwrites it. */
        if (g->flags & BW_ARRAY_WHOLE)
            continue;
        size_t bytes = (size_t)g->data_bytes;
        e = cudaMalloc(&c->pristine[k], bytes > 0 ? bytes : 1);
        if (e != cudaSuccess) {
            c->pristine[k] = NULL;
            fail(r, e, "grader allocating the %zu-byte copy of array %d", bytes, k);
            return -1;
        }
        e = cudaMemcpy(c->pristine[k], c->call.arrays[k], bytes, cudaMemcpyDeviceToDevice);
        if (e != cudaSuccess) {
            fail(r, e, "grader copying array %d", k);
            return -1;
        }
    }
    c->rng = q->rotate_seed;
    c->key = q->hash_key;
    c->rot = 0;
    c->axis = axis_of(q);
    bw_reset_device_state();
    bw_student_call(&c->call);
    cudaError_t launch = cudaGetLastError();
    e = sync_and_check();
    if (launch != cudaSuccess)
        e = launch;
    if (e != cudaSuccess) {
        fail(r, e, "the student's call, first (validated) call");
        return -1;
    }
    e = bw_dev_arrays_download(a, images);
    if (e == cudaSuccess)
        e = hash_now(c, &c->want);
    if (e == cudaSuccess && by_value(c))
        e = value_now(c, &c->want_value);
    if (e != cudaSuccess) {
        fail(r, e, "copying back and hashing the validated call's arrays");
        return -1;
    }
    r->out_hash = c->want;
    r->want_value = c->want_value;
    return 0;
}

/* The TICK settings of a request. */
static void set_ticks(bw_timed_op *t, const bw_request *q, int chan)
{
    t->tick = q->tick != 0;
    t->chan = chan;
    t->nonce = q->nonce;
}

void bw_bench_student(const bw_request *q, uint8_t *images, bw_reply *r, int chan)
{
    bw_dev_arrays a;
    memset(&a, 0, sizeof a);
    student_ctx c;
    memset(&c, 0, sizeof c);
    c.q = q;

    bw_reset_device_state();
    cudaError_t e = bw_dev_arrays_alloc(&a, q->n_arrays, q->arrays);
    if (e != cudaSuccess) {
        fail(r, e, "grader allocating %d arrays", q->n_arrays);
        return;
    }
    e = bw_dev_arrays_upload(&a, images);
    if (e != cudaSuccess) {
        fail(r, e, "grader uploading the arrays");
        goto out;
    }
    bw_dev_arrays_call(&a, q, &c.call);
    bw_timed_op t;
    memset(&t, 0, sizeof t);
    t.op = student_op;
    t.ctx = &c;
    if (rotation_setup(&c, q, &a, images, r) != 0)
        goto out;
    t.prepare = student_rotate;
    t.check = student_check;
    t.profile_left = q->profile_calls > 0 ? q->profile_calls : 0;
    set_ticks(&t, q, chan);

    if (measure(&t, q, r, "the student's call") != 0)
        goto out;
    r->calls_checked = c.checked;
    r->calls_bad = c.bad;
    r->first_bad_call = c.first_bad;
    r->first_bad_rotation = (int32_t)c.first_bad_rot;
    r->first_bad_value = c.first_bad_value;
    r->status = BW_REP_OK;
    snprintf(r->message, sizeof r->message, "ok");
out:
    for (int k = 0; k < BW_MAX_ARRAYS; k++)
        if (c.pristine[k] != NULL)
            (void)cudaFree(c.pristine[k]);
    if (c.acc != NULL)
        (void)cudaFree(c.acc);
    bw_dev_arrays_free(&a);
}

/* ------------------------------------------------------------ COPY_BENCH */

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} copy_ctx;

static cudaError_t copy_op(void *p)
{
    copy_ctx *c = p;
    return cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)0);
}

static cudaError_t copy_kernel_op(void *p)
{
    copy_ctx *c = p;
    return bw_copy_kernel(c->dst, c->src, c->bytes);
}

void bw_bench_copy(const bw_request *q, bw_reply *r, int chan)
{
    if (q->copy_bytes == 0 || q->copy_bytes > (uint64_t)SIZE_MAX / 2) {
        bad_request(r, "copy_bytes must be positive");
        return;
    }
    if (q->copy_method != BW_COPY_MEMCPY && q->copy_method != BW_COPY_KERNEL) {
        bad_request(r, "copy_method must be 0 (cudaMemcpy) or 1 (the kit's kernel)");
        return;
    }
    const size_t bytes = (size_t)q->copy_bytes;
    void *src = NULL, *dst = NULL;
    bw_reset_device_state();
    cudaError_t e = cudaMalloc(&src, bytes);
    if (e == cudaSuccess)
        e = cudaMalloc(&dst, bytes);
    if (e != cudaSuccess) {
        fail(r, e, "allocating two copy buffers of %zu bytes", bytes);
        goto out;
    }
    e = cudaMemset(src, 0x3c, bytes);
    if (e == cudaSuccess)
        e = cudaMemset(dst, 0, bytes);
    if (e == cudaSuccess)
        e = sync_and_check();
    if (e != cudaSuccess) {
        fail(r, e, "initializing the copy buffers");
        goto out;
    }
    copy_ctx c = {dst, src, bytes};
    bw_timed_op t;
    memset(&t, 0, sizeof t);
    t.op = q->copy_method == BW_COPY_KERNEL ? copy_kernel_op : copy_op;
    t.ctx = &c;
    t.profile_left = q->profile_calls > 0 ? q->profile_calls : 0;
    set_ticks(&t, q, chan);
    if (measure(&t, q, r, q->copy_method == BW_COPY_KERNEL ? "the kit's copy kernel"
                                                          : "the device-to-device copy") != 0)
        goto out;
    r->status = BW_REP_OK;
    snprintf(r->message, sizeof r->message, "ok");
out:
    if (dst != NULL)
        (void)cudaFree(dst);
    if (src != NULL)
        (void)cudaFree(src);
    if (e != cudaSuccess)
        (void)cudaGetLastError();
}
