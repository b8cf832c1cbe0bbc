/* The GPU's facts (name, free and total memory) from a worker with no
 * student code, started before any student's. A student's worker answers
 * HELLO after the student's static constructors have run, and memory they
 * take there would make bwgrade skip, as too large for this GPU, exactly the
 * cases that catch a 32-bit index (corpus entry hog_skips_huge). */
#ifndef BWLAB_TRUSTED_DEVICE_H
#define BWLAB_TRUSTED_DEVICE_H
#include "exercise.h"
#include "protocol.h"

/* Starts the worker at baseline_path (NULL: bw_worker_baseline beside
 * bwgrade), keeps its HELLO in *dev and stops it. 0 when it found a device;
 * -1 with a malloc'd *why when it would not start, and 1 (nothing in *why)
 * when it says there is no CUDA device: a CPU stand-in for the student's
 * worker may still have one. */
int bw_trusted_device(const bw_exercise *ex, const char *baseline_path, bw_reply *dev, char **why);

/* bw_trusted_device for bwgrade test and bench: 1 with *dev filled when the
 * baseline worker found a device; else 0, and where it would not start a
 * line on stderr says that the student's worker's figure decides. */
int bw_trust_or_warn(const bw_exercise *ex, const char *baseline_path, bw_reply *dev);

#endif
