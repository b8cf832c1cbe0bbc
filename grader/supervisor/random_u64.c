/* See random_u64.h. */
#include <fcntl.h>
#include <unistd.h>
#include "mix64.h"
#include "mono_clock.h"
#include "random_u64.h"

uint64_t bw_random_u64(void)
{
    static uint64_t counter = 0;
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
            v = 0;
        close(fd);
    }
    counter++;
    uint64_t ns = (uint64_t)(bw_mono_s() * 1e9);
    v ^= bw_mix64(ns ^ ((uint64_t)getpid() << 40) ^ counter);
    return v != 0 ? v : 1;
}
