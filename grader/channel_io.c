/* See channel_io.h. */
#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>
#include "channel_io.h"

int bw_send_all(int fd, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t r = send(fd, p, len, MSG_NOSIGNAL);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        len -= (size_t)r;
    }
    return 0;
}
