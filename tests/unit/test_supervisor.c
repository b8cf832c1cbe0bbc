/* The supervisor and the shared memory, driven against tests/unit/fake_worker.c
 * (no CUDA needed). Every test ends by checking that no child process of the
 * test was left unreaped. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "containment.h"
#include "image.h"
#include "shm.h"
#include "random_u64.h"
#include "run_dialogue.h"
#include "stream_plan.h"
#include "supervisor.h"
#include "shm_view.h"
#include "check_support.h"

#ifndef BW_FAKE_WORKER
#error "BW_FAKE_WORKER (the fake worker's path) must be defined by the build"
#endif

#define IMAGE_BYTES 4096u

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static bw_worker_opts fake_opts(size_t cap, double startup)
{
    bw_worker_opts o;
    memset(&o, 0, sizeof o);
    o.worker_path = BW_FAKE_WORKER;
    o.output_cap = cap;
    o.startup_timeout_s = startup;
    return o;
}

static bw_worker *start_fake(bw_shm *shm, size_t cap)
{
    bw_worker_opts o = fake_opts(cap, 5.0);
    bw_reply hello;
    char *why = NULL;
    /* A descriptor without close-on-exec, as a grader might hold: the
     * worker must not inherit it (the fake reports leaks in its HELLO). */
    int stray = open("/dev/null", O_RDONLY);
    ck_assert_int_ge(stray, 0);
    bw_worker *w = bw_worker_start(&o, shm, &hello, &why);
    close(stray);
    ck_assert_msg(w != NULL, "start failed: %s", why != NULL ? why : "(no reason)");
    ck_assert_ptr_null(why);
    /* The fake checks descriptors, process group and limits itself. */
    ck_assert_str_eq(hello.message, "ok");
    ck_assert_str_eq(hello.device_name, "fake device");
    ck_assert_int_eq(hello.status, BW_REP_OK);
    ck_assert(bw_worker_alive(w));
    return w;
}

static bw_shm *make_shm(size_t bytes)
{
    bw_shm *s = bw_shm_create();
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(bw_shm_reserve(s, bytes));
    return s;
}

/* What the fake worker does at HELLO (see fake_worker.c): mode "crash",
 * "hang" or "nodevice", or NULL for a normal start. Through shared memory, as
 * the test's environment does not reach the worker. */
static void fake_hello(bw_shm *shm, const char *mode)
{
    ck_assert_uint_ge(bw_shm_size(shm), 64);
    memset(bw_shm_data(shm), 0, 64);
    if (mode != NULL)
        snprintf((char *)bw_shm_data(shm), 64, "FAKE_HELLO=%s", mode);
}

/* A RUN without a chunk plan over n_arrays images of image_bytes each,
 * back to back from the start of shared memory: bf16 data filling each
 * image whole (the fake worker adds 1 to every byte of every image). */
static bw_request run_req(int n, int n_arrays, uint64_t image_bytes, const bw_shm *shm)
{
    bw_request q;
    memset(&q, 0, sizeof q);
    ck_assert_int_le(n_arrays, BW_MAX_ARRAYS);
    q.magic = BW_PROTO_MAGIC;
    q.kind = BW_REQ_RUN;
    q.n = n;
    q.rows = 1;
    q.cols = n > 0 ? n : 0;   /* a negative n picks the fake's behaviour */
    q.n_arrays = n_arrays;
    q.by_value = -1;
    for (int k = 0; k < n_arrays; k++) {
        bw_array_geom *g = &q.arrays[k];
        g->elem_bytes = 2;
        g->flags = BW_ARRAY_INPUT;
        g->count = (int64_t)(image_bytes / 2);
        g->front_bytes = 0;
        g->data_bytes = image_bytes;
        g->back_bytes = 0;
        g->image_bytes = image_bytes;
        g->place = (uint64_t)k * image_bytes;
        g->outer = 1;
        g->inner = g->count;
    }
    q.shm_bytes = bw_shm_size(shm);
    return q;
}

/* One RUN; returns the call status, *why freed unless wanted. */
static bw_call_status call_n(bw_worker *w, bw_shm *shm, int n, double timeout, bw_reply *rep,
                             char **why_out)
{
    bw_request q = run_req(n, 1, IMAGE_BYTES, shm);
    bw_reply local;
    char *why = NULL;
    bw_call_status st = bw_worker_call(w, &q, rep != NULL ? rep : &local, timeout, &why);
    if (why_out != NULL)
        *why_out = why;
    else
        free(why);
    return st;
}

static void assert_no_children(void)
{
    int status;
    errno = 0;
    pid_t r = waitpid(-1, &status, WNOHANG);
    ck_assert_msg(r == -1 && errno == ECHILD, "a child process was left behind (waitpid: %d)",
                  (int)r);
}

