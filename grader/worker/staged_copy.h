/* Copies between the shared memory and the device. Small ones go straight
 * through cudaMemcpy; large ones through a few page-locked buffers, filled
 * and drained by several threads while the DMA engine moves the previous
 * chunk. No page-locking of the shared memory itself: registering the
 * 8.6 GB of the largest case took 1.4 s on the H100 host, more than the
 * copies (0.16 s each way once registered); staged, both ways took ~0.6 s
 * (issue 12). */
#ifndef BWLAB_STAGED_COPY_H
#define BWLAB_STAGED_COPY_H
#include <stddef.h>
#include <cuda_runtime_api.h>

cudaError_t bw_copy_to_device(void *dst, const void *src, size_t bytes);
cudaError_t bw_copy_to_host(void *dst, const void *src, size_t bytes);

#endif
