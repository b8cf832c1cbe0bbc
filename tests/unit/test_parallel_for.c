/* parallel_for: every index exactly once, for many shapes of the problem,
 * plus the default thread count, the fallback when threads cannot start,
 * chunks taken by whichever thread is free,
 * and its pool of threads: kept between calls, bypassed by a nested call,
 * started afresh after a fork. */
#define _GNU_SOURCE /* syscall(SYS_gettid) */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "parallel_for.h"
#include "check_support.h"

#define EXPECT(cond, ...)                \
    do {                                 \
        if (!(cond))                     \
            ck_abort_msg(__VA_ARGS__);   \
    } while (0)

#define MAX_CALLS 4096

/* What the bodies saw: per-index visit counts and one record per call.
 * Calls are recorded under a mutex; visits are atomic so that a bug giving
 * two chunks the same index shows up as a count of 2, not a data race. */
typedef struct {
    int64_t n;
    atomic_uchar *visits;
    pthread_mutex_t lock;
    int calls;
    int64_t begin[MAX_CALLS], end[MAX_CALLS];
    pthread_t who[MAX_CALLS];
} record;

static void record_body(int64_t begin, int64_t end, void *arg)
{
    record *r = arg;
    if (r->visits != NULL)
        for (int64_t i = begin; i < end && i >= 0 && i < r->n; i++)
            atomic_fetch_add(&r->visits[i], 1);
    pthread_mutex_lock(&r->lock);
    if (r->calls < MAX_CALLS) {
        r->begin[r->calls] = begin;
        r->end[r->calls] = end;
        r->who[r->calls] = pthread_self();
    }
    r->calls++;
    pthread_mutex_unlock(&r->lock);
}

