/* The images' shared memory as one address range: BW_SHM_SEGMENTS files,
 * segment k mapped at base + k * BW_SHM_SEGMENT_BYTES. Several files rather
 * than one because Linux serializes page allocation within one shmem file:
 * on the H100 host, 16 threads first-touching 8 GiB took 1.9 s in one file
 * and 0.52 s spread over eight (issue 12). Both the grader and the workers
 * map the segments this way. */
#ifndef BWLAB_SHM_VIEW_H
#define BWLAB_SHM_VIEW_H
#include <stdint.h>
#include "protocol.h"

/* Reserves the whole range and maps every segment at its full size (the
 * part past a file's end is never touched). NULL on failure, errno set. */
uint8_t *bw_shm_view_map(const int fds[BW_SHM_SEGMENTS]);
void bw_shm_view_unmap(uint8_t *base);

/* Bytes usable from the start of the range: the segments' sizes, up to the
 * first one that is not full. 0 when a descriptor cannot be read. */
uint64_t bw_shm_view_bytes(const int fds[BW_SHM_SEGMENTS]);

#endif
