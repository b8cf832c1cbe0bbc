/* The device lock (device_lock.c): a second process waits while the first
 * holds it for a large case, small cases and a missing path never wait,
 * and a holder that dies frees it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check_support.h"
#include "device_lock.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char lock_path[64];

static void make_path(void)
{
    snprintf(lock_path, sizeof lock_path, "/tmp/bwlab-lock-test-%ld", (long)getpid());
    unlink(lock_path);
}

/* A child that takes the lock, says so on the pipe, holds it hold_ms (or
 * dies holding it when hold_ms < 0). */
static pid_t holder(long hold_ms)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        bw_device_lock l;
        bw_device_lock_init(&l, lock_path);
        if (bw_device_lock_take(&l, BW_DEVICE_LOCK_BYTES, 0) != 0)
            _exit(2);
        if (write(p[1], "x", 1) != 1)
            _exit(3);
        if (hold_ms < 0)
            raise(SIGKILL);
        struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        bw_device_lock_release(&l);
        _exit(0);
    }
    close(p[1]);
    char c;
    ck_assert_int_eq(read(p[0], &c, 1), 1);
    close(p[0]);
    return pid;
}

/* Catches a lock that does not exclude, or one taken for every case. */
START_TEST(a_large_case_waits_for_the_holder_and_a_small_one_does_not)
{
    make_path();
    pid_t pid = holder(400);
    bw_device_lock l;
    bw_device_lock_init(&l, lock_path);
    double t0 = now_s();
    ck_assert_int_eq(bw_device_lock_take(&l, BW_DEVICE_LOCK_BYTES - 1, 0), 0);
    ck_assert_int_eq(l.fd, -1);
    ck_assert(now_s() - t0 < 0.2);
    ck_assert_int_eq(bw_device_lock_take(&l, (uint64_t)13 << 30, 0), 0);
    double waited = now_s() - t0;
    ck_assert_msg(waited > 0.25, "took the lock after %.3f s while it was held", waited);
    ck_assert_int_ge(l.fd, 0);
    bw_device_lock_release(&l);
    ck_assert_int_eq(l.fd, -1);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unlink(lock_path);
}
END_TEST

/* Catches a lock that outlives its holder. */
START_TEST(a_holder_that_dies_frees_the_lock)
{
    make_path();
    pid_t pid = holder(-1);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    bw_device_lock l;
    bw_device_lock_init(&l, lock_path);
    double t0 = now_s();
    ck_assert_int_eq(bw_device_lock_take(&l, BW_DEVICE_LOCK_BYTES, 0), 0);
    ck_assert(now_s() - t0 < 0.2);
    bw_device_lock_release(&l);
    unlink(lock_path);
}
END_TEST

START_TEST(no_path_no_lock_and_a_bad_path_says_so)
{
    bw_device_lock l;
    bw_device_lock_init(&l, NULL);
    ck_assert_int_eq(bw_device_lock_take(&l, (uint64_t)13 << 30, 0), 0);
    ck_assert_int_eq(l.fd, -1);
    bw_device_lock_init(&l, "/nonexistent-dir/bwlab.lock");
    ck_assert_int_eq(bw_device_lock_take(&l, (uint64_t)13 << 30, 0), -1);
    ck_assert_int_eq(l.fd, -1);
    bw_device_lock_release(&l);
}
END_TEST

/* The rule: large and over a quarter of the device (or the device's size
 * unknown). Catches the lock taken for cases that fit four times over. */
START_TEST(only_a_case_over_a_quarter_of_the_device_needs_it)
{
    const uint64_t gib = (uint64_t)1 << 30;
    ck_assert(!bw_device_lock_needed(gib - 1, 0));
    ck_assert(bw_device_lock_needed(gib, 0));
    ck_assert(!bw_device_lock_needed(13 * gib, 80 * gib));   /* the H100: 13 GB fits 6 times */
    ck_assert(bw_device_lock_needed(13 * gib, 24 * gib));
    ck_assert(bw_device_lock_needed(7 * gib, 24 * gib));
    ck_assert(!bw_device_lock_needed(6 * gib, 24 * gib));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("device_lock");
    TCase *t = tcase_create("core");
    tcase_add_test(t, a_large_case_waits_for_the_holder_and_a_small_one_does_not);
    tcase_add_test(t, a_holder_that_dies_frees_the_lock);
    tcase_add_test(t, no_path_no_lock_and_a_bad_path_says_so);
    tcase_add_test(t, only_a_case_over_a_quarter_of_the_device_needs_it);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return bw_run_suite(suite()); }
