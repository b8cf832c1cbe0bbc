/* COPY_BENCH in the worker: a device-to-device copy of copy_bytes, by
 * cudaMemcpyAsync or by the kit's copy kernel, timed by the sampling loop
 * (bench_timing.c) as the student's call is. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench_timing.h"
#include "copy_kernel.h"
#include "device_arrays.h"
#include "timed_op.h"

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
    if (bw_timed_measure(&t, q, r, q->copy_method == BW_COPY_KERNEL ? "the kit's copy kernel"
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
