/* Writing a whole message to the grader <-> worker socket; both ends use it. */
#ifndef BWLAB_CHANNEL_IO_H
#define BWLAB_CHANNEL_IO_H
#include <stddef.h>

/* Sends all len bytes, retrying after signals; never raises SIGPIPE (a
 * peer that went away is an error return, not a dead grader).
 * Returns 0, or -1 with errno set. */
int bw_send_all(int fd, const void *buf, size_t len);

#endif
