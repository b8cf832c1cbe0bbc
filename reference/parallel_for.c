/* A minimal fork-join loop on pthreads: [0, n) is cut into one contiguous
 * chunk per thread, the caller runs the first chunk itself and joins the
 * rest. No work stealing: the reference kernels cost the same per element. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* sysconf, pthreads under -std=c11 */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include "parallel_for.h"

/* Far above any real core count; keeps a typo in BWLAB_THREADS from asking
 * for millions of threads. */
#define PARALLEL_MAX_THREADS 4096

int parallel_default_threads(void)
{
    const char *env = getenv("BWLAB_THREADS");
    if (env != NULL && *env != '\0') {
        char *end;
        errno = 0;
        long v = strtol(env, &end, 10);
        /* Anything that is not a plain positive number is ignored rather than
         * trusted: falling back to the CPU count is always safe. */
        if (errno == 0 && *end == '\0' && v >= 1)
            return v > PARALLEL_MAX_THREADS ? PARALLEL_MAX_THREADS : (int)v;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        return 1;
    return cpus > PARALLEL_MAX_THREADS ? PARALLEL_MAX_THREADS : (int)cpus;
}

typedef struct {
    pthread_t tid;
    int64_t begin, end;
    parallel_body body;
    void *ctx;
} chunk;

static void *chunk_main(void *arg)
{
    chunk *c = arg;
    c->body(c->begin, c->end, c->ctx);
    return NULL;
}

int parallel_for(int64_t n, int threads, int64_t min_chunk,
                 parallel_body body, void *ctx)
{
    if (n <= 0)
        return 0;
    if (min_chunk < 1)
        min_chunk = 1;
    /* n / 2 < min_chunk is n < 2 * min_chunk without the overflow. */
    if (threads <= 1 || n / 2 < min_chunk) {
        body(0, n, ctx);
        return 0;
    }

    /* Every chunk gets at least min_chunk elements, so small n uses fewer
     * threads than asked. */
    int64_t k = n / min_chunk;
    if (k > threads)
        k = threads;
    if (k > PARALLEL_MAX_THREADS)
        k = PARALLEL_MAX_THREADS;

    chunk *c = malloc((size_t)k * sizeof *c);
    if (c == NULL) {
        body(0, n, ctx);
        return -1;
    }

    /* Sizes differ by at most one: the first n % k chunks take the extra. */
    int64_t base = n / k, extra = n % k, at = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t len = base + (i < extra ? 1 : 0);
        c[i].begin = at;
        c[i].end = at + len;
        c[i].body = body;
        c[i].ctx = ctx;
        at += len;
    }

    /* Chunk 0 is the caller's. If a thread cannot be started, the caller
     * takes that chunk and every later one, so the result is still whole. */
    int rc = 0;
    int64_t started = 1;
    for (; started < k; started++)
        if (pthread_create(&c[started].tid, NULL, chunk_main, &c[started]) != 0) {
            rc = -1;
            break;
        }
    body(0, base + (extra > 0 ? 1 : 0), ctx); /* chunk 0, as laid out above */
    for (int64_t i = started; i < k; i++)
        body(c[i].begin, c[i].end, ctx);
    for (int64_t i = 1; i < started; i++)
        pthread_join(c[i].tid, NULL);

    free(c);
    return rc;
}
