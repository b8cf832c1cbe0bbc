/* Copies into memory the CPU will not read again soon (the images bwgrade
 * builds for a worker to copy to the device), with non-temporal stores
 * where the CPU has them: a plain store first reads the line it writes.
 * See stream_store.c for the measurement. */
#ifndef BWLAB_STREAM_STORE_H
#define BWLAB_STREAM_STORE_H
#include <stddef.h>

/* memcpy(dst, src, bytes) for buffers that do not overlap; any alignment. */
void bw_stream_copy(void *dst, const void *src, size_t bytes);

/* Makes the stores of bw_stream_copy visible to other processes (a worker,
 * the device's copy engine) before whatever this thread does next: call it
 * before handing the memory on. */
void bw_stream_fence(void);

#endif
