/* The kit's own device-to-device copy, timed beside cudaMemcpy as a
 * candidate for the benchmark's baseline (bench_mode.c takes the faster). */
#ifndef BWLAB_COPY_KERNEL_H
#define BWLAB_COPY_KERNEL_H
#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues a copy of bytes from src to dst on the legacy default stream;
 * both from cudaMalloc (256-byte aligned). Returns the launch's error. */
cudaError_t bw_copy_kernel(void *dst, const void *src, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
