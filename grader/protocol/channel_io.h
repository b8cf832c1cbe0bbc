/* Reading and writing the grader <-> worker socket, used by both ends. */
#ifndef BWLAB_CHANNEL_IO_H
#define BWLAB_CHANNEL_IO_H
#include <stddef.h>

/* Sends all len bytes (retrying short sends and EINTR, never SIGPIPE).
 * 0, or -1 with errno set. */
int bw_send_all(int fd, const void *buf, size_t len);

/* Reads exactly len bytes (retrying EINTR). 0; 1 when the peer closed
 * first; -1 on error. */
int bw_read_all(int fd, void *buf, size_t len);

#endif