static record *record_new(int64_t n, int count_visits)
{
    record *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    r->n = n;
    if (count_visits) {
        r->visits = calloc((size_t)(n > 0 ? n : 1), sizeof *r->visits);
        ck_assert_ptr_nonnull(r->visits);
    }
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

static void record_free(record *r)
{
    pthread_mutex_destroy(&r->lock);
    free(r->visits);
    free(r);
}

static int by_begin(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The recorded ranges, sorted, must tile [0, n) with no gap or overlap. */
static void expect_tiling(const record *r, const char *what)
{
    EXPECT(r->calls <= MAX_CALLS, "%s: %d calls", what, r->calls);
    int64_t(*ranges)[2] = malloc((size_t)(r->calls > 0 ? r->calls : 1) * sizeof *ranges);
    ck_assert_ptr_nonnull(ranges);
    int m = 0;
    for (int i = 0; i < r->calls; i++) {
        EXPECT(r->begin[i] <= r->end[i], "%s: call %d has begin %lld > end %lld", what, i,
               (long long)r->begin[i], (long long)r->end[i]);
        if (r->begin[i] < r->end[i]) {
            ranges[m][0] = r->begin[i];
            ranges[m][1] = r->end[i];
            m++;
        }
    }
    qsort(ranges, (size_t)m, sizeof *ranges, by_begin);
    int64_t at = 0;
    for (int i = 0; i < m; i++) {
        EXPECT(ranges[i][0] == at, "%s: range %d starts at %lld, expected %lld", what, i,
               (long long)ranges[i][0], (long long)at);
        at = ranges[i][1];
    }
    EXPECT(at == (r->n > 0 ? r->n : 0), "%s: ranges end at %lld, n = %lld", what, (long long)at,
           (long long)r->n);
    free(ranges);
}

static void run_case(int64_t n, int threads, int64_t min_chunk)
{
    char what[128];
    snprintf(what, sizeof what, "n=%lld threads=%d min_chunk=%lld", (long long)n, threads,
             (long long)min_chunk);
    record *r = record_new(n, 1);
    int rc = parallel_for(n, threads, min_chunk, record_body, r);
    EXPECT(rc == 0, "%s: returned %d", what, rc);
    for (int64_t i = 0; i < n; i++)
        EXPECT(r->visits[i] == 1, "%s: index %lld visited %d times", what, (long long)i,
               (int)r->visits[i]);
    expect_tiling(r, what);

    int64_t eff_min = min_chunk < 1 ? 1 : min_chunk;
    int nonempty = 0;
    for (int i = 0; i < r->calls; i++)
        nonempty += r->begin[i] < r->end[i];
    if (threads <= 1 || n < 2 * eff_min) {
        /* Promised inline: at most one call, on this very thread. */
        EXPECT(nonempty <= 1, "%s: expected one inline call, got %d", what, nonempty);
        for (int i = 0; i < r->calls; i++)
            EXPECT(pthread_equal(r->who[i], pthread_self()), "%s: ran off the caller's thread", what);
    } else {
        /* Split: at most 8 chunks per thread, none smaller than min_chunk,
         * and the work really was spread over more than one thread. */
        EXPECT(nonempty >= 2 && nonempty <= 8 * threads, "%s: %d chunks", what, nonempty);
        int other = 0;
        for (int i = 0; i < r->calls; i++) {
            if (r->begin[i] < r->end[i])
                EXPECT(r->end[i] - r->begin[i] >= eff_min, "%s: chunk of %lld", what,
                       (long long)(r->end[i] - r->begin[i]));
            other |= !pthread_equal(r->who[i], pthread_self());
        }
        EXPECT(other, "%s: every chunk ran on the caller", what);
    }
    record_free(r);
}

START_TEST(t_every_index_once)
{
    const int64_t ns[] = {0, 1, 2, 3, 7, 63, 64, 65, 1000, 4097, 100003};
    const int threads[] = {-1, 0, 1, 2, 3, 4, 7, 16, 64};
    const int64_t chunks[] = {-5, 0, 1, 2, 7, 1000, (int64_t)1 << 20};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof threads / sizeof threads[0]; b++)
            for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
                run_case(ns[a], threads[b], chunks[c]);
}
END_TEST

START_TEST(t_n_zero_and_one)
{
    for (int t = 0; t <= 16; t++) {
        record *r = record_new(0, 0);
        ck_assert_int_eq(parallel_for(0, t, 1, record_body, r), 0);
        expect_tiling(r, "n=0");
        record_free(r);
        run_case(1, t, 1);
        run_case(1, t, 0);
    }
    /* Negative n is an empty range, not a huge one. */
    record *r = record_new(-3, 0);
    ck_assert_int_eq(parallel_for(-3, 4, 1, record_body, r), 0);
    for (int i = 0; i < r->calls; i++)
        ck_assert(r->begin[i] >= r->end[i]);
    record_free(r);
}
END_TEST

/* Ranges past 2^31 (and near INT64_MAX) come out whole: nothing in the split
 * is done in int. Only the ranges are recorded; no memory per index. */
START_TEST(t_huge_n_ranges)
{
    const int64_t ns[] = {((int64_t)1 << 31) - 1, ((int64_t)1 << 31) + 1, ((int64_t)1 << 33) + 3,
                          INT64_MAX};
    const int threads[] = {2, 3, 7, 16};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof threads / sizeof threads[0]; b++) {
            int64_t mins[] = {1, (int64_t)1 << 20, ns[a] / 3};
            for (size_t c = 0; c < 3; c++) {
                record *r = record_new(ns[a], 0);
                ck_assert_int_eq(parallel_for(ns[a], threads[b], mins[c], record_body, r), 0);
                expect_tiling(r, "huge n");
                record_free(r);
            }
        }
}
END_TEST

START_TEST(t_default_threads)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int want_cpus = cpus < 1 ? 1 : (int)cpus;
    unsetenv("BWLAB_THREADS");
    ck_assert_int_eq(parallel_default_threads(), want_cpus);
    setenv("BWLAB_THREADS", "3", 1);
    ck_assert_int_eq(parallel_default_threads(), 3);
    setenv("BWLAB_THREADS", "1", 1);
    ck_assert_int_eq(parallel_default_threads(), 1);
    setenv("BWLAB_THREADS", "37", 1);
    ck_assert_int_eq(parallel_default_threads(), 37);
    /* Not a positive number: ignored, the CPU count is used. */
    const char *bad[] = {"", "0", "-2", "abc", "4x", " "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("BWLAB_THREADS", bad[i], 1);
        ck_assert_msg(parallel_default_threads() == want_cpus, "BWLAB_THREADS='%s'", bad[i]);
    }
    setenv("BWLAB_THREADS", "999999999999", 1);
    ck_assert_int_ge(parallel_default_threads(), 1);
    unsetenv("BWLAB_THREADS");
}
END_TEST

