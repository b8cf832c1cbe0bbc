/* The shared memory behind the array images: BW_SHM_SEGMENTS files (see
 * shm_view.h for why several), each an anonymous memfd when the kernel
 * offers one, else an unlinked file in /dev/shm, $TMPDIR or /tmp. The
 * descriptors are deliberately NOT close-on-exec: the supervisor hands them
 * to every worker it starts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parallel_for.h"
#include "shm.h"
#include "shm_view.h"

/* Sizes grow in steps of this many bytes, so that a run of slightly larger
 * cases does not make the worker re-register the memory every time. */
#define BW_SHM_STEP ((size_t)1 << 20)

struct bw_shm {
    int fds[BW_SHM_SEGMENTS];
    uint8_t *map;    /* the whole view, mapped once (shm_view.h) */
    size_t size;     /* bytes usable from map */
};

/* An unlinked temporary file in dir; -1 on failure (errno set). */
static int unlinked_temp_in(const char *dir)
{
    if (dir == NULL || dir[0] == '\0')
        return -1;
    static const char tail[] = "/bwlab-shm-XXXXXX";
    size_t len = strlen(dir);
    char *path = malloc(len + sizeof tail);
    if (path == NULL)
        return -1;
    memcpy(path, dir, len);
    memcpy(path + len, tail, sizeof tail);
    int fd = mkstemp(path);
    if (fd >= 0)
        (void)unlink(path);
    int saved = errno;
    free(path);
    errno = saved;
    return fd;
}

static int segment_file(void)
{
    int fd = -1;
#if defined(__linux__) && defined(MFD_CLOEXEC)
    fd = memfd_create("bwlab-shm", 0); /* flags 0: survives exec */
#endif
    if (fd < 0)
        fd = unlinked_temp_in("/dev/shm");
    if (fd < 0)
        fd = unlinked_temp_in(getenv("TMPDIR"));
    if (fd < 0)
        fd = unlinked_temp_in("/tmp");
    if (fd < 0)
        return -1;
    /* mkstemp does not set close-on-exec, memfd_create(.., 0) neither; make sure. */
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC))
        (void)fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
    return fd;
}

bw_shm *bw_shm_create(void)
{
    bw_shm *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    for (int k = 0; k < BW_SHM_SEGMENTS; k++)
        s->fds[k] = -1;
    for (int k = 0; k < BW_SHM_SEGMENTS; k++) {
        s->fds[k] = segment_file();
        if (s->fds[k] < 0)
            goto fail;
    }
    s->map = bw_shm_view_map(s->fds);
    if (s->map == NULL)
        goto fail;
    return s;
fail: {
    int saved = errno;
    bw_shm_destroy(s);
    errno = saved;
    return NULL;
}
}

void *bw_shm_reserve(bw_shm *s, size_t bytes)
{
    if (s == NULL) {
        errno = EINVAL;
        return NULL;
    }
    if (bytes <= s->size && s->size > 0)
        return s->map;
    if (bytes == 0)
        bytes = 1;
    const uint64_t limit = (uint64_t)BW_SHM_SEGMENTS * BW_SHM_SEGMENT_BYTES;
    if ((uint64_t)bytes > limit - BW_SHM_STEP) {
        errno = ENOMEM;
        return NULL;
    }
    size_t want = (bytes + BW_SHM_STEP - 1) / BW_SHM_STEP * BW_SHM_STEP;
    /* Only the segments the new size reaches into grow; the mapping stays. */
    for (int k = (int)(s->size / BW_SHM_SEGMENT_BYTES); k < BW_SHM_SEGMENTS; k++) {
        uint64_t start = (uint64_t)k * BW_SHM_SEGMENT_BYTES;
        if (start >= want)
            break;
        uint64_t part = want - start < BW_SHM_SEGMENT_BYTES ? want - start : BW_SHM_SEGMENT_BYTES;
        int rc;
        do {
            rc = ftruncate(s->fds[k], (off_t)part);
        } while (rc != 0 && errno == EINTR);
        if (rc != 0)
            return NULL;
    }
    s->size = want;
    return s->map;
}

void *bw_shm_data(bw_shm *s)
{
    return s != NULL && s->size > 0 ? s->map : NULL;
}

size_t bw_shm_size(const bw_shm *s)
{
    return s != NULL ? s->size : 0;
}

const int *bw_shm_fds(const bw_shm *s)
{
    return s != NULL ? s->fds : NULL;
}

static void truncate_segments(int64_t begin, int64_t end, void *p)
{
    const bw_shm *s = p;
    for (int64_t k = begin; k < end; k++)
        if (s->fds[k] >= 0 && ftruncate(s->fds[k], 0) != 0) {
            /* Nothing to do: the pages go when the descriptor is closed. */
        }
}

void bw_shm_destroy(bw_shm *s)
{
    if (s == NULL)
        return;
    /* Freeing is as serialized per file as allocating: emptying the segments
     * from several threads took the release of the largest case's 13 GB
     * from ~1.7 s to a fraction of it. Pages a worker still pins are freed
     * when it lets go. */
    int used = (int)((s->size + BW_SHM_SEGMENT_BYTES - 1) / BW_SHM_SEGMENT_BYTES);
    if (used > 1)
        parallel_for(used, parallel_default_threads(), 1, truncate_segments, s);
    bw_shm_view_unmap(s->map);
    for (int k = 0; k < BW_SHM_SEGMENTS; k++)
        if (s->fds[k] >= 0)
            close(s->fds[k]);
    free(s);
}
