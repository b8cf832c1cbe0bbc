/* Evicting the L2 cache before a timed sample, by reading (not writing) a
 * buffer larger than the cache: a write-based flush would leave dirty lines
 * whose write-back then lands inside the timed region. */
#ifndef BWLAB_L2_FLUSH_H
#define BWLAB_L2_FLUSH_H
#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueue a read of bytes of buf (a multiple of 16, initialized) on the
 * legacy default stream. Returns the launch error, if any. */
cudaError_t bw_l2_flush_read(const void *buf, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