/* Gone: no such process, or a zombie of someone else (init may be slow to reap). */
static int process_gone(pid_t pid)
{
    for (int i = 0; i < 200; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            return 1;
        char buf[512];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *rp = strrchr(buf, ')');
        if (rp != NULL && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
            return 1;
        nap_ms(10);
    }
    return 0;
}

static int contains(const char *hay, const char *needle)
{
    return hay != NULL && strstr(hay, needle) != NULL;
}

/* ------------------------------------------------------------------ shm */

START_TEST(shm_grows_and_keeps_contents)
{
    bw_shm *s = bw_shm_create();
    ck_assert_ptr_nonnull(s);
    const int *fds = bw_shm_fds(s);
    ck_assert_ptr_nonnull(fds);
    for (int k = 0; k < BW_SHM_SEGMENTS; k++) {
        int fdflags = fcntl(fds[k], F_GETFD);
        ck_assert_int_ge(fdflags, 0);
        ck_assert_msg((fdflags & FD_CLOEXEC) == 0, "shm segment %d must survive exec", k);
    }

    uint8_t *a = bw_shm_reserve(s, 100);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_ge(bw_shm_size(s), 100);
    ck_assert_ptr_eq(bw_shm_data(s), a);
    for (int i = 0; i < 100; i++)
        a[i] = (uint8_t)(i * 7);
    /* Past the first segment: the second file grows, the address stays. */
    size_t big = (size_t)BW_SHM_SEGMENT_BYTES + ((size_t)10 << 20);
    uint8_t *b = bw_shm_reserve(s, big);
    ck_assert_ptr_eq(b, a);
    ck_assert_uint_ge(bw_shm_size(s), big);
    for (int i = 0; i < 100; i++)
        ck_assert_uint_eq(b[i], (uint8_t)(i * 7));
    b[big - 1] = 0xee; /* the whole range is mapped */
    struct stat st;
    ck_assert_int_eq(fstat(fds[0], &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, BW_SHM_SEGMENT_BYTES);
    ck_assert_int_eq(fstat(fds[1], &st), 0);
    ck_assert_uint_ge((uint64_t)st.st_size, (uint64_t)10 << 20);
    ck_assert_int_eq(fstat(fds[2], &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, 0);
    /* A worker's view of the same segments sees the same bytes. */
    ck_assert_uint_eq(bw_shm_view_bytes(fds), bw_shm_size(s));
    uint8_t *view = bw_shm_view_map(fds);
    ck_assert_ptr_nonnull(view);
    ck_assert_uint_eq(view[big - 1], 0xee);
    ck_assert_uint_eq(view[99], (uint8_t)(99 * 7));
    bw_shm_view_unmap(view);
    size_t before = bw_shm_size(s);
    ck_assert_ptr_eq(bw_shm_reserve(s, 5), b); /* never shrinks */
    ck_assert_uint_eq(bw_shm_size(s), before);
    bw_shm_destroy(s);
    bw_shm_destroy(NULL);
}
END_TEST

/* ------------------------------------------------------------ supervisor */

START_TEST(run_round_trips_shared_memory)
{
    bw_shm *shm = make_shm(3 * IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    uint8_t *m = bw_shm_data(shm);
    for (unsigned i = 0; i < 3 * IMAGE_BYTES; i++)
        m[i] = (uint8_t)(i * 13 + 1);

    bw_request q = run_req(5, 3, IMAGE_BYTES, shm);
    bw_reply rep;
    char *why = NULL;
    ck_assert_int_eq(bw_worker_call(w, &q, &rep, 2.0, &why), BW_CALL_OK);
    ck_assert_ptr_null(why);
    ck_assert_int_eq(rep.status, BW_REP_OK);
    ck_assert_uint_eq(rep.kind, BW_REQ_RUN);
    ck_assert(rep.call_ms == 1.0);
    for (unsigned i = 0; i < 3 * IMAGE_BYTES; i++)
        ck_assert_uint_eq(m[i], (uint8_t)(i * 13 + 2));

    /* Grown shared memory: the worker maps the new size (every array's
     * image counts: BW_MAX_ARRAYS images of big / BW_MAX_ARRAYS bytes). */
    size_t big = (size_t)6 << 20;
    m = bw_shm_reserve(shm, big);
    ck_assert_ptr_nonnull(m);
    memset(m, 0x40, big);
    q = run_req(1, BW_MAX_ARRAYS, big / BW_MAX_ARRAYS, shm);
    ck_assert_int_eq(bw_worker_call(w, &q, &rep, 2.0, &why), BW_CALL_OK);
    ck_assert_int_eq(rep.status, BW_REP_OK);
    ck_assert_uint_eq(m[0], 0x41);
    ck_assert_uint_eq(m[big - 1], 0x41);
    ck_assert(bw_worker_alive(w));
    ck_assert_ptr_null(bw_worker_take_output(w));
    ck_assert_ptr_null(bw_worker_take_sanitizer_log(w));
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

/* ------------------------------------------------------------ RUN dialogue */

/* Array k's geometry as bw_case_data_request fills it (judge/case_data.c):
 * count elements of elem_bytes at offset offset_elems, one vector. */
static void set_geom(bw_request *q, int k, int64_t count, int elem_bytes, int offset_elems,
                     uint32_t flags)
{
    bw_image_layout l = bw_image_layout_for(count, elem_bytes, offset_elems, 0);
    bw_array_geom *g = &q->arrays[k];
    g->elem_bytes = (uint32_t)elem_bytes;
    g->flags = flags;
    g->count = count;
    g->front_bytes = l.front_bytes;
    g->data_bytes = l.data_bytes;
    g->back_bytes = l.back_bytes;
    g->image_bytes = l.total_bytes;
    g->outer = 1;
    g->inner = count;
}

/* A RUN of 3 arrays through 2 slots of 12 KiB: 5,000 bf16 elements, 5,000
 * fp32 ones and a whole fp32 result (one element, travelling in chunk 0
 * only), as a reduction with two inputs of two types would send them.
 * 4 chunks, so the window wraps in both directions. mode: scalar 0, which
 * tells the fake worker how to behave. */
static bw_request dialogue_req(float mode)
{
    bw_request q;
    memset(&q, 0, sizeof q);
    q.magic = BW_PROTO_MAGIC;
    q.kind = BW_REQ_RUN;
    q.n = 5000;
    q.rows = 1;
    q.cols = 5000;
    q.n_scalars = 1;
    q.scalars[0] = mode;
    q.n_arrays = 3;
    q.by_value = 2;
    set_geom(&q, 0, 5000, 2, 3, BW_ARRAY_INPUT);
    set_geom(&q, 1, 5000, 4, 3, BW_ARRAY_INPUT);
    set_geom(&q, 2, 1, 4, 0, BW_ARRAY_WHOLE);
    ck_assert_int_eq(q.arrays[0].front_bytes, 518);
    ck_assert_int_eq(q.arrays[1].front_bytes, 524);
    ck_assert_int_eq(bw_stream_plan(&q, 2, 3 * 4096), 0);
    ck_assert_int_eq(q.chunks, 4);
    ck_assert(bw_stream_plan_ok(&q));
    return q;
}

typedef struct {
    int64_t filled, taken;   /* chunks so far, each must come in order */
    int64_t bad_bytes;
    uint64_t bytes[BW_MAX_ARRAYS], back[BW_MAX_ARRAYS];   /* each image's bytes sent, taken */
} dialogue_log;

static uint8_t pattern(int k, uint64_t pos) { return (uint8_t)(pos * 7 + (uint64_t)k * 31 + 3); }

static void fill_pattern(void *ctx, const bw_request *q, uint8_t *ring, int64_t c)
{
    dialogue_log *l = ctx;
    ck_assert_int_eq(c, l->filled);
    l->filled++;
    for (int k = 0; k < q->n_arrays; k++) {
        bw_chunk_span_t s = bw_chunk_span(q, c, k);
        for (uint64_t p = s.begin; p < s.end; p++)
            bw_slot_part(ring, q, c, k)[p - s.begin] = pattern(k, p);
        l->bytes[k] += s.end - s.begin;
    }
}

/* The fake's "kernel" adds 1 to every byte. */
static void take_pattern(void *ctx, const bw_request *q, const uint8_t *ring, int64_t c)
{
    dialogue_log *l = ctx;
    ck_assert_int_eq(c, l->taken);
    l->taken++;
    for (int k = 0; k < q->n_arrays; k++) {
        bw_chunk_span_t s = bw_chunk_span(q, c, k);
        for (uint64_t p = s.begin; p < s.end; p++)
            if (bw_slot_part((uint8_t *)ring, q, c, k)[p - s.begin] != (uint8_t)(pattern(k, p) + 1))
                l->bad_bytes++;
        l->back[k] += s.end - s.begin;
    }
}

static bw_call_status dialogue(bw_worker *w, bw_shm *shm, float mode, double timeout,
                               dialogue_log *l, bw_reply *rep, char **why)
{
    bw_request q = dialogue_req(mode);
    uint8_t *ring = bw_shm_reserve(shm, (size_t)q.shm_bytes);
    ck_assert_ptr_nonnull(ring);
    memset(l, 0, sizeof *l);
    bw_chunk_ops ops = {fill_pattern, take_pattern, l, NULL};
    return bw_run_dialogue(w, &q, ring, &ops, rep, timeout, why);
}

/* Every byte of every chunk goes out and comes back, in order, twice on
 * the same worker. Catches a window that reuses a slot before the worker
 * freed it (the pattern of a later chunk would come back), chunks taken
 * out of order, a lost last chunk. */
START_TEST(run_dialogue_moves_every_chunk_both_ways)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    for (int round = 0; round < 2; round++) {
        dialogue_log l;
        bw_reply rep;
        char *why = NULL;
        ck_assert_int_eq(dialogue(w, shm, 0.0f, 5.0, &l, &rep, &why), BW_CALL_OK);
        ck_assert_ptr_null(why);
        ck_assert_int_eq(rep.status, BW_REP_OK);
        ck_assert_uint_eq(rep.kind, BW_REQ_RUN);
        ck_assert(rep.call_ms == 1.0);
        ck_assert_int_eq(l.filled, 4);
        ck_assert_int_eq(l.taken, 4);
        ck_assert_int_eq(l.bad_bytes, 0);
        /* Every byte of every image, once each way. */
        bw_request q = dialogue_req(0.0f);
        for (int k = 0; k < q.n_arrays; k++) {
            ck_assert_uint_eq(l.bytes[k], q.arrays[k].image_bytes);
            ck_assert_uint_eq(l.back[k], q.arrays[k].image_bytes);
        }
    }
    ck_assert(bw_worker_alive(w));
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

/* A worker that breaks the dialogue is killed and the run is not taken
 * for done: a chunk out of turn, an OK before any chunk came back, a hang
 * in the call (timeout), a CUDA error during the upload (its reply ends
 * the run early, with that status). */
START_TEST(run_dialogue_refuses_a_broken_dialogue)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    const float modes[] = {-1.0f, -2.0f, -3.0f, -4.0f};
    const bw_call_status want[] = {BW_CALL_PROTOCOL, BW_CALL_PROTOCOL, BW_CALL_TIMEOUT, BW_CALL_OK};
    const char *says[] = {"where chunk 0 was due", "0 of 4 chunks", "no answer after", NULL};
    for (int m = 0; m < 4; m++) {
        bw_worker *w = start_fake(shm, 4096);
        dialogue_log l;
        bw_reply rep;
        char *why = NULL;
        bw_call_status st = dialogue(w, shm, modes[m], 1.0, &l, &rep, &why);
        ck_assert_msg(st == want[m], "mode %g: status %d", (double)modes[m], (int)st);
        if (says[m] != NULL)
            ck_assert_msg(why != NULL && strstr(why, says[m]) != NULL, "mode %g: %s",
                          (double)modes[m], why ? why : "(no reason)");
        else
            ck_assert_int_eq(rep.status, BW_REP_CUDA_ERROR);
        ck_assert_int_eq(l.taken, 0);
        ck_assert(!bw_worker_alive(w));
        free(why);
        bw_worker_stop(w);
    }
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

START_TEST(segfault_is_a_crash_and_a_new_worker_works)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    char *why = NULL;
    double t0 = now_s();
    ck_assert_int_eq(call_n(w, shm, -1, 5.0, NULL, &why), BW_CALL_CRASHED);
    ck_assert_msg(now_s() - t0 < 2.0, "a crash must be noticed at once, not at the timeout");
    ck_assert_msg(contains(why, "SIGSEGV"), "why: %s", why != NULL ? why : "(null)");
    free(why);
    ck_assert(!bw_worker_alive(w));
    char *out = bw_worker_take_output(w);
    ck_assert_msg(contains(out, "about to crash"), "output: %s", out != NULL ? out : "(null)");
    free(out);
    /* A dead worker answers nothing but says so. */
    ck_assert_int_eq(call_n(w, shm, 0, 1.0, NULL, &why), BW_CALL_CRASHED);
    ck_assert_ptr_nonnull(why);
    free(why);
    bw_worker_stop(w);
    assert_no_children();

    w = start_fake(shm, 4096);
    bw_reply rep;
    ck_assert_int_eq(call_n(w, shm, 0, 2.0, &rep, NULL), BW_CALL_OK);
    ck_assert_int_eq(rep.status, BW_REP_OK);
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

START_TEST(exit_status_is_reported)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    char *why = NULL;
    ck_assert_int_eq(call_n(w, shm, -2, 5.0, NULL, &why), BW_CALL_CRASHED);
    ck_assert_msg(contains(why, "status 3") && contains(why, "exit"), "why: %s",
                  why != NULL ? why : "(null)");
    free(why);
    ck_assert(!bw_worker_alive(w));
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

START_TEST(hang_times_out)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    char *why = NULL;
    double t0 = now_s();
    ck_assert_int_eq(call_n(w, shm, -3, 0.5, NULL, &why), BW_CALL_TIMEOUT);
    double dt = now_s() - t0;
    ck_assert_msg(dt >= 0.45 && dt < 3.0, "timed out after %.3f s", dt);
    ck_assert_msg(contains(why, "no answer after 0.5 s"), "why: %s", why != NULL ? why : "(null)");
    free(why);
    ck_assert(!bw_worker_alive(w));
    assert_no_children(); /* reaped by the call itself, before stop */
    bw_worker_stop(w);
    bw_shm_destroy(shm);
}
END_TEST

START_TEST(output_is_capped_and_taken_once)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    bw_reply rep;
    ck_assert_int_eq(call_n(w, shm, -4, 5.0, &rep, NULL), BW_CALL_OK);
    char *out = bw_worker_take_output(w);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(strncmp(out, "xxxxxxxx", 8) == 0, "output starts: %.20s", out);
    ck_assert_uint_le(strlen(out), 4096 + 64);
    ck_assert_msg(contains(out, "[... 9995904 more bytes cut]"), "tail: %s",
                  out + (strlen(out) > 80 ? strlen(out) - 80 : 0));
    free(out);
    ck_assert_ptr_null(bw_worker_take_output(w));

    /* The next call's output starts afresh: nothing old, no hole of NULs. */
    ck_assert_int_eq(call_n(w, shm, -10, 5.0, &rep, NULL), BW_CALL_OK);
    out = bw_worker_take_output(w);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(strcmp(out, "to stdout\nto stderr\n") == 0, "output: %.200s", out);
    free(out);
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

/* Fake-worker mode n writes something other than its reply to the channel:
 * the call must fail at once as a protocol error whose reason holds word,
 * and the worker must be gone. */
static void assert_protocol_error(int n, const char *word)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    char *why = NULL;
    double t0 = now_s();
    ck_assert_int_eq(call_n(w, shm, n, 5.0, NULL, &why), BW_CALL_PROTOCOL);
    ck_assert_msg(now_s() - t0 < 2.0, "mode %d must be noticed at once", n);
    ck_assert_msg(contains(why, word), "why: %s", why != NULL ? why : "(null)");
    free(why);
    ck_assert(!bw_worker_alive(w));
    assert_no_children();
    bw_worker_stop(w);
    bw_shm_destroy(shm);
}

START_TEST(garbage_is_a_protocol_error)
{
    assert_protocol_error(-5, "garbage");
}
END_TEST

/* Catches a supervisor that trusts any reply with the right magic and kind. */
START_TEST(forged_reply_is_a_protocol_error)
{
    assert_protocol_error(-17, "forged");
}
END_TEST

/* The reply tokens: catches a constant, a 0 (which a zeroed forged reply
 * would match) or a short cycle. */
START_TEST(tokens_are_nonzero_and_distinct)
{
    enum { N = 1000 };
    static uint64_t v[N];
    for (int i = 0; i < N; i++) {
        v[i] = bw_random_u64();
        ck_assert_uint_ne(v[i], 0);
        for (int j = 0; j < i; j++)
            ck_assert_uint_ne(v[i], v[j]);
    }
}
END_TEST

START_TEST(stop_kills_the_whole_group)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    bw_reply rep;
    ck_assert_int_eq(call_n(w, shm, -6, 5.0, &rep, NULL), BW_CALL_OK);
    pid_t child = (pid_t)rep.samples;
    ck_assert_int_gt(child, 0);
    ck_assert_int_eq(kill(child, 0), 0);
    bw_worker_stop(w);
    ck_assert_msg(process_gone(child), "the worker's own child %d survived stop", (int)child);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

START_TEST(dead_worker_with_lingering_child_is_noticed)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    memset(bw_shm_data(shm), 0, IMAGE_BYTES);
    char *why = NULL;
    double t0 = now_s();
    /* The child keeps the channel open: no end of file ever comes. */
    ck_assert_int_eq(call_n(w, shm, -7, 5.0, NULL, &why), BW_CALL_CRASHED);
    ck_assert_msg(now_s() - t0 < 2.0, "took %.2f s", now_s() - t0);
    ck_assert_msg(contains(why, "SIGSEGV"), "why: %s", why != NULL ? why : "(null)");
    free(why);
    pid_t child;
    memcpy(&child, bw_shm_data(shm), sizeof child);
    ck_assert_int_gt(child, 0);
    ck_assert_msg(process_gone(child), "the dead worker's child %d survived", (int)child);
    assert_no_children();
    bw_worker_stop(w);
    bw_shm_destroy(shm);
}
END_TEST

START_TEST(cuda_error_reply_ends_the_worker)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    bw_reply rep;
    char *why = NULL;
    ck_assert_int_eq(call_n(w, shm, -8, 5.0, &rep, &why), BW_CALL_OK);
    free(why);
    ck_assert_int_eq(rep.status, BW_REP_CUDA_ERROR);
    ck_assert_int_eq(rep.cuda_error, 700);
    ck_assert(contains(rep.message, "cudaErrorIllegalAddress"));
    ck_assert(!bw_worker_alive(w));
    assert_no_children();
    ck_assert_int_eq(call_n(w, shm, 0, 1.0, NULL, NULL), BW_CALL_CRASHED);
    bw_worker_stop(w);
    bw_shm_destroy(shm);
}
END_TEST

START_TEST(closed_channel_is_a_crash)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    char *why = NULL;
    double t0 = now_s();
    ck_assert_int_eq(call_n(w, shm, -9, 10.0, NULL, &why), BW_CALL_CRASHED);
    ck_assert_msg(now_s() - t0 < 4.0, "took %.2f s", now_s() - t0);
    ck_assert_msg(contains(why, "closed"), "why: %s", why != NULL ? why : "(null)");
    free(why);
    ck_assert(!bw_worker_alive(w));
    assert_no_children();
    bw_worker_stop(w);
    bw_shm_destroy(shm);
}
END_TEST

