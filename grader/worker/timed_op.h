/* A timed operation, as BENCH (bench_student.c) and COPY_BENCH
 * (bench_copy.c) set one up for the sampling loop that times it
 * (bench_timing.c), and the small helpers all three use. Private to the
 * worker. */
#ifndef BWLAB_TIMED_OP_H
#define BWLAB_TIMED_OP_H
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "device_arrays.h"
#include "protocol.h"

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

static inline void fail(bw_reply *r, cudaError_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline void fail(bw_reply *r, cudaError_t e, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    bw_reply_cuda_error(r, e, what);
}

static inline void bad_request(bw_reply *r, const char *text)
{
    r->status = BW_REP_BAD_REQUEST;
    snprintf(r->message, sizeof r->message, "%s", text);
}

/* Waits for the device; the first error of the synchronize or the sticky/last one. */
static inline cudaError_t sync_and_check(void)
{
    cudaError_t e = cudaDeviceSynchronize();
    cudaError_t last = cudaGetLastError();
    return e != cudaSuccess ? e : last;
}

/* The TICK settings of a request. */
static inline void set_ticks(bw_timed_op *t, const bw_request *q, int chan)
{
    t->tick = q->tick != 0;
    t->chan = chan;
    t->nonce = q->nonce;
}

/* Times t's operation as q asks (bench_timing.c's measure); 0 with r's
 * statistics, else -1 with r's error. */
int bw_timed_measure(bw_timed_op *t, const bw_request *q, bw_reply *r, const char *what);

#endif
