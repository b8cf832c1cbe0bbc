/* Writing to the grader <-> worker socket, used by both ends of it. */
#ifndef BWLAB_CHANNEL_IO_H
#define BWLAB_CHANNEL_IO_H
#include <stddef.h>

/* Sends all len bytes (retrying short sends and EINTR, never SIGPIPE).
 * 0, or -1 with errno set. */
int bw_send_all(int fd, const void *buf, size_t len);

#endif