START_TEST(writing_to_a_closed_channel_does_not_kill_the_grader)
{
    /* Without MSG_NOSIGNAL this test process dies of SIGPIPE. */
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    bw_reply rep;
    ck_assert_int_eq(call_n(w, shm, -12, 5.0, &rep, NULL), BW_CALL_OK);
    nap_ms(150); /* let it close its end */
    char *why = NULL;
    ck_assert_int_eq(call_n(w, shm, 0, 5.0, &rep, &why), BW_CALL_CRASHED);
    ck_assert_ptr_nonnull(why);
    free(why);
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

START_TEST(partial_and_slow_replies_are_fine)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    bw_reply rep;
    ck_assert_int_eq(call_n(w, shm, -11, 2.0, &rep, NULL), BW_CALL_OK);
    ck_assert_int_eq(rep.status, BW_REP_OK);
    ck_assert_str_eq(rep.message, "ok");
    ck_assert_int_eq(call_n(w, shm, -14, 1.0, &rep, NULL), BW_CALL_OK);
    ck_assert(bw_worker_alive(w));
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

START_TEST(stop_kills_a_worker_that_ignores_quit)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    ck_assert_int_eq(call_n(w, shm, -15, 2.0, NULL, NULL), BW_CALL_OK);
    double t0 = now_s();
    bw_worker_stop(w);
    ck_assert_msg(now_s() - t0 < 5.0, "stop took %.2f s", now_s() - t0);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

/* Removes base and the (empty) directories in it. */
static void remove_left_dirs(const char *base)
{
    DIR *d = opendir(base);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        (void)rmdir(path);
    }
    closedir(d);
    ck_assert_msg(rmdir(base) == 0, "%s: %s", base, strerror(errno));
}