/* Our own address-space size, from /proc/self/statm (pages). */
static long long vm_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    long long pages = -1;
    if (fscanf(f, "%lld", &pages) != 1)
        pages = -1;
    fclose(f);
    return pages < 0 ? -1 : pages * sysconf(_SC_PAGESIZE);
}

/* With the address space capped just above what is in use, thread stacks
 * cannot be mapped, so pthread_create fails. The caller must then finish the
 * work itself and say so with -1. */
START_TEST(t_thread_start_failure)
{
#ifdef __SANITIZE_THREAD__
    return; /* TSan's own allocator dies under the cap before we learn anything */
#endif
    const int64_t n = 100003;
    record *r = record_new(n, 1);
    free(malloc(1 << 12)); /* leave the heap room for parallel_for's small table */
    long long used = vm_bytes();
    if (used < 0) {
        record_free(r);
        return; /* no /proc: nothing to measure the cap against */
    }
    struct rlimit old;
    ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
    struct rlimit cap = old;
    cap.rlim_cur = (rlim_t)used + ((rlim_t)2 << 20);
    if (old.rlim_cur != RLIM_INFINITY && cap.rlim_cur > old.rlim_cur)
        cap.rlim_cur = old.rlim_cur;
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &cap), 0);

    int rc = parallel_for(n, 64, 1, record_body, r);

    ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0); /* in case Check does not fork */
    ck_assert_int_eq(rc, -1);
    for (int64_t i = 0; i < n; i++)
        EXPECT(r->visits[i] == 1, "index %lld visited %d times", (long long)i, (int)r->visits[i]);
    expect_tiling(r, "capped");
    record_free(r);
}
END_TEST

/* A thread held up: the chunk holding index 0 waits until every other
 * index is done. The other threads must take the rest between them, so
 * what waited on the held-up thread is one small chunk. Catches one chunk
 * per thread (a quarter of [0, n) waits) and chunks dealt out in advance
 * (the wait never ends; it gives up after 10 s and the test fails). */
typedef struct {
    int64_t n;
    atomic_llong done;
    atomic_llong held_len;
    atomic_int gave_up;
} held_ctx;

static void held_body(int64_t begin, int64_t end, void *arg)
{
    held_ctx *h = arg;
    if (begin == 0) {
        atomic_store(&h->held_len, end - begin);
        int64_t others = h->n - (end - begin);
        for (int ms = 0; atomic_load(&h->done) < others && ms < 10000; ms++)
            usleep(1000);
        if (atomic_load(&h->done) < others)
            atomic_store(&h->gave_up, 1);
    }
    atomic_fetch_add(&h->done, end - begin);
}

START_TEST(t_held_up_thread_is_covered)
{
    held_ctx h;
    h.n = (int64_t)1 << 16;
    atomic_init(&h.done, 0);
    atomic_init(&h.held_len, 0);
    atomic_init(&h.gave_up, 0);
    ck_assert_int_eq(parallel_for(h.n, 4, 1, held_body, &h), 0);
    ck_assert_int_eq(atomic_load(&h.gave_up), 0);
    ck_assert_int_eq(atomic_load(&h.done), h.n);
    EXPECT(atomic_load(&h.held_len) <= h.n / 8, "the held-up chunk had %lld of %lld elements",
           (long long)atomic_load(&h.held_len), (long long)h.n);
}
END_TEST

/* The kernel's id of the calling thread: unlike a pthread_t, not reused
 * soon after a thread ends. */
static long kernel_tid(void) { return (long)syscall(SYS_gettid); }

typedef struct {
    pthread_mutex_t lock;
    long tids[64];
    int count;
} tid_set;

