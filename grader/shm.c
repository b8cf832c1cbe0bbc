/* The shared-memory file behind the array images. An anonymous memfd when
 * the kernel offers one, else an unlinked file in /dev/shm, $TMPDIR or /tmp.
 * Its descriptor is deliberately NOT close-on-exec: the supervisor hands it
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

#include "shm.h"

/* Sizes grow in steps of this many bytes, so that a run of slightly larger
 * cases does not remap (and make the worker re-register) every time. */
#define BW_SHM_STEP ((size_t)1 << 20)

struct bw_shm {
    int fd;
    void *map;       /* NULL until the first reserve */
    size_t size;     /* bytes of the file and of the mapping */
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

bw_shm *bw_shm_create(void)
{
    bw_shm *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->fd = -1;
#if defined(__linux__) && defined(MFD_CLOEXEC)
    s->fd = memfd_create("bwlab-shm", 0); /* flags 0: survives exec */
#endif
    if (s->fd < 0)
        s->fd = unlinked_temp_in("/dev/shm");
    if (s->fd < 0)
        s->fd = unlinked_temp_in(getenv("TMPDIR"));
    if (s->fd < 0)
        s->fd = unlinked_temp_in("/tmp");
    if (s->fd < 0) {
        int saved = errno;
        free(s);
        errno = saved;
        return NULL;
    }
    /* mkstemp does not set close-on-exec, memfd_create(.., 0) neither; make sure. */
    int flags = fcntl(s->fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC))
        (void)fcntl(s->fd, F_SETFD, flags & ~FD_CLOEXEC);
    return s;
}

void *bw_shm_reserve(bw_shm *s, size_t bytes)
{
    if (s == NULL) {
        errno = EINVAL;
        return NULL;
    }
    if (s->map != NULL && bytes <= s->size)
        return s->map;
    if (bytes == 0)
        bytes = 1;
    if (bytes > SIZE_MAX - BW_SHM_STEP || bytes > (size_t)INT64_MAX - BW_SHM_STEP) {
        errno = ENOMEM;
        return NULL;
    }
    size_t want = (bytes + BW_SHM_STEP - 1) / BW_SHM_STEP * BW_SHM_STEP;
    if (want < s->size)
        want = s->size;
    if (want != s->size) {
        int rc;
        do {
            rc = ftruncate(s->fd, (off_t)want);
        } while (rc != 0 && errno == EINTR);
        if (rc != 0)
            return NULL;
    }
    /* Map the new size first: on failure the old mapping stays usable. */
    void *m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (s->map != NULL)
        (void)munmap(s->map, s->size);
    s->map = m;
    s->size = want;
    return m;
}

void *bw_shm_data(bw_shm *s)
{
    return s != NULL ? s->map : NULL;
}

size_t bw_shm_size(const bw_shm *s)
{
    return s != NULL ? s->size : 0;
}

int bw_shm_fd(const bw_shm *s)
{
    return s != NULL ? s->fd : -1;
}

void bw_shm_destroy(bw_shm *s)
{
    if (s == NULL)
        return;
    if (s->map != NULL)
        (void)munmap(s->map, s->size);
    if (s->fd >= 0)
        (void)close(s->fd);
    free(s);
}
