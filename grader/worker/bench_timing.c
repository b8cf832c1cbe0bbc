/* The sampling loop of BENCH and COPY_BENCH in the worker (bench_timing.h;
 * the requests are bench_student.c and bench_copy.c).
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
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "l2_flush.h"
#include "mono_clock.h"
#include "sample_tick.h"
#include "timed_op.h"

#define MAX_SAMPLES_LIMIT 1000000
#define MIN_FLUSH_BYTES ((size_t)8 << 20)
#define TIMER_PROBES 21

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
int bw_timed_measure(bw_timed_op *t, const bw_request *q, bw_reply *r, const char *what)
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

