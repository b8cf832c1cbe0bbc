/* A lock file shared by bwgrade processes testing on the same GPU at once
 * (run.py test runs the exercises side by side): only one of them runs a
 * case with large device arrays at a time, so that two such cases never
 * compete for device memory and fail for want of it. A case that needs at
 * most a quarter of the device's memory goes without: up to four such
 * cases fit side by side (on an 80 GB H100, even the largest, 13 GB). */
#ifndef BWLAB_DEVICE_LOCK_H
#define BWLAB_DEVICE_LOCK_H
#include <stdint.h>

/* Cases whose device arrays take at least this much, and over a quarter
 * of the device's memory, hold the lock. */
#define BW_DEVICE_LOCK_BYTES ((uint64_t)1 << 30)

typedef struct {
    const char *path;   /* NULL: no lock, every call returns at once */
    int fd;             /* open while held */
} bw_device_lock;

void bw_device_lock_init(bw_device_lock *l, const char *path);
/* Whether a case of device_bytes on a device of device_total bytes (0:
 * unknown) needs the lock. */
int bw_device_lock_needed(uint64_t device_bytes, uint64_t device_total);
/* Waits for the lock when bw_device_lock_needed. 0 (held, or not needed),
 * or -1 with errno set when the file cannot be opened or locked: the caller
 * goes on without it. */
int bw_device_lock_take(bw_device_lock *l, uint64_t device_bytes, uint64_t device_total);
void bw_device_lock_release(bw_device_lock *l);

#endif
