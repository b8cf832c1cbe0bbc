/* Split [0, n) into contiguous chunks and run them on pthreads. */
#ifndef BWLAB_PARALLEL_FOR_H
#define BWLAB_PARALLEL_FOR_H
#include <stdint.h>

typedef void (*parallel_body)(int64_t begin, int64_t end, void *ctx);

/* Threads to use by default: the online CPUs (at least 1), or the value of
 * the environment variable BWLAB_THREADS when set. */
int parallel_default_threads(void);

/* Runs body over [0, n), cut into chunks of at least min_chunk elements,
 * up to 8 per thread, each taken by whichever thread is free (the caller
 * is one). threads <= 1, or n below min_chunk * 2, runs it inline on the
 * caller. Chunks never overlap, so a body that writes only indices in its
 * chunk gives the same result for every thread count.
 * Returns 0, or -1 if a thread could not be started (the work is then
 * finished on the caller, so the result is still complete). */
int parallel_for(int64_t n, int threads, int64_t min_chunk,
                 parallel_body body, void *ctx);

#endif
