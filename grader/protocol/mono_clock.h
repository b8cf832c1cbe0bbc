/* Seconds on CLOCK_MONOTONIC, for time limits and host-clock timing, in the
 * grader and in the worker alike. */
#ifndef BWLAB_MONO_CLOCK_H
#define BWLAB_MONO_CLOCK_H
#include <time.h>

static inline double bw_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
