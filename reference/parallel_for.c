/* A minimal fork-join loop on pthreads: [0, n) is cut into one contiguous
 * chunk per thread, the caller runs the first chunk itself and waits for the
 * rest. No work stealing: the reference kernels cost the same per element.
 *
 * The threads are kept in a pool between calls: a streamed case calls this
 * twice per 64 MiB chunk, hundreds of times for the largest case, and
 * starting 15 threads each time cost more than the work on the lent H100's
 * virtual machine (issue 12). A call made while the pool is busy (from
 * another thread, or from inside a body) starts its own threads, as does a
 * process forked from one that had a pool. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* sysconf, pthreads under -std=c11 */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/types.h>
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

/* ---- the pool ---------------------------------------------------------- */

static pthread_mutex_t pool_busy = PTHREAD_MUTEX_INITIALIZER; /* held for a whole call */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static pid_t pool_pid;           /* the process whose threads these are */
static int pool_size;            /* threads started; thread i runs chunk i (i >= 1) */
static uint64_t pool_round;      /* bumped for each call */
static chunk *pool_chunks;
static int64_t pool_count;       /* chunks of the current call */
static int64_t pool_pending;     /* ... not yet finished by a pool thread */

static void *pool_main(void *arg)
{
    const int64_t me = (int64_t)(intptr_t)arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool_mu);
    for (;;) {
        while (pool_round == seen)
            pthread_cond_wait(&pool_go, &pool_mu);
        seen = pool_round;
        if (me >= pool_count)
            continue;
        chunk c = pool_chunks[me];
        pthread_mutex_unlock(&pool_mu);
        c.body(c.begin, c.end, c.ctx);
        pthread_mutex_lock(&pool_mu);
        if (--pool_pending == 0)
            pthread_cond_signal(&pool_done);
    }
    return NULL;
}

/* Grows the pool to want threads (thread 0 is the caller); returns how
 * many it has. Called with pool_busy held. */
static int pool_grow(int want)
{
    if (pool_pid != getpid()) {
        /* Forked: the threads stayed behind in the parent. */
        pthread_mutex_init(&pool_mu, NULL);
        pthread_cond_init(&pool_go, NULL);
        pthread_cond_init(&pool_done, NULL);
        pool_size = 1;
        pool_round = 0;
        pool_pid = getpid();
    }
    while (pool_size < want) {
        pthread_t tid;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) != 0)
            break;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&tid, &attr, pool_main, (void *)(intptr_t)pool_size);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        pool_size++;
    }
    return pool_size;
}

/* Runs chunks 1 .. k-1 on the pool and chunk 0 on the caller; chunks the
 * pool has no thread for run on the caller too. 0, or -1 when the pool
 * could not grow to k. Called with pool_busy held. */
static int pool_run(chunk *c, int64_t k)
{
    int have = pool_grow((int)k);
    int64_t on_pool = have < k ? have : k;
    pthread_mutex_lock(&pool_mu);
    pool_chunks = c;
    pool_count = on_pool;
    pool_pending = on_pool - 1;
    pool_round++;
    pthread_cond_broadcast(&pool_go);
    pthread_mutex_unlock(&pool_mu);
    c[0].body(c[0].begin, c[0].end, c[0].ctx);
    for (int64_t i = on_pool; i < k; i++)
        c[i].body(c[i].begin, c[i].end, c[i].ctx);
    pthread_mutex_lock(&pool_mu);
    while (pool_pending > 0)
        pthread_cond_wait(&pool_done, &pool_mu);
    pool_count = 0;
    pthread_mutex_unlock(&pool_mu);
    return on_pool < k ? -1 : 0;
}

/* ---- the loop ---------------------------------------------------------- */

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

    if (pthread_mutex_trylock(&pool_busy) == 0) {
        int rc = pool_run(c, k);
        pthread_mutex_unlock(&pool_busy);
        free(c);
        return rc;
    }

    /* Pool busy: threads of its own. Chunk 0 is the caller's. If a thread
     * cannot be started, the caller takes that chunk and every later one,
     * so the result is still whole. */
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
