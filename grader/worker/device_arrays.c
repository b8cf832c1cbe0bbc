/* Device copies of the array images, see device_arrays.h. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "device_arrays.h"
#include "staged_copy.h"

cudaError_t bw_dev_arrays_alloc(bw_dev_arrays *a, int count, const bw_array_geom *geom)
{
    memset(a, 0, sizeof *a);
    if (count < 0 || count > BW_MAX_ARRAYS)
        return cudaErrorInvalidValue;
    a->geom = geom;
    for (int k = 0; k < count; k++) {
        void *p = NULL;
        if (geom[k].image_bytes == 0 || geom[k].image_bytes > (uint64_t)SIZE_MAX) {
            bw_dev_arrays_free(a);
            return cudaErrorInvalidValue;
        }
        cudaError_t e = cudaMalloc(&p, (size_t)geom[k].image_bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError(); /* an allocation failure is not sticky */
            bw_dev_arrays_free(a);
            return e;
        }
        a->dev[k] = p;
        a->count = k + 1;
    }
    return cudaSuccess;
}

cudaError_t bw_dev_arrays_upload(const bw_dev_arrays *a, const uint8_t *images)
{
    for (int k = 0; k < a->count; k++) {
        cudaError_t e = bw_copy_to_device(a->dev[k], images + a->geom[k].place,
                                          (size_t)a->geom[k].image_bytes);
        if (e != cudaSuccess)
            return e;
    }
    /* A copy from pageable memory may return before its data lands, and a
     * student's non-blocking stream does not wait for the default one:
     * without this, corpus entry other_stream read half-copied inputs. */
    return cudaDeviceSynchronize();
}

cudaError_t bw_dev_arrays_download(const bw_dev_arrays *a, uint8_t *images)
{
    for (int k = 0; k < a->count; k++) {
        cudaError_t e = bw_copy_to_host(images + a->geom[k].place, a->dev[k],
                                        (size_t)a->geom[k].image_bytes);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

void bw_dev_arrays_call(const bw_dev_arrays *a, const bw_request *q, bw_call *call)
{
    memset(call, 0, sizeof *call);
    call->n = q->n;
    call->rows = q->rows;
    call->cols = q->cols;
    call->n_scalars = q->n_scalars;
    for (int s = 0; s < BW_MAX_CALL_SCALARS; s++)
        call->scalars[s] = q->scalars[s];
    for (int k = 0; k < BW_MAX_ARRAYS; k++)
        call->arrays[k] = k < a->count ? (void *)((uint8_t *)a->dev[k] + a->geom[k].front_bytes)
                                       : NULL;
}

void bw_dev_arrays_free(bw_dev_arrays *a)
{
    for (int k = 0; k < a->count; k++) {
        if (a->dev[k] != NULL)
            (void)cudaFree(a->dev[k]);
        a->dev[k] = NULL;
    }
    a->count = 0;
}

void bw_reset_device_state(void)
{
    (void)cudaSetDevice(0);
    (void)cudaCtxResetPersistingL2Cache();
    (void)cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    /* Clears what the calls above may have left (unsupported on this
     * device, say). A sticky error stays and shows up after the call. */
    (void)cudaGetLastError();
}

void bw_reply_cuda_error(bw_reply *r, cudaError_t e, const char *what)
{
    const char *name = cudaGetErrorName(e);
    const char *text = cudaGetErrorString(e);
    r->status = BW_REP_CUDA_ERROR;
    r->cuda_error = (int32_t)e;
    snprintf(r->message, sizeof r->message, "%s: %s (%s)", name != NULL ? name : "cudaError?",
             text != NULL ? text : "?", what != NULL ? what : "?");
}
