/* Names and cleanup for per-case results. */
#include <stdlib.h>
#include <string.h>
#include "case_result.h"

const char *bw_outcome_name(bw_outcome o)
{
    switch (o) {
    case BW_OUTCOME_PASS: return "pass";
    case BW_OUTCOME_FAIL: return "fail";
    case BW_OUTCOME_CRASH: return "crash";
    case BW_OUTCOME_TIMEOUT: return "timeout";
    case BW_OUTCOME_CUDA_ERROR: return "cuda_error";
    case BW_OUTCOME_SKIPPED: return "skipped";
    }
    return "unknown";
}

void bw_case_result_init(bw_case_result *r)
{
    memset(r, 0, sizeof *r);
    r->outcome = BW_OUTCOME_PASS;
    r->guard_array = -1;
    r->input_array = -1;
    r->input_first = -1;
    r->out.first_bad = -1;
    r->out.last_bad = -1;
}

void bw_case_result_free(bw_case_result *r)
{
    if (!r)
        return;
    free(r->detail);
    free(r->student_output);
    free(r->sanitizer_note);
    r->sanitizer_note = NULL;
    /* Cleared so that a second free, or a later read, is harmless. */
    r->detail = NULL;
    r->student_output = NULL;
}
