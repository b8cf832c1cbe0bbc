/* See case_run.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "case_data.h"
#include "case_run.h"
#include "host_memory.h"
#include "mono_clock.h"
#include "parallel_for.h"

/* Context and module loading take a few seconds at most; beyond that the
 * time goes into copying the images (~2 bytes of copies per byte of data),
 * so the limit grows with the images: about 90 s for the 2^31-element case
 * of three bf16 arrays, far above what a correct kernel needs even on a slow
 * host. A sanitizer slows kernels by 10-100x and adds its own start-up,
 * hence the larger terms. The work is counted in bf16 elements of the
 * arrays that hold n of them. */
double bw_case_time_limit(const bw_exercise *ex, int64_t n, int sanitized)
{
    double work = 0.0;
    for (int k = 0; k < ex->n_arrays; k++)
        work += (double)bw_exercise_count_of(ex, k, n) * (double)bw_type_bytes(ex->arrays[k].type) / 2.0;
    return sanitized ? 60.0 + work * 2e-6 : 5.0 + work * 2e-8;
}

double bw_case_time_limit_after_hang(const bw_exercise *ex, int64_t n, int sanitized)
{
    return bw_case_time_limit(ex, n, sanitized) / 5.0;
}

static void set_detail(bw_case_result *r, char *detail)
{
    free(r->detail);
    r->detail = detail;
}

/* BWLAB_TIMING=1: where a slow case spends its time, on stderr (for the
 * kit's developers; students never need it). */
static void phase(double *mark, double *times, int k)
{
    double t = bw_mono_s();
    times[k] = t - *mark;
    *mark = t;
}

/* Same inputs, same layout, once more: different output bits mean the
 * result depends on timing, i.e. a race. */
static void rerun_for_race(bw_runner *run, const bw_case_data *d, const bw_case_check *first,
                           const bw_request *req, double limit, bw_case_result *r)
{
    bw_case_check again;
    bw_chunk_ops ops = bw_case_data_chunk_ops(d, &again, 1);
    bw_reply rep;
    char *detail = NULL, *output = NULL;
    if (bw_runner_run(run, req, &ops, limit, &rep, &detail, &output) == BW_OUTCOME_PASS)
        r->nondeterministic = bw_case_check_differs(first, &again, r);
    free(detail);
    free(output);
}

/* Bytes of a sanitizer's findings kept per case, and of its notes. */
#define SANITIZER_SHOWN_CAP 4000

/* A memory error (or any finding not known to be harmless) fails the case
 * and joins its detail, costly findings first so that the report's one-line
 * summary names one of them. A CUDA API error alone is the student's code
 * getting an error back: it costs nothing by itself (if the call then fails,
 * the case fails for that), and is kept as the case's sanitizer note. */
static void add_sanitizer_findings(bw_runner *run, bw_case_result *r)
{
    bw_sanitizer_findings f;
    if (!bw_runner_take_sanitizer_findings(run, SANITIZER_SHOWN_CAP, &f))
        return;
    if (f.costly > 0) {
        if (r->outcome == BW_OUTCOME_PASS)
            r->outcome = BW_OUTCOME_FAIL;
        char *shown = bw_format_alloc("%s%s%s%s%s", r->detail ? r->detail : "",
                                      r->detail ? "\n" : "", f.costly_text ? f.costly_text : "",
                                      f.note_text ? "compute-sanitizer also noted:\n" : "",
                                      f.note_text ? f.note_text : "");
        if (shown)
            set_detail(r, shown);
    } else if (f.note_text) {
        r->sanitizer_note = f.note_text;
        f.note_text = NULL;
    }
    bw_sanitizer_findings_free(&f);
}

void bw_test_run_case(bw_runner *run, const bw_case *c, const char *sanitizer, double limit_s,
                      bw_case_result *r)
{
    const bw_exercise *ex = bw_runner_exercise(run);
    bw_case_data d;
    double t0 = bw_mono_s();
    double mark = t0, times[2] = {0, 0}, call_ms = 0;
    bw_case_result_init(r);
    bw_case_data_init(&d, ex, c, sanitizer != NULL, parallel_default_threads());

    bw_request req;
    bw_case_data_request(&d, BW_REQ_RUN, &req);
    char *short_of = bw_memory_shortfall(d.images_bytes, req.shm_bytes, 0, bw_runner_device(run),
                                         bw_runner_shm(run));
    if (short_of) {
        r->outcome = BW_OUTCOME_SKIPPED;
        r->detail = short_of;
        goto done;
    }
    double limit = limit_s > 0 ? limit_s : bw_case_time_limit(ex, c->n, sanitizer != NULL);
    bw_case_check check;
    bw_chunk_ops ops = bw_case_data_chunk_ops(&d, &check, 0);
    bw_dialogue_times tm = {0, 0, 0, 0, 0};
    ops.times = &tm;
    bw_reply rep;
    char *detail = NULL;
    bw_outcome o = bw_runner_run(run, &req, &ops, limit, &rep, &detail, &r->student_output);
    phase(&mark, times, 0);
    if (o != BW_OUTCOME_PASS) {
        r->outcome = o;
        r->detail = detail;
    } else {
        free(detail);
        call_ms = rep.call_ms;
        bw_case_check_finish(&check, r);
        if (r->outcome == BW_OUTCOME_FAIL)
            rerun_for_race(run, &d, &check, &req, limit, r);
        phase(&mark, times, 1);
    }
    if (sanitizer)
        add_sanitizer_findings(run, r);
done:
    r->seconds = bw_mono_s() - t0;
    if (r->seconds > 0.5 && getenv("BWLAB_TIMING"))
        fprintf(stderr, "timing: case %d n=%" PRId64 ": %.2f s = run %.2f (upload %.2f of which "
                        "filling %.2f, call %.3f of which the student's %.3f, download %.2f of "
                        "which checks %.2f), race re-run %.2f\n", c->index, c->n, r->seconds,
                times[0], tm.upload, tm.fill, tm.call, call_ms / 1e3, tm.download, tm.take,
                times[1]);
}
