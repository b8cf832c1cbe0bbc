/* The environment a worker starts with: an allow-list of the grader's own
 * (what the C library, the CUDA runtime and NVIDIA's tools need), its
 * private HOME and TMPDIR, and the channel variables. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "text_buf.h"
#include "format_alloc.h"
#include "worker_process.h"

extern char **environ;

/* The worker's environment is an allow-list, not environ minus a few names:
 * a grading machine's environment can hold secrets (a CI deploy token, cloud
 * keys), and student code that prints environ would carry them into its
 * captured output and so into the grade record. What passes is what the C
 * library, the CUDA runtime and driver, and NVIDIA's tools need. The tools
 * matter: compute-sanitizer (run.py test --sanitize) and ncu
 * (--target-processes all: run.py profile and crosscheck) reach the worker
 * only through variables that bwgrade inherits from them; stripped, the
 * worker runs unchecked or unprofiled (ncu 2025.3 without NV_*: it crashed).
 * The names below are those seen under ncu and compute-sanitizer 2025.3. */
static const char *const env_keep_names[] = {
    "PATH",            /* compute-sanitizer and the tools' helpers are found on it */
    "LD_LIBRARY_PATH", /* libcuda, and the injection libraries: ncu and
                        * compute-sanitizer put their own folder first in it */
    "LD_PRELOAD",      /* ncu follows child processes by preloading its
                        * libTreeLauncher* libraries; it names no secret */
    "LANG", "LANGUAGE", "TZ", /* locale and time zone of the student's printf */
};

static const char *const env_keep_prefixes[] = {
    "LC_",               /* the locale's categories (LC_ALL, LC_NUMERIC...) */
    "CUDA_",             /* the runtime and driver: CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER,
                          * CUDA_CACHE_PATH, CUDA_MODULE_LOADING...; CUDA_INJECTION64_PATH
                          * loads a profiler's or checker's collector into the process */
    "NV_",               /* the tools' connection to their target: NV_TPS_LAUNCH_TOKEN,
                          * NV_NSIGHT_INJECTION_*, NV_SANITIZER_INJECTION_*,
                          * NV_COMPUTE_PROFILER_* */
    "NVIDIA_",           /* NVIDIA_PROCESS_INJECTION_* (the tools), NVIDIA_VISIBLE_DEVICES */
    "NVIDIA-",           /* NVIDIA-PROCESS-TRACKING-*: how the tools follow child processes */
    "NSIGHT_",           /* Nsight tools' settings */
    "NVTX_",             /* NVTX_INJECTION64_PATH: the tools' hook for NVTX ranges */
    "COMPUTE_SANITIZER", /* compute-sanitizer's own settings */
};

/* Under those prefixes a name can still be a credential (NVIDIA_API_KEY is a
 * common one); none of the tools' variables has these words in its name. */
static const char *const env_secret_words[] = {
    "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "ACCESS_KEY", "PRIVATE_KEY",
};

static int env_kept(const char *entry)
{
    const char *eq = strchr(entry, '=');
    if (eq == NULL)
        return 0;
    size_t len = (size_t)(eq - entry);
    for (size_t i = 0; i < sizeof env_keep_names / sizeof env_keep_names[0]; i++)
        if (strlen(env_keep_names[i]) == len && memcmp(entry, env_keep_names[i], len) == 0)
            return 1;
    for (size_t i = 0; i < sizeof env_secret_words / sizeof env_secret_words[0]; i++)
        if (bw_text_contains(entry, len, env_secret_words[i]))
            return 0;
    for (size_t i = 0; i < sizeof env_keep_prefixes / sizeof env_keep_prefixes[0]; i++) {
        size_t pl = strlen(env_keep_prefixes[i]);
        if (len >= pl && memcmp(entry, env_keep_prefixes[i], pl) == 0)
            return 1;
    }
    return 0;
}

/* The allow-listed part of environ, then HOME and TMPDIR (both the private
 * directory, as the malloc'd *home_var and *tmp_var: the caller frees them,
 * also when NULL is returned), then the channel variables. The other strings
 * are environ's. BWLAB_SEED and BWLAB_SECRET_SEED are not on the list. */
char **build_env(const char *home, char **home_var, char **tmp_var)
{
    static char chan_var[] = BW_ENV_CHANNEL_FD "=3";
    static char shm_var[] = BW_ENV_SHM_FD "=" CHILD_FD_TEXT(CHILD_SHM_FD);
    *home_var = bw_format_alloc("HOME=%s", home);
    *tmp_var = bw_format_alloc("TMPDIR=%s", home);
    if (*home_var == NULL || *tmp_var == NULL)
        return NULL;
    size_t n = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++)
        n++;
    char **env = calloc(n + 5, sizeof *env);
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++)
        if (env_kept(*e))
            env[k++] = *e;
    env[k++] = *home_var;
    env[k++] = *tmp_var;
    env[k++] = chan_var;
    env[k++] = shm_var;
    env[k] = NULL;
    return env;
}
