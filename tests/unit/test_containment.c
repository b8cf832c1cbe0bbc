/* Containment (grader/supervisor/containment.c) with the fake worker: as
 * root the worker runs as the worker user in its own PID namespace (or,
 * without one, under bwgrade as a subreaper); nothing it forks outlives it,
 * it cannot write the kit or kill the grader, and a crash and a sanitizer
 * log still come through. Tests that need root say so and pass without it.
 * Every test ends by checking that no child process was left. */
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
#include <unistd.h>

#include "containment.h"
#include "check_support.h"
#include "supervisor_fixtures.h"

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

static Suite *containment_suite(void)
{
    Suite *s = suite_create("containment");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
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
    return bw_run_suite(containment_suite());
}
