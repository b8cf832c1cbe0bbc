/* The environment a worker gets (grader/supervisor/worker_env.c), seen by
 * the fake worker that prints it: an allow-list that keeps the grading
 * machine's secrets and the seeds out and lets through what CUDA and
 * NVIDIA's tools need, and a private HOME and TMPDIR removed with the
 * worker. Every test ends by checking that no child process was left. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_support.h"
#include "supervisor_fixtures.h"

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

static Suite *worker_environment_suite(void)
{
    Suite *s = suite_create("worker_environment");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, worker_environment_is_an_allow_list);
    tcase_add_test(tc, worker_directory_falls_back_to_tmp);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return bw_run_suite(worker_environment_suite());
}
