/* See run_chunks.h. Copies are plain synchronous cudaMemcpy: from pageable
 * memory one returns once the slot's bytes are staged, so the grader may
 * refill the slot at once. The ring is page-locked for a case of several
 * chunks, which lets those copies run at the link's speed. */
#include <stdio.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "channel_io.h"
#include "device_arrays.h"
#include "mono_clock.h"
#include "run_chunks.h"
#include "stream_plan.h"

static uint8_t *g_pinned;      /* the ring, page-locked once, kept for the process */
static uint64_t g_pinned_bytes;

/* Page-locking is an optimization: on failure the copies stay pageable. */
static void pin_ring(uint8_t *ring, uint64_t bytes)
{
    if (g_pinned == ring && g_pinned_bytes >= bytes)
        return;
    if (g_pinned != NULL && cudaHostUnregister(g_pinned) != cudaSuccess)
        (void)cudaGetLastError();
    g_pinned = NULL;
    g_pinned_bytes = 0;
    if (cudaHostRegister(ring, bytes, cudaHostRegisterDefault) == cudaSuccess) {
        g_pinned = ring;
        g_pinned_bytes = bytes;
    } else {
        (void)cudaGetLastError();
    }
}

static void bad(bw_reply *r, const char *what)
{
    r->status = BW_REP_BAD_REQUEST;
    snprintf(r->message, sizeof r->message, "%s", what);
}

/* The CHUNK message for chunk c, from the grader. -1: channel broken;
 * 1: not that message (r says why); 0: fine. */
static int expect_chunk(int chan, const bw_request *q, int64_t c, bw_reply *r)
{
    bw_request m;
    if (bw_read_all(chan, &m, sizeof m) != 0)
        return -1;
    if (m.magic != BW_PROTO_MAGIC || m.kind != BW_REQ_CHUNK || m.nonce != q->nonce ||
        m.chunk != c) {
        bad(r, "a CHUNK message out of turn");
        return 1;
    }
    return 0;
}

static int say_chunk(int chan, const bw_reply *r, int64_t c)
{
    bw_reply m = *r;
    m.kind = BW_REQ_CHUNK;
    m.status = BW_REP_OK;
    m.chunk = c;
    return bw_send_all(chan, &m, sizeof m);
}

/* Moves chunk c between the ring and the device, every array. */
static cudaError_t move_chunk(uint8_t *ring, const bw_request *q, const bw_dev_arrays *a,
                              int64_t c, int to_device)
{
    for (int k = 0; k < q->n_arrays; k++) {
        bw_chunk_span_t s = bw_chunk_span(q, c, k);
        if (s.end == s.begin)
            continue;
        uint8_t *slot = bw_slot_part(ring, q, c, k);
        uint8_t *dev = (uint8_t *)a->dev[k] + s.begin;
        cudaError_t e = to_device
                            ? cudaMemcpy(dev, slot, s.end - s.begin, cudaMemcpyHostToDevice)
                            : cudaMemcpy(slot, dev, s.end - s.begin, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

static void alloc_failed(bw_reply *r, cudaError_t e, const bw_request *q)
{
    char what[200];
    size_t mem_free = 0, mem_total = 0;
    uint64_t largest = 0;
    for (int k = 0; k < q->n_arrays; k++)
        if (q->arrays[k].image_bytes > largest)
            largest = q->arrays[k].image_bytes;
    if (cudaMemGetInfo(&mem_free, &mem_total) != cudaSuccess)
        (void)cudaGetLastError();
    snprintf(what, sizeof what,
             "grader allocating %d arrays of %llu bytes; %zu of %zu MiB free: memory a call "
             "allocates must be freed before it returns",
             q->n_arrays, (unsigned long long)largest, mem_free >> 20, mem_total >> 20);
    bw_reply_cuda_error(r, e, what);
}

/* 0: the call went through (or r holds an error); -1: channel broken. */
static int upload_call_download(int chan, uint8_t *ring, const bw_request *q,
                                const bw_dev_arrays *a, bw_reply *r)
{
    for (int64_t c = 0; c < q->chunks; c++) {
        int got = expect_chunk(chan, q, c, r);
        if (got != 0)
            return got < 0 ? -1 : 0;
        cudaError_t e = move_chunk(ring, q, a, c, 1);
        if (e != cudaSuccess) {
            bw_reply_cuda_error(r, e, "grader uploading the arrays");
            return 0;
        }
        if (say_chunk(chan, r, c) != 0)
            return -1;
    }
    /* A student's non-blocking stream does not wait for the default one:
     * every copy must have landed before the call (corpus other_stream). */
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        bw_reply_cuda_error(r, e, "grader uploading the arrays");
        return 0;
    }
    bw_call call;
    bw_dev_arrays_call(a, q, &call);

    double t0 = bw_mono_s();
    bw_student_call(&call);
    cudaError_t launch = cudaGetLastError();
    cudaError_t sync = cudaDeviceSynchronize();
    double t1 = bw_mono_s();
    cudaError_t last = cudaGetLastError();
    fflush(stdout);
    fflush(stderr);
    e = launch != cudaSuccess ? launch : (sync != cudaSuccess ? sync : last);
    if (e != cudaSuccess) {
        bw_reply_cuda_error(r, e, launch != cudaSuccess ? "launching, in the student's call"
                                                        : "in the student's call");
        return 0;
    }
    r->call_ms = (t1 - t0) * 1e3;

    for (int64_t c = 0; c < q->chunks; c++) {
        if (c >= q->ring_slots) {
            int got = expect_chunk(chan, q, c - q->ring_slots, r);
            if (got != 0)
                return got < 0 ? -1 : 0;
        }
        e = move_chunk(ring, q, a, c, 0);
        if (e != cudaSuccess) {
            bw_reply_cuda_error(r, e, "copying the arrays back after the call "
                                      "(did the student code free them or reset the device?)");
            return 0;
        }
        if (say_chunk(chan, r, c) != 0)
            return -1;
    }
    r->status = BW_REP_OK;
    snprintf(r->message, sizeof r->message, "ok");
    return 0;
}

int bw_run_chunks(int chan, uint8_t *ring, const bw_request *q, bw_reply *r)
{
    if (!bw_stream_plan_ok(q)) {
        bad(r, "inconsistent chunk plan");
        return 0;
    }
    bw_reset_device_state();
    bw_dev_arrays a;
    cudaError_t e = bw_dev_arrays_alloc(&a, q->n_arrays, q->arrays);
    if (e != cudaSuccess) {
        alloc_failed(r, e, q);
        return 0;
    }
    if (q->chunks > 1)
        pin_ring(ring, q->shm_bytes);
    int rc = upload_call_download(chan, ring, q, &a, r);
    bw_dev_arrays_free(&a);
    return rc;
}
