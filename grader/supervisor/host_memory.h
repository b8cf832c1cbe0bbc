/* Whether a case's images fit in host and device memory, before trying. */
#ifndef BWLAB_HOST_MEMORY_H
#define BWLAB_HOST_MEMORY_H
#include <stdint.h>
#include "exercise.h"
#include "image.h"
#include "protocol.h"
#include "shm.h"

/* NULL when a case whose images take images_bytes of device memory fits in
 * host and device memory (with margins), else a malloc'd sentence saying
 * what it needs. host_bytes: the shared memory the case needs (the whole
 * images for BENCH, the ring for a RUN); extra_device: device bytes needed
 * besides the images. */
char *bw_memory_shortfall(uint64_t images_bytes, uint64_t host_bytes, uint64_t extra_device,
                          const bw_reply *device, bw_shm *shm);

#endif