START_TEST(worker_dies_with_the_grader)
{
    /* A grader process dies while its worker hangs in student code: the
     * worker must not live on (it would hold the GPU). */
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    /* The dead grader cannot remove its worker's directory: it goes here,
     * and the test removes it. */
    char base[] = "/tmp/bwlab-diestest-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(base));
    pid_t grader = fork();
    ck_assert_int_ge(grader, 0);
    if (grader == 0) {
        close(fds[0]);
        setenv("TMPDIR", base, 1);
        bw_shm *shm = make_shm(IMAGE_BYTES);
        bw_worker *w = start_fake(shm, 4096);
        bw_reply rep;
        if (call_n(w, shm, -16, 5.0, &rep, NULL) != BW_CALL_OK)
            _exit(1);
        pid_t worker = (pid_t)rep.samples;
        if (write(fds[1], &worker, sizeof worker) != (ssize_t)sizeof worker)
            _exit(1);
        signal(SIGALRM, SIG_DFL); /* Check's own handler would kill the test */
        alarm(1);                 /* dies of SIGALRM in the middle of the next call */
        (void)call_n(w, shm, -3, 30.0, NULL, NULL);
        _exit(2);
    }
    close(fds[1]);
    pid_t worker = 0;
    ck_assert_int_eq(read(fds[0], &worker, sizeof worker), (ssize_t)sizeof worker);
    close(fds[0]);
    ck_assert_int_gt(worker, 0);
    int status = 0;
    ck_assert_int_eq(waitpid(grader, &status, 0), grader);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM);
    int gone = process_gone(worker);
    if (!gone)
        (void)kill(worker, SIGKILL);
    ck_assert_msg(gone, "the worker %d outlived its grader", (int)worker);
    remove_left_dirs(base);
    assert_no_children();
}
END_TEST

