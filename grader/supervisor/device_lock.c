/* See device_lock.h. flock: released by the kernel if the holder dies, and
 * never inherited by the worker (the descriptor is close-on-exec). */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include "device_lock.h"

void bw_device_lock_init(bw_device_lock *l, const char *path)
{
    l->path = path;
    l->fd = -1;
}

int bw_device_lock_needed(uint64_t device_bytes, uint64_t device_total)
{
    return device_bytes >= BW_DEVICE_LOCK_BYTES &&
           (device_total == 0 || device_bytes > device_total / 4);
}

int bw_device_lock_take(bw_device_lock *l, uint64_t device_bytes, uint64_t device_total)
{
    if (l->path == NULL || !bw_device_lock_needed(device_bytes, device_total) || l->fd >= 0)
        return 0;
    int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int rc;
    do {
        rc = flock(fd, LOCK_EX);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    l->fd = fd;
    return 0;
}

void bw_device_lock_release(bw_device_lock *l)
{
    if (l->fd < 0)
        return;
    close(l->fd);   /* drops the lock */
    l->fd = -1;
}
