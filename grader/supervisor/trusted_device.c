/* See trusted_device.h. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "beside_self.h"
#include "gpu_node.h"
#include "runner.h"
#include "sandbox.h"
#include "trusted_device.h"

bw_trust bw_trusted_device(const bw_exercise *ex, const char *baseline_path, const char *sanitizer,
                           bw_reply *dev, char **why)
{
    *why = NULL;
    char *beside = baseline_path ? NULL : bw_path_beside_self("bw_worker_baseline");
    const char *path = baseline_path ? baseline_path : beside;
    if (!path) {
        *why = bw_format_alloc("bw_worker_baseline was not found beside bwgrade");
        return BW_TRUST_UNKNOWN;
    }
    int no_device = 0;
    bw_runner *run = bw_runner_open(ex, path, sanitizer, why, &no_device);
    bw_trust t = no_device ? BW_TRUST_NO_DEVICE : BW_TRUST_UNKNOWN;
    if (run) {
        *dev = *bw_runner_device(run);
        bw_runner_close(run);
        t = BW_TRUST_OK;
    }
    free(beside);
    return t;
}

bw_trust bw_trust_or_warn(const bw_exercise *ex, const char *baseline_path, bw_reply *dev,
                          char **why)
{
    char *w = NULL;
    bw_trust t = bw_trusted_device(ex, baseline_path, NULL, dev, &w);
    if (t == BW_TRUST_UNKNOWN)
        fprintf(stderr, "bwgrade: %s; which cases fit this GPU is decided on the free memory "
                        "the student's worker reports\n", w ? w : "no baseline worker");
    if (why)
        *why = w;
    else
        free(w);
    return t;
}

/* The length of a worker's message without the newlines it ends in. */
static int text_len(const char *s)
{
    size_t len = strlen(s);
    while (len > 0 && s[len - 1] == '\n')
        len--;
    return len > INT_MAX ? INT_MAX : (int)len;
}

int bw_recheck_baseline(const bw_exercise *ex, const char *baseline_path, const char *sanitizer,
                        char **error)
{
    bw_reply again;
    char *why = NULL;
    if (bw_trusted_device(ex, baseline_path, sanitizer, &again, &why) == BW_TRUST_OK) {
        free(why);
        return 1;
    }
    const char *was = *error ? *error : "?";
    char *e = bw_format_alloc("%.*s; nor did the kit's worker without student code start%s%s just "
                              "after: %s", text_len(was), was,
                              sanitizer ? " under compute-sanitizer " : "",
                              sanitizer ? sanitizer : "", why ? why : "?");
    free(why);
    if (e) {
        free(*error);
        *error = e;
    }
    return 0;
}

char *bw_unstarted_text(const char *sanitizer, const char *error)
{
    if (!error)
        error = "?";
    return bw_format_alloc(
        "your worker ended or hung before it answered bwgrade's first request%s%s, where the kit's "
        "worker without your code started on the same GPU (look at code of yours that runs "
        "before main: a global object's constructor, a static initialiser): %.*s",
        sanitizer ? " under compute-sanitizer " : "", sanitizer ? sanitizer : "", text_len(error),
        error);
}

int bw_keep_to_trusted_gpu(const bw_exercise *ex, const char *baseline_path, const bw_reply *dev)
{
    const char *force = getenv("BWLAB_KEEP_GPU");
    int nodes = bw_sandbox_gpu_nodes();
    if (bw_sandbox_bwrap() == NULL || nodes < 1 ||
        (nodes < 2 && !(force && strcmp(force, "1") == 0)))
        return 0;   /* no sandbox, or nothing to hide */
    int minor = bw_gpu_minor(BW_NVIDIA_PROC_GPUS, dev->gpu_uuid);
    if (minor < 0) {
        fprintf(stderr, "bwgrade: the driver's %s names no node for GPU %s: every worker sees "
                        "all %d GPUs\n", BW_NVIDIA_PROC_GPUS, dev->gpu_uuid[0] ? dev->gpu_uuid : "?",
                nodes);
        return 0;
    }
    const char *was = getenv("CUDA_VISIBLE_DEVICES");
    char *saved = was ? bw_format_alloc("%s", was) : NULL;
    bw_sandbox_keep_gpu(minor);
    setenv("CUDA_VISIBLE_DEVICES", dev->gpu_uuid, 1);
    bw_reply inside;
    char *why = NULL;
    bw_trust t = bw_trusted_device(ex, baseline_path, NULL, &inside, &why);
    int kept = t == BW_TRUST_OK && strcmp(inside.gpu_uuid, dev->gpu_uuid) == 0;
    if (!kept) {
        bw_sandbox_keep_gpu(-1);
        if (saved)
            setenv("CUDA_VISIBLE_DEVICES", saved, 1);
        else
            unsetenv("CUDA_VISIBLE_DEVICES");
        fprintf(stderr, "bwgrade: with only /dev/nvidia%d bound, the kit's worker %s: every "
                        "worker sees all %d GPUs\n", minor,
                t == BW_TRUST_OK ? "found another GPU" : why ? why : "would not start", nodes);
    }
    free(why);
    free(saved);
    return kept;
}