START_TEST(start_failures_are_explained)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_reply hello;
    char *why = NULL;

    bw_worker_opts o = fake_opts(4096, 2.0);
    o.worker_path = "/nonexistent/bw_worker_x";
    ck_assert_ptr_null(bw_worker_start(&o, shm, &hello, &why));
    ck_assert_msg(contains(why, "/nonexistent/bw_worker_x"), "why: %s", why != NULL ? why : "(null)");
    free(why);
    assert_no_children();

    o = fake_opts(4096, 2.0);
    fake_hello(shm, "crash");
    ck_assert_ptr_null(bw_worker_start(&o, shm, &hello, &why));
    ck_assert_msg(contains(why, "SIGSEGV"), "why: %s", why != NULL ? why : "(null)");
    free(why);
    assert_no_children();

    o = fake_opts(4096, 0.5);
    fake_hello(shm, "hang");
    ck_assert_ptr_null(bw_worker_start(&o, shm, &hello, &why));
    ck_assert_msg(contains(why, "no answer"), "why: %s", why != NULL ? why : "(null)");
    free(why);
    assert_no_children();

    o = fake_opts(4096, 2.0);
    fake_hello(shm, "nodevice");
    ck_assert_ptr_null(bw_worker_start(&o, shm, &hello, &why));
    ck_assert_int_eq(hello.status, BW_REP_NO_DEVICE);
    ck_assert_msg(contains(why, "fake: no device"), "why: %s", why != NULL ? why : "(null)");
    free(why);
    fake_hello(shm, NULL);
    assert_no_children();

    o = fake_opts(4096, 2.0);
    o.sanitizer = "bogus";
    ck_assert_ptr_null(bw_worker_start(&o, shm, &hello, &why));
    ck_assert_ptr_nonnull(why);
    free(why);

    o.sanitizer = "memcheck";
    o.sanitizer_path = NULL;
    setenv("PATH", "/nonexistent-bin", 1);
    ck_assert_ptr_null(bw_worker_start(&o, shm, &hello, &why));
    ck_assert_msg(contains(why, "compute-sanitizer"), "why: %s", why != NULL ? why : "(null)");
    free(why);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

START_TEST(sanitizer_command_line_and_log)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker_opts o = fake_opts(4096, 5.0);
    o.sanitizer = "racecheck";
    o.sanitizer_path = BW_FAKE_WORKER; /* plays compute-sanitizer with "--tool" first */
    bw_reply hello;
    char *why = NULL;
    bw_worker *w = bw_worker_start(&o, shm, &hello, &why);
    ck_assert_msg(w != NULL, "start failed: %s", why != NULL ? why : "(null)");
    ck_assert_str_eq(hello.message, "ok"); /* no descriptor leaked through it either */
    char *log = bw_worker_take_sanitizer_log(w);
    ck_assert_msg(contains(log, "FAKE-SANITIZER tool=racecheck print-limit=32 error-exitcode=0"),
                  "log: %s", log != NULL ? log : "(null)");
    free(log);
    ck_assert_ptr_null(bw_worker_take_sanitizer_log(w));
    ck_assert_int_eq(call_n(w, shm, 0, 2.0, NULL, NULL), BW_CALL_OK);
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

/* ------------------------------------------------------------ environment */

/* What the test plants in its own environment; the worker inherits from it. */
static const char *const planted_names[] = {
    "TMPDIR", "HOME", "CI_DEPLOY_TOKEN", "AWS_SECRET_ACCESS_KEY", "BWLAB_SEED",
    "BWLAB_SECRET_SEED", BW_ENV_CHANNEL_FD, "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
    "CUDA_INJECTION64_PATH", "NV_BWLAB_PLANTED", "NVTX_INJECTION64_PATH",
    "NSIGHT_BWLAB_PLANTED", "COMPUTE_SANITIZER_BWLAB_PLANTED", "LANG", "LC_ALL",
    "CUDA_BWLAB_LONG", "NVIDIA_API_KEY", "NVIDIA-PROCESS-TRACKING-BWLAB",
};
#define N_PLANTED (sizeof planted_names / sizeof planted_names[0])

static void save_env(char **saved)
{
    for (size_t i = 0; i < N_PLANTED; i++) {
        const char *v = getenv(planted_names[i]);
        saved[i] = v != NULL ? strdup(v) : NULL;
        ck_assert(v == NULL || saved[i] != NULL);
    }
}

static void restore_env(char **saved)
{
    for (size_t i = 0; i < N_PLANTED; i++) {
        if (saved[i] != NULL)
            setenv(planted_names[i], saved[i], 1);
        else
            unsetenv(planted_names[i]);
        free(saved[i]);
    }
}

/* The value NAME has in an environment printed one NAME=value a line (fake
 * mode -18), malloc'd, or NULL; *count: how many lines set NAME. */
static char *env_value(const char *dump, const char *name, int *count)
{
    char *found = NULL;
    size_t len = strlen(name);
    *count = 0;
    for (const char *line = dump; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t ll = end != NULL ? (size_t)(end - line) : strlen(line);
        if (ll > len && strncmp(line, name, len) == 0 && line[len] == '=') {
            (*count)++;
            free(found);
            found = strndup(line + len + 1, ll - len - 1);
            ck_assert_ptr_nonnull(found);
        }
        line = end != NULL ? end + 1 : NULL;
    }
    return found;
}

/* NAME must reach the worker once, with its value. Catches an allow-list
 * that leaves out what the CUDA runtime, ncu or compute-sanitizer need. */
static void assert_passed(const char *dump, const char *name, const char *value)
{
    int n = 0;
    char *v = env_value(dump, name, &n);
    ck_assert_msg(n == 1, "%s reached the worker %d times, expected once", name, n);
    ck_assert_msg(strcmp(v, value) == 0, "%s reached the worker as '%.80s', expected '%.80s'", name,
                  v, value);
    free(v);
}

/* Starts a fake worker, has it print its environment (mode -18), and
 * returns that (malloc'd). */
