/* See trusted_device.h. */
#include <stdio.h>
#include <stdlib.h>
#include "beside_self.h"
#include "runner.h"
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
