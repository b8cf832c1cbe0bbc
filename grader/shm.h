/* A shared-memory file the grader owns and workers map (it outlives workers). */
#ifndef BWLAB_SHM_H
#define BWLAB_SHM_H
#include <stddef.h>

typedef struct bw_shm bw_shm;

bw_shm *bw_shm_create(void);                 /* NULL on failure (errno set) */
/* Grow (never shrink) to at least bytes and return the mapping, NULL on failure. */
void *bw_shm_reserve(bw_shm *s, size_t bytes);
void *bw_shm_data(bw_shm *s);
size_t bw_shm_size(const bw_shm *s);
int bw_shm_fd(const bw_shm *s);              /* inherited by workers; not close-on-exec */
void bw_shm_destroy(bw_shm *s);

#endif