static void tid_body(int64_t begin, int64_t end, void *arg)
{
    (void)begin;
    (void)end;
    tid_set *t = arg;
    pthread_mutex_lock(&t->lock);
    if (t->count < 64)
        t->tids[t->count++] = kernel_tid();
    pthread_mutex_unlock(&t->lock);
}

static int has_tid(const tid_set *t, long tid)
{
    for (int i = 0; i < t->count; i++)
        if (t->tids[i] == tid)
            return 1;
    return 0;
}

/* The second call runs on the first call's threads. Catches threads
 * started (and ended) on every call. */
START_TEST(t_pool_threads_are_kept)
{
    tid_set a = {PTHREAD_MUTEX_INITIALIZER, {0}, 0}, b = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    ck_assert_int_eq(parallel_for(8, 8, 1, tid_body, &a), 0);
    ck_assert_int_eq(parallel_for(8, 8, 1, tid_body, &b), 0);
    ck_assert_int_eq(a.count, 8);
    ck_assert_int_eq(b.count, 8);
    for (int i = 0; i < b.count; i++)
        EXPECT(has_tid(&a, b.tids[i]), "thread %ld of the second call is new", b.tids[i]);
}
END_TEST

typedef struct {
    record *inner;
    atomic_int nested_rc;
} nest_ctx;

static void nesting_body(int64_t begin, int64_t end, void *arg)
{
    nest_ctx *n = arg;
    for (int64_t i = begin; i < end; i++) {
        record *r = &n->inner[i];
        if (parallel_for(r->n, 4, 1, record_body, r) != 0)
            atomic_store(&n->nested_rc, -1);
    }
}

/* A body that calls parallel_for while the pool is busy: the inner call
 * gets threads of its own and finishes. Catches an inner call that waits
 * for the pool (a deadlock) or is lost. */
START_TEST(t_nested_calls_finish)
{
    enum { OUTER = 6 };
    record *inner = calloc(OUTER, sizeof *inner);
    ck_assert_ptr_nonnull(inner);
    for (int i = 0; i < OUTER; i++) {
        record *r = record_new(1000 + i, 1);
        inner[i] = *r;
        free(r);
    }
    nest_ctx n = {inner, 0};
    ck_assert_int_eq(parallel_for(OUTER, 3, 1, nesting_body, &n), 0);
    ck_assert_int_eq(atomic_load(&n.nested_rc), 0);
    for (int i = 0; i < OUTER; i++) {
        for (int64_t k = 0; k < inner[i].n; k++)
            EXPECT(inner[i].visits[k] == 1, "inner %d index %lld visited %d times", i,
                   (long long)k, (int)inner[i].visits[k]);
        free(inner[i].visits);
    }
    free(inner);
}
END_TEST

/* A child forked after the pool started has none of its threads: its
 * calls must start their own. Catches a child waiting forever for threads
 * that stayed in the parent (it is killed by an alarm after 10 s). */
START_TEST(t_pool_after_fork)
{
    record *r = record_new(5000, 1);
    ck_assert_int_eq(parallel_for(r->n, 4, 1, record_body, r), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(10);
        record *c = record_new(7000, 1);
        int rc = parallel_for(c->n, 4, 1, record_body, c);
        for (int64_t i = 0; i < c->n; i++)
            if (c->visits[i] != 1)
                _exit(2);
        _exit(rc == 0 ? 0 : 3);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status 0x%x", status);
    record_free(r);
}
END_TEST

static Suite *parallel_for_suite(void)
{
    Suite *s = suite_create("parallel_for");
    TCase *tc = tcase_create("parallel_for");
    tcase_set_timeout(tc, 120); /* Check's own default is 4 s */
    tcase_add_test(tc, t_every_index_once);
    tcase_add_test(tc, t_n_zero_and_one);
    tcase_add_test(tc, t_huge_n_ranges);
    tcase_add_test(tc, t_default_threads);
    tcase_add_test(tc, t_thread_start_failure);
    tcase_add_test(tc, t_held_up_thread_is_covered);
    tcase_add_test(tc, t_pool_threads_are_kept);
    tcase_add_test(tc, t_nested_calls_finish);
    tcase_add_test(tc, t_pool_after_fork);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bw_run_suite(parallel_for_suite()); }