static char *worker_environment(bw_shm *shm, bw_worker **w_out)
{
    bw_worker *w = start_fake(shm, (size_t)1 << 20);
    bw_reply rep;
    ck_assert_int_eq(call_n(w, shm, -18, 5.0, &rep, NULL), BW_CALL_OK);
    ck_assert_int_eq(rep.status, BW_REP_OK);
    char *out = bw_worker_take_output(w);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(!contains(out, "more bytes cut]"), "the environment did not fit the output cap");
    *w_out = w;
    return out;
}

/* HOME and TMPDIR are set once each, to one private directory (0700, ours)
 * whose name starts with prefix and in which the worker wrote; returns its
 * path (malloc'd). */
static char *assert_private_dir(const char *dump, const char *prefix)
{
    int nh = 0, nt = 0;
    char *home = env_value(dump, "HOME", &nh);
    char *tmp = env_value(dump, "TMPDIR", &nt);
    ck_assert_msg(nh == 1 && nt == 1, "HOME set %d times, TMPDIR %d times", nh, nt);
    ck_assert_msg(strcmp(home, tmp) == 0, "HOME %s, TMPDIR %s", home, tmp);
    ck_assert_msg(strncmp(home, prefix, strlen(prefix)) == 0, "HOME %s is not in %s", home, prefix);
    struct stat st;
    ck_assert_int_eq(lstat(home, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    ck_assert_msg((st.st_mode & 07777) == 0700, "mode %o", (unsigned)(st.st_mode & 07777));
    ck_assert_uint_eq(st.st_uid, getuid());
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/.cache/probe", home);
    ck_assert_msg(access(probe, F_OK) == 0, "the worker could not write %s", probe);
    free(tmp);
    return home;
}

static void assert_removed(const char *dir)
{
    struct stat st;
    errno = 0;
    ck_assert_msg(lstat(dir, &st) != 0 && errno == ENOENT, "%s is still there after stop", dir);
}

/* The issue-13 leak: a submission that prints environ must not find the
 * grading machine's secrets. The old deny-list passed CI_DEPLOY_TOKEN and
 * the real HOME through; a list too strict would drop what CUDA, ncu
 * (CUDA_INJECTION64_PATH, NV_*, NVTX_*) or compute-sanitizer need. */
START_TEST(worker_environment_is_an_allow_list)
{
    char *saved[N_PLANTED];
    save_env(saved);
    char base[] = "/tmp/bwlab-envtest-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(base));
    size_t long_len = (size_t)64 << 10;
    char *long_value = malloc(long_len + 1);
    ck_assert_ptr_nonnull(long_value);
    memset(long_value, 'v', long_len);
    long_value[long_len] = '\0';

    setenv("TMPDIR", base, 1);
    setenv("HOME", "/home/bwlab-grading-user", 1);
    setenv("CI_DEPLOY_TOKEN", "secret-123", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret-456", 1);
    setenv("NVIDIA_API_KEY", "secret-789", 1); /* a credential under a kept prefix */
    setenv("BWLAB_SEED", "0x5eed5eed", 1);
    setenv("BWLAB_SECRET_SEED", "0x5ec7e75eed", 1);
    setenv(BW_ENV_CHANNEL_FD, "9", 1); /* a stale one: ours must win */
    setenv("LD_LIBRARY_PATH", "/opt/bwlab-test/cuda/lib64", 1);
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    setenv("CUDA_INJECTION64_PATH", "/opt/bwlab-test/libinjection.so", 1);
    setenv("NV_BWLAB_PLANTED", "nv-planted", 1);
    setenv("NVTX_INJECTION64_PATH", "/opt/bwlab-test/libnvtx.so", 1);
    setenv("NSIGHT_BWLAB_PLANTED", "nsight-planted", 1);
    setenv("COMPUTE_SANITIZER_BWLAB_PLANTED", "sanitizer-planted", 1);
    setenv("NVIDIA-PROCESS-TRACKING-BWLAB", "tracking-planted", 1);
    setenv("LANG", "C", 1);
    setenv("LC_ALL", "C", 1);
    setenv("CUDA_BWLAB_LONG", long_value, 1); /* no fixed-size buffer on the way */

    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = NULL;
    char *out = worker_environment(shm, &w);

    ck_assert_msg(!contains(out, "secret-123") && !contains(out, "CI_DEPLOY_TOKEN"),
                  "the CI token reached the worker");
    ck_assert_msg(!contains(out, "secret-456"), "the cloud key reached the worker");
    ck_assert_msg(!contains(out, "secret-789"), "NVIDIA_API_KEY reached the worker");
    ck_assert_msg(!contains(out, "5eed5eed") && !contains(out, "5ec7e75eed") &&
                      !contains(out, "BWLAB_SEED=") && !contains(out, "BWLAB_SECRET_SEED="),
                  "a case seed reached the worker");
    ck_assert_msg(!contains(out, "bwlab-grading-user"), "the grading user's HOME reached the worker");

    const char *path = getenv("PATH");
    if (path != NULL)
        assert_passed(out, "PATH", path);
    assert_passed(out, "LD_LIBRARY_PATH", "/opt/bwlab-test/cuda/lib64");
    assert_passed(out, "CUDA_VISIBLE_DEVICES", "0");
    assert_passed(out, "CUDA_INJECTION64_PATH", "/opt/bwlab-test/libinjection.so");
    assert_passed(out, "NV_BWLAB_PLANTED", "nv-planted");
    assert_passed(out, "NVTX_INJECTION64_PATH", "/opt/bwlab-test/libnvtx.so");
    assert_passed(out, "NSIGHT_BWLAB_PLANTED", "nsight-planted");
    assert_passed(out, "COMPUTE_SANITIZER_BWLAB_PLANTED", "sanitizer-planted");
    assert_passed(out, "NVIDIA-PROCESS-TRACKING-BWLAB", "tracking-planted");
    assert_passed(out, "LANG", "C");
    assert_passed(out, "LC_ALL", "C");
    assert_passed(out, "CUDA_BWLAB_LONG", long_value);
    assert_passed(out, BW_ENV_CHANNEL_FD, "3");
    assert_passed(out, BW_ENV_SHM_FD, "5");

    char prefix[sizeof base + 16];
    snprintf(prefix, sizeof prefix, "%s/bwlab-", base);
    char *home = assert_private_dir(out, prefix);
    bw_worker_stop(w);
    assert_removed(home);
    /* Nothing else of the worker's was left in $TMPDIR either. */
    ck_assert_msg(rmdir(base) == 0, "%s is not empty after stop: %s", base, strerror(errno));

    free(home);
    free(out);
    free(long_value);
    bw_shm_destroy(shm);
    restore_env(saved);
    assert_no_children();
}
END_TEST

/* With no usable $TMPDIR the private directory is made in /tmp, and still
 * removed with the worker. */
START_TEST(worker_directory_falls_back_to_tmp)
{
    char *saved[N_PLANTED];
    save_env(saved);
    setenv("TMPDIR", "/nonexistent/bwlab-tmp", 1);
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = NULL;
    char *out = worker_environment(shm, &w);
    char *home = assert_private_dir(out, "/tmp/bwlab-");
    bw_worker_stop(w);
    assert_removed(home);
    free(home);
    free(out);
    bw_shm_destroy(shm);
    restore_env(saved);
    assert_no_children();
}
END_TEST

/* ------------------------------------------------------------ containment */

/* The worker user's ids, as containment.c picks them by default. */
static void worker_user(uid_t *uid, gid_t *gid, const char **name)
{
    struct passwd *pw = getpwnam("nobody");
    *uid = pw != NULL ? pw->pw_uid : 65534;
    *gid = pw != NULL ? pw->pw_gid : 65534;
    *name = pw != NULL ? "nobody" : "65534:65534";
}

static int need_root(const char *what)
{
    if (geteuid() == 0)
        return 1;
    printf("skipped: %s needs root (only a grader running as root switches its workers "
           "to the worker user; CI runs as root)\n", what);
    return 0;
}

/* A copy of the fake worker that the worker user can run: the build tree
 * may lie under a folder only its owner can enter (a 0700 home). dir gets
 * the copy's folder, path the copy; both removed by remove_fake_copy. */
static void fake_copy(char dir[32], char path[64])
{
    snprintf(dir, 32, "/tmp/bwlab-fakebin-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chmod(dir, 0755), 0);
    snprintf(path, 64, "%s/fake_worker", dir);
    int in = open(BW_FAKE_WORKER, O_RDONLY);
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    ck_assert(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        ck_assert_int_eq(write(out, buf, (size_t)n), n);
    close(in);
    ck_assert_int_eq(fchmod(out, 0755), 0);
    close(out);
}

static void remove_fake_copy(const char *dir, const char *path)
{
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}

static bw_worker *start_contained(bw_shm *shm, const char *path)
{
    bw_worker_opts o = fake_opts(4096, 5.0);
    o.worker_path = path;
    bw_reply hello;
    char *why = NULL;
    bw_worker *w = bw_worker_start(&o, shm, &hello, &why);
    ck_assert_msg(w != NULL, "start failed: %s", why != NULL ? why : "(no reason)");
    ck_assert_str_eq(hello.message, "ok"); /* descriptors, group and limits as promised */
    return w;
}

static void contain_on(int namespace_allowed)
{
    if (namespace_allowed)
        unsetenv("BWLAB_CONTAIN_NO_PIDNS");
    else
        setenv("BWLAB_CONTAIN_NO_PIDNS", "1", 1);
    char *why = NULL;
    ck_assert_msg(bw_contain_set(1, &why) == 0, "bw_contain_set: %s", why != NULL ? why : "?");
}

/* As root, the worker runs as nobody (no supplementary groups), with a
 * HOME it can write, in a PID namespace under the namespace's init; the
 * report says so. Catches a missing or partial drop, a HOME left to root. */
START_TEST(contained_worker_runs_as_the_worker_user)
{
    if (!need_root("contained_worker_runs_as_the_worker_user"))
        return;
    uid_t uid;
    gid_t gid;
    const char *name;
    worker_user(&uid, &gid, &name);
    contain_on(1);
    char dir[32], path[64];
    fake_copy(dir, path);
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_contained(shm, path);
    bw_reply rep;
    ck_assert_int_eq(call_n(w, shm, -19, 5.0, &rep, NULL), BW_CALL_OK);
    long u, eu, g, eg, pid, ppid;
    int groups, hw, nnp;
    ck_assert_int_eq(sscanf(rep.message, "uid=%ld euid=%ld gid=%ld egid=%ld groups=%d pid=%ld ppid=%ld "
                            "home_writable=%d no_new_privs=%d", &u, &eu, &g, &eg, &groups, &pid, &ppid,
                            &hw, &nnp), 9);
    /* Catches a contained worker that could gain rights by exec'ing a setuid program. */
    ck_assert_msg(nnp == 1, "the contained worker may gain privileges: %s", rep.message);
    ck_assert_msg(u == (long)uid && eu == (long)uid && g == (long)gid && eg == (long)gid && groups == 0,
                  "the worker runs as %s", rep.message);
    ck_assert_msg(hw == 1, "the worker cannot write its HOME: %s", rep.message);
    bw_containment c = bw_contain_report();
    ck_assert_str_eq(c.user, name);
    ck_assert_str_eq(c.sandbox, "none");
    ck_assert_msg(c.pid_namespace, "no PID namespace as root");
    ck_assert_msg(pid == 2 && ppid == 1, "not the init's child in a new namespace: %s", rep.message);
    ck_assert(!c.subreaper);
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    remove_fake_copy(dir, path);
    assert_no_children();
}
END_TEST

/* A worker forks, the child calls setsid (out of the process group that
 * bw_worker_stop kills) and forks again: nothing of it may live on. */
/* The pid, in this process's /proc, of the process whose name is comm; 0 if none. */
static pid_t pid_named(const char *comm)
{
    DIR *d = opendir("/proc");
    pid_t found = 0;
    struct dirent *e;
    while (d != NULL && found == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], name[64] = {0};
        snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(name, sizeof name, f) != NULL) {
            name[strcspn(name, "\n")] = '\0';
            if (strcmp(name, comm) == 0)
                found = (pid_t)atol(e->d_name);
        }
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return found;
}

static void assert_escape_dies(int namespace_allowed)
{
    contain_on(namespace_allowed);
    char dir[32], path[64];
    fake_copy(dir, path);
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_contained(shm, path);
    ck_assert_int_eq(call_n(w, shm, -20, 5.0, NULL, NULL), BW_CALL_OK);
    int32_t started = 0;
    memcpy(&started, bw_shm_data(shm), sizeof started);
    ck_assert_msg(started == 1, "the fake worker's grandchild did not start");
    pid_t survivor = pid_named("bw_escapee");
    ck_assert_msg(survivor > 0, "no process named bw_escapee in this test's /proc");
    ck_assert_msg(kill(survivor, 0) == 0, "the grandchild %d is not running", (int)survivor);
    bw_worker_stop(w);
    int gone = process_gone(survivor);
    if (!gone)
        (void)kill(survivor, SIGKILL);
    ck_assert_msg(gone, "process %d of the worker outlived it", (int)survivor);
    bw_containment c = bw_contain_report();
    printf("escape test: pid_namespace %d, subreaper %d\n", c.pid_namespace, c.subreaper);
    if (namespace_allowed && geteuid() == 0)
        ck_assert_msg(c.pid_namespace && !c.subreaper, "root got no PID namespace");
    if (!namespace_allowed)
        ck_assert_msg(!c.pid_namespace && c.subreaper, "the fallback was not the subreaper");
    bw_shm_destroy(shm);
    remove_fake_copy(dir, path);
    assert_no_children();
}

START_TEST(escaped_processes_die_with_the_namespace)
{
    assert_escape_dies(1);
}
END_TEST

START_TEST(escaped_processes_are_swept_without_a_namespace)
{
    assert_escape_dies(0);
}
END_TEST

/* A kit file owned by root, mode 0644, in a folder only root may write:
 * the contained worker's write is refused and the file is unchanged. */
START_TEST(contained_worker_cannot_write_the_kit)
{
    if (!need_root("contained_worker_cannot_write_the_kit"))
        return;
    contain_on(1);
    char kit[] = "/tmp/bwlab-kit-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(kit));
    ck_assert_int_eq(chmod(kit, 0755), 0);
    char policy[64];
    snprintf(policy, sizeof policy, "%s/policy.ini", kit);
    FILE *f = fopen(policy, "w");
    ck_assert_ptr_nonnull(f);
    fputs("[policy]\n", f);
    fclose(f);
    ck_assert_int_eq(chmod(policy, 0644), 0);
    char dir[32], path[64];
    fake_copy(dir, path);
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_contained(shm, path);
    snprintf((char *)bw_shm_data(shm), 64, "%s", policy);
    bw_reply rep;
    ck_assert_int_eq(call_n(w, shm, -21, 5.0, &rep, NULL), BW_CALL_OK);
    ck_assert_msg(strncmp(rep.message, "refused: ", 9) == 0, "the worker wrote into the kit: %s",
                  rep.message);
    struct stat st;
    ck_assert_int_eq(stat(policy, &st), 0);
    ck_assert_int_eq((int)st.st_size, 9);
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    remove_fake_copy(dir, path);
    ck_assert_int_eq(unlink(policy), 0);
    ck_assert_int_eq(rmdir(kit), 0);
    assert_no_children();
}
END_TEST

/* kill(grader, SIGKILL) and kill(getppid(), SIGKILL) from the worker: as
 * the worker user without a namespace (EPERM: the grader is root), and in a
 * namespace, where the grader's pid names nothing (ESRCH) and the parent is
 * the init, root's (EPERM). Had either landed, this test process would be
 * dead. */
START_TEST(contained_worker_cannot_kill_the_grader)
{
    if (!need_root("contained_worker_cannot_kill_the_grader"))
        return;
    for (int ns = 0; ns < 2; ns++) {
        contain_on(ns);
        char dir[32], path[64];
        fake_copy(dir, path);
        bw_shm *shm = make_shm(IMAGE_BYTES);
        bw_worker *w = start_contained(shm, path);
        int32_t me = (int32_t)getpid();
        memcpy(bw_shm_data(shm), &me, sizeof me);
        bw_reply rep;
        ck_assert_int_eq(call_n(w, shm, -22, 5.0, &rep, NULL), BW_CALL_OK);
        char want[96];
        snprintf(want, sizeof want, "%d:%d parent:%d", (int)me, ns ? ESRCH : EPERM, EPERM);
        ck_assert_str_eq(rep.message, want);
        ck_assert(bw_worker_alive(w));
        bw_worker_stop(w);
        bw_shm_destroy(shm);
        remove_fake_copy(dir, path);
    }
    assert_no_children();
}
END_TEST

/* Through the namespace's init, a crash still reads as the worker's own
 * (its wait status is passed on), and compute-sanitizer (played by the
 * fake) can write its log as the worker user. */
START_TEST(contained_crash_and_sanitizer_log)
{
    contain_on(1);
    char dir[32], path[64];
    fake_copy(dir, path);
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker_opts o = fake_opts(4096, 5.0);
    o.worker_path = path;
    o.sanitizer = "memcheck";
    o.sanitizer_path = path;
    bw_reply hello;
    char *why = NULL;
    bw_worker *w = bw_worker_start(&o, shm, &hello, &why);
    ck_assert_msg(w != NULL, "start failed: %s", why != NULL ? why : "(null)");
    char *log = bw_worker_take_sanitizer_log(w);
    ck_assert_msg(contains(log, "FAKE-SANITIZER tool=memcheck"), "log: %s", log != NULL ? log : "(null)");
    free(log);
    ck_assert_int_eq(call_n(w, shm, -1, 5.0, NULL, &why), BW_CALL_CRASHED);
    ck_assert_msg(contains(why, "SIGSEGV"), "why: %s", why != NULL ? why : "(null)");
    free(why);
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    remove_fake_copy(dir, path);
    assert_no_children();
}
END_TEST

static Suite *supervisor_suite(void)
{
    Suite *s = suite_create("supervisor");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, shm_grows_and_keeps_contents);
    tcase_add_test(tc, run_round_trips_shared_memory);
    tcase_add_test(tc, run_dialogue_moves_every_chunk_both_ways);
    tcase_add_test(tc, run_dialogue_refuses_a_broken_dialogue);
    tcase_add_test(tc, segfault_is_a_crash_and_a_new_worker_works);
    tcase_add_test(tc, exit_status_is_reported);
    tcase_add_test(tc, hang_times_out);
    tcase_add_test(tc, output_is_capped_and_taken_once);
    tcase_add_test(tc, garbage_is_a_protocol_error);
    tcase_add_test(tc, forged_reply_is_a_protocol_error);
    tcase_add_test(tc, tokens_are_nonzero_and_distinct);
    tcase_add_test(tc, stop_kills_the_whole_group);
    tcase_add_test(tc, dead_worker_with_lingering_child_is_noticed);
    tcase_add_test(tc, cuda_error_reply_ends_the_worker);
    tcase_add_test(tc, closed_channel_is_a_crash);
    tcase_add_test(tc, writing_to_a_closed_channel_does_not_kill_the_grader);
    tcase_add_test(tc, partial_and_slow_replies_are_fine);
    tcase_add_test(tc, stop_kills_a_worker_that_ignores_quit);
    tcase_add_test(tc, worker_dies_with_the_grader);
    tcase_add_test(tc, start_failures_are_explained);
    tcase_add_test(tc, sanitizer_command_line_and_log);
    tcase_add_test(tc, worker_environment_is_an_allow_list);
    tcase_add_test(tc, worker_directory_falls_back_to_tmp);
    tcase_add_test(tc, contained_worker_runs_as_the_worker_user);
    tcase_add_test(tc, escaped_processes_die_with_the_namespace);
    tcase_add_test(tc, escaped_processes_are_swept_without_a_namespace);
    tcase_add_test(tc, contained_worker_cannot_write_the_kit);
    tcase_add_test(tc, contained_worker_cannot_kill_the_grader);
    tcase_add_test(tc, contained_crash_and_sanitizer_log);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return bw_run_suite(supervisor_suite());
}
