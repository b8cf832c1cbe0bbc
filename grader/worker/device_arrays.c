/* Device copies of the array images, see device_arrays.h. */
#include <stdio.h>
#include <string.h>

#include "device_arrays.h"
#include "staged_copy.h"

cudaError_t bw_dev_arrays_alloc(bw_dev_arrays *a, int count, size_t image_bytes)
{
    memset(a, 0, sizeof *a);
    if (count < 0 || count > BW_MAX_ARRAYS || image_bytes == 0)
        return cudaErrorInvalidValue;
    a->image_bytes = image_bytes;
    for (int k = 0; k < count; k++) {
        void *p = NULL;
        cudaError_t e = cudaMalloc(&p, image_bytes);
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
        cudaError_t e = bw_copy_to_device(a->dev[k], images + (size_t)k * a->image_bytes,
                                          a->image_bytes);
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
        cudaError_t e = bw_copy_to_host(images + (size_t)k * a->image_bytes, a->dev[k],
                                        a->image_bytes);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

void bw_dev_arrays_pointers(const bw_dev_arrays *a, uint64_t front_bytes,
                            void *out[BW_MAX_ARRAYS])
{
    for (int k = 0; k < BW_MAX_ARRAYS; k++)
        out[k] = k < a->count ? (void *)((uint8_t *)a->dev[k] + front_bytes) : NULL;
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
