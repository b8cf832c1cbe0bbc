/* The shared memory the grader owns and workers map (it outlives workers):
 * segments behind one address range that never moves (shm_view.h). */
#ifndef BWLAB_SHM_H
#define BWLAB_SHM_H
#include <stddef.h>
#include "protocol.h"

typedef struct bw_shm bw_shm;

bw_shm *bw_shm_create(void);                 /* NULL on failure (errno set) */
/* Grow (never shrink) to at least bytes and return the mapping, NULL on
 * failure. The address stays the same for the life of the object. */
void *bw_shm_reserve(bw_shm *s, size_t bytes);
void *bw_shm_data(bw_shm *s);
size_t bw_shm_size(const bw_shm *s);
/* BW_SHM_SEGMENTS descriptors, inherited by workers (not close-on-exec). */
const int *bw_shm_fds(const bw_shm *s);
void bw_shm_destroy(bw_shm *s);

#endif
