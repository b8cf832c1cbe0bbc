/* See trusted_device.h. */
#include <stdio.h>
#include <stdlib.h>
#include "beside_self.h"
#include "runner.h"
#include "trusted_device.h"

int bw_trusted_device(const bw_exercise *ex, const char *baseline_path, bw_reply *dev, char **why)
{
    *why = NULL;
    char *beside = baseline_path ? NULL : bw_path_beside_self("bw_worker_baseline");
    const char *path = baseline_path ? baseline_path : beside;
    if (!path) {
        *why = bw_format_alloc("bw_worker_baseline was not found beside bwgrade");
        return -1;
    }
    int no_device = 0;
    bw_runner *run = bw_runner_open(ex, path, NULL, why, &no_device);
    int rc = -1;
    if (run) {
        *dev = *bw_runner_device(run);
        bw_runner_close(run);
        rc = 0;
    } else if (no_device) {
        free(*why);
        *why = NULL;
        rc = 1;
    }
    free(beside);
    return rc;
}

int bw_trust_or_warn(const bw_exercise *ex, const char *baseline_path, bw_reply *dev)
{
    char *why = NULL;
    int rc = bw_trusted_device(ex, baseline_path, dev, &why);
    if (rc < 0)
        fprintf(stderr, "bwgrade: %s; which cases fit this GPU is decided on the free memory "
                        "the student's worker reports\n", why ? why : "no baseline worker");
    free(why);
    return rc == 0;
}
