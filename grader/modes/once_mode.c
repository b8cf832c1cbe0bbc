#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "once_mode.h"
#include "case_run.h"
#include "runner.h"

int bw_once_main(const bw_exercise *ex, const char *worker_path, bw_size size, int offset,
                 uint64_t seed)
{
    int64_t n = bw_size_n(size);
    bw_case c;
    memset(&c, 0, sizeof c);
    c.index = -1;
    c.n = n;
    c.rows = size.rows > 0 ? size.rows : 1;
    c.cols = size.rows > 0 ? size.cols : n;
    c.offset_elems = offset;
    c.alpha = ex->uses_alpha ? 0.75f : 0.0f;
    c.alpha_kind = ex->uses_alpha ? "random" : "-";
    c.values = bw_timed_values(ex);
    c.group = BW_GROUP_LARGE;
    c.data_seed = seed;

    char *why = NULL;
    int no_device = 0;
    bw_runner *run = bw_runner_open(ex, worker_path, NULL, &why, &no_device);
    if (!run) {
        (void)no_device;   /* the message already says which */
        fprintf(stderr, "bwgrade once: %s\n", why ? why : "the worker would not start");
        free(why);
        return 3;
    }
    bw_case_result r;
    bw_case_result_init(&r);
    bw_test_run_case(run, &c, NULL, 0, &r);
    printf("once: %s n=%" PRId64 " offset=%d: %s", ex->name, n, offset, bw_outcome_name(r.outcome));
    if (r.outcome == BW_OUTCOME_FAIL)
        printf(" (%" PRId64 " wrong elements, first at index %" PRId64 ")", r.out.mismatches,
               r.out.first_bad);
    if (r.detail)
        printf(": %s", r.detail);
    printf("\n");
    int code = r.outcome == BW_OUTCOME_PASS ? 0 : r.outcome == BW_OUTCOME_SKIPPED ? 3 : 1;
    bw_case_result_free(&r);
    bw_runner_close(run);
    return code;
}
