/* See shm_view.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "shm_view.h"

#define VIEW_BYTES ((uint64_t)BW_SHM_SEGMENTS * BW_SHM_SEGMENT_BYTES)

uint8_t *bw_shm_view_map(const int fds[BW_SHM_SEGMENTS])
{
    /* Address space only: nothing is committed until a segment is mapped. */
    void *base = mmap(NULL, (size_t)VIEW_BYTES, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    for (int k = 0; k < BW_SHM_SEGMENTS; k++) {
        void *at = (uint8_t *)base + (uint64_t)k * BW_SHM_SEGMENT_BYTES;
        void *m = mmap(at, (size_t)BW_SHM_SEGMENT_BYTES, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_FIXED, fds[k], 0);
        if (m == MAP_FAILED) {
            int saved = errno;
            (void)munmap(base, (size_t)VIEW_BYTES);
            errno = saved;
            return NULL;
        }
    }
    return base;
}

void bw_shm_view_unmap(uint8_t *base)
{
    if (base != NULL)
        (void)munmap(base, (size_t)VIEW_BYTES);
}

uint64_t bw_shm_view_bytes(const int fds[BW_SHM_SEGMENTS])
{
    uint64_t total = 0;
    for (int k = 0; k < BW_SHM_SEGMENTS; k++) {
        struct stat st;
        if (fstat(fds[k], &st) != 0 || st.st_size < 0)
            return 0;
        uint64_t size = (uint64_t)st.st_size;
        total += size < BW_SHM_SEGMENT_BYTES ? size : BW_SHM_SEGMENT_BYTES;
        if (size < BW_SHM_SEGMENT_BYTES)
            break;
    }
    return total;
}
