/* The worker's device copies of the array images: one cudaMalloc allocation
 * per image (guard zones included). A RUN fills and empties them chunk by
 * chunk (run_chunks.c); BENCH copies whole images from and to the shared
 * memory (bench_student.c). Plain C on the CUDA runtime API. */
#ifndef BWLAB_DEVICE_ARRAYS_H
#define BWLAB_DEVICE_ARRAYS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "protocol.h"

typedef struct {
    int count;                    /* allocations held */
    const bw_array_geom *geom;    /* each image's layout: the request's */
    void *dev[BW_MAX_ARRAYS];     /* cudaMalloc'd, 256-byte aligned */
} bw_dev_arrays;

/* Allocates one image per geometry (count of them; geom must outlive a).
 * On failure nothing stays allocated and the (non-sticky) error is cleared
 * from the runtime's state. */
cudaError_t bw_dev_arrays_alloc(bw_dev_arrays *a, int count, const bw_array_geom *geom);
/* Copies image k from images + geom[k].place to the device; the data is
 * on the device, for every stream, when it returns. */
cudaError_t bw_dev_arrays_upload(const bw_dev_arrays *a, const uint8_t *images);
/* Copies every image back to images + geom[k].place (synchronous). */
cudaError_t bw_dev_arrays_download(const bw_dev_arrays *a, uint8_t *images);
/* The call handed to the student: element 0 of each array (dev[k] +
 * front_bytes), and the request's sizes and scalars. */
void bw_dev_arrays_call(const bw_dev_arrays *a, const bw_request *q, bw_call *call);
/* Frees what is allocated; errors ignored. Safe to call twice. */
void bw_dev_arrays_free(bw_dev_arrays *a);

/* Undo device state a previous student call may have changed (current
 * device, persisting-L2 carve-out). Unsupported settings are ignored and
 * any error they leave is cleared. */
void bw_reset_device_state(void);

/* Fill r as a CUDA error reply: status, cuda_error, and a message
 * "cudaErrorName: description (what)". */
void bw_reply_cuda_error(bw_reply *r, cudaError_t e, const char *what);

#endif
