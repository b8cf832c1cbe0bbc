/* The supervisor and the shared memory, driven against tests/unit/fake_worker.c
 * (no CUDA needed): a worker started, called, crashing, hanging, printing,
 * lying on its channel and stopped. Every test ends by checking that no
 * child process of the test was left unreaped. (The RUN dialogue, the
 * worker's environment and containment have their own test files.) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm.h"
#include "random_u64.h"
#include "supervisor.h"
#include "shm_view.h"
#include "check_support.h"
#include "supervisor_fixtures.h"

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

static Suite *supervisor_suite(void)
{
    Suite *s = suite_create("supervisor");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, shm_grows_and_keeps_contents);
    tcase_add_test(tc, run_round_trips_shared_memory);
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
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return bw_run_suite(supervisor_suite());
}
