/* The GPU's facts (name, free and total memory) from a worker with no
 * student code, started before any student's. A student's worker answers
 * HELLO after the student's static constructors have run, and memory they
 * take there would make bwgrade skip, as too large for this GPU, exactly the
 * cases that catch a 32-bit index (corpus entry hog_skips_huge).
 *
 * The same worker settles whose fault it is when a student's worker will
 * not start: where it started (under the same sanitizer), the student's code
 * is to blame, whatever that worker printed. Text such as "no CUDA device"
 * from a student's worker proves nothing (corpus entries fakes_no_device,
 * quits_under_sanitizer). */
#ifndef BWLAB_TRUSTED_DEVICE_H
#define BWLAB_TRUSTED_DEVICE_H
#include "exercise.h"
#include "protocol.h"

typedef enum {
    BW_TRUST_UNKNOWN = -1,   /* the baseline worker would not start */
    BW_TRUST_OK = 0,         /* it found a device: *dev holds its HELLO */
    BW_TRUST_NO_DEVICE = 1   /* it says there is no CUDA device */
} bw_trust;

/* Starts the worker at baseline_path (NULL: bw_worker_baseline beside
 * bwgrade), under compute-sanitizer's tool sanitizer when not NULL, keeps
 * its HELLO in *dev and stops it. For UNKNOWN and NO_DEVICE a malloc'd *why
 * says what it said. (A CPU stand-in for the student's worker may have a
 * "device" where the baseline has none.) */
bw_trust bw_trusted_device(const bw_exercise *ex, const char *baseline_path, const char *sanitizer,
                           bw_reply *dev, char **why);

/* bw_trusted_device without a sanitizer, for bwgrade test and bench. Where
 * the baseline worker would not start, a line on stderr says that the
 * student's worker's figure decides. why: NULL, or gets bw_trusted_device's. */
bw_trust bw_trust_or_warn(const bw_exercise *ex, const char *baseline_path, bw_reply *dev,
                          char **why);

/* A student's worker would not start (*error says why, or is NULL) where the
 * baseline worker had. The baseline worker is started again now, under the
 * same sanitizer: since its first answer another process (another lane's
 * worker) may have taken the GPU, and then nobody's code is to blame. 1 when
 * it started: the student's code is to blame. Else 0, and *error (replaced,
 * malloc'd) gains what the baseline worker said, its own newlines at the
 * end dropped. */
int bw_recheck_baseline(const bw_exercise *ex, const char *baseline_path, const char *sanitizer,
                        char **error);

/* What a student reads when their worker would not start where the kit's
 * worker did (under compute-sanitizer's tool sanitizer when not NULL):
 * where to look, then error, what the start said (its newlines at the end
 * dropped). Malloc'd; NULL when out of memory. */
char *bw_unstarted_text(const char *sanitizer, const char *error);

/* Under the sandbox on a machine of several GPUs (or with BWLAB_KEEP_GPU=1
 * set, for the kit's tests on one), keeps every worker started afterwards to
 * the GPU of dev (the baseline worker's HELLO): only its node is bound
 * (sandbox.h), and CUDA_VISIBLE_DEVICES names it by UUID, which stays right
 * whichever GPUs CUDA then enumerates. Checked at once: the baseline worker
 * must find that GPU inside. Where it does not, or the GPU's node is not
 * known, nothing changes and a line on stderr says why. 1 when kept. */
int bw_keep_to_trusted_gpu(const bw_exercise *ex, const char *baseline_path, const bw_reply *dev);

#endif
