/* The --json reports, in the formats fixed by docs/ARCHITECTURE.md.
 * Extensions beyond that format (readers may ignore them):
 *   test:  "error" (status "error" only); with --sanitize, "sanitize" (the
 *          tools), and "sanitizer" on every case and diagnosis.
 *   bench: "status", "error"; "copy" gains "status", "detail", "samples"
 *          (copy is null with --no-copy); rows may have status
 *          "timing_mismatch" (event and host clocks disagree).
 * Non-finite numbers are the strings "inf", "-inf", "nan"; a figure that
 * was not measured or was refused is null. */
#ifndef BWLAB_REPORT_JSON_H
#define BWLAB_REPORT_JSON_H
#include <stdio.h>
#include "report_text.h"

/* Write to f. Return 0, or -1 on a write error. */
int bw_report_test_json_to(FILE *f, const bw_test_report *r);
int bw_report_bench_json_to(FILE *f, const bw_bench_report *r);

/* Write to path ("-": stdout) through a temporary file renamed into place,
 * so a reader never sees half a report. Return 0, or -1 with errno set. */
int bw_report_test_json(const char *path, const bw_test_report *r);
int bw_report_bench_json(const char *path, const bw_bench_report *r);

#endif
