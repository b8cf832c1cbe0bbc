/* bwgrade bench's rows: which sizes and offsets are measured and which fit,
 * one row timed in a fresh worker beside the baseline worker's calibration,
 * its output checked, and its figures judged against the per-call checks,
 * the grader's clock, the datasheet and the copy. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "mix64.h"
#include "image_hash.h"
#include "random_u64.h"
#include "parallel_for.h"
#include "case_data.h"
#include "host_memory.h"
#include "bench_rows.h"

#define BIG_A (((int64_t)1 << 26) + 5)   /* not a multiple of any vector width */
#define BIG_B (((int64_t)1 << 28) - 1)
/* Work outside the timed stream: a sample's host-clock lag (see
 * bench_timing.c) above the copy's by more than this many ms and this
 * fraction of the sample's time. An honest call's lag is the copy's within
 * microseconds: everything it enqueues runs before the end event. */
#define LAG_EXCESS_MIN_MS 0.03
#define LAG_EXCESS_FRACTION 0.05
/* Without a copy to compare with: this much lag is never launch overhead. */
#define LAG_ALONE_MS 0.25

/* The rules a refused figure names (also in the JSON, for instructors). */
#define RULE_RECOMPUTE "every call computes its whole output from its inputs"
#define RULE_TIMED "all of a call's work runs before it returns or on the streams it was given"
#define RULE_POSSIBLE "a figure must be physically possible"
#define RULE_CLOCK "a call's figure must agree with the grader's own clock"

/* A refused figure: its status, the rule it broke and why; returns -1. */
static int refuse(bw_bench_row *row, const char *status, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(bw_bench_row *row, const char *status, const char *rule, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    row->status = status;
    row->rule = rule;
    row->detail = bw_format_valloc(fmt, ap);
    va_end(ap);
    return -1;
}

/* The baseline worker's samples of a row: enough for a steady median of
 * the spans; its calls do nothing, so they cost the kit's work alone. */
#define CALIBRATION_SAMPLES 30
/* The fewest samples a row's clock must see (bench_witness.h). */
#define MIN_CLOCKED_SAMPLES 3

/* The rows to measure. Default: powers of two from 64K elements to 16M, then
 * two large odd sizes, those also at misaligned offsets; a matrix: squares
 * from 1024 to the largest below 2^31 elements, then an odd tall shape and
 * an odd wide one, both also misaligned. */
row_spec *make_rows(const bw_bench_opts *o, int *count)
{
    static const bw_size sizes[] = {{0, (int64_t)1 << 16}, {0, (int64_t)1 << 18},
                                    {0, (int64_t)1 << 20}, {0, (int64_t)1 << 22},
                                    {0, (int64_t)1 << 24}, {0, BIG_A}, {0, BIG_B}};
    static const bw_size shapes[] = {{1024, 1024}, {4096, 4096}, {8192, 8192}, {16384, 16384},
                                     {46340, 46340}, {1048579, 1001}, {1001, 1048579}};
    static const int extra_offsets[] = {1, 4, 7};
    const int matrix = o->ex->shape == BW_SHAPE_MATRIX;
    const bw_size *defaults = matrix ? shapes : sizes;
    int n_def = matrix ? (int)(sizeof shapes / sizeof shapes[0]) : (int)(sizeof sizes / sizeof sizes[0]);
    /* The two largest defaults get the extra offsets (a vector's odd sizes,
     * a matrix's odd shapes). */
    int odd0 = n_def - 2;
    int cap;
    if (o->sizes || o->offsets) {
        int ns = o->sizes ? o->n_sizes : n_def;
        int no = o->offsets ? o->n_offsets : 1;
        cap = ns * no;
    } else {
        cap = n_def + 2 * 3;
    }
    row_spec *rows = malloc(sizeof *rows * (size_t)(cap > 0 ? cap : 1));
    if (!rows)
        return NULL;
    int n = 0;
    if (o->sizes || o->offsets) {
        const bw_size *sz = o->sizes ? o->sizes : defaults;
        int ns = o->sizes ? o->n_sizes : n_def;
        for (int i = 0; i < ns; i++) {
            if (o->offsets)
                for (int k = 0; k < o->n_offsets; k++)
                    rows[n++] = (row_spec){sz[i], o->offsets[k]};
            else
                rows[n++] = (row_spec){sz[i], 0};
        }
    } else if (o->quick) {
        rows[n++] = (row_spec){matrix ? shapes[3] : sizes[n_def - 1], 0};
    } else {
        for (int i = 0; i < n_def; i++)
            rows[n++] = (row_spec){defaults[i], 0};
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 3; k++)
                rows[n++] = (row_spec){defaults[odd0 + i], extra_offsets[k]};
    }
    *count = n;
    return rows;
}

/* The per-call checks of a timed row; 0 when it passed them. */
static int judge_calls(const bw_reply *r, const bw_bench_report *rep, bw_bench_row *row)
{
    row->calls_checked = r->calls_checked;
    row->calls_bad = r->calls_bad;
    row->first_bad_call = r->first_bad_call;
    row->first_bad_rotation = r->first_bad_rotation;
    row->lag_ms = r->lag_median_ms;
    /* The lag is compared with cudaMemcpy's, as it was before the baseline
     * could be the kit's copy kernel: the same verdicts as then. */
    double copy_lag = isfinite(rep->copies[BW_COPY_MEMCPY].lag_ms)
                          ? rep->copies[BW_COPY_MEMCPY].lag_ms
                          : rep->copy.lag_ms;
    row->lag_excess_ms = isfinite(copy_lag) ? r->lag_median_ms - copy_lag : NAN;
    row->first_bad_value = r->first_bad_value;
    row->want_value = r->want_value;
    if (r->calls_bad > 0 && row->by_value) {
        return refuse(row, "not_recomputed", RULE_RECOMPUTE,
            "%d of %d calls after the first gave a result that does not follow their inputs "
            "(first: call %d gave %.9g; the first, checked call gave %.9g, and later calls' "
            "inputs are negated on every other call and have a few elements changed, so their "
            "results differ from it): a call must compute its result from all of its inputs, "
            "not remember an earlier one or read part of them",
            r->calls_bad, r->calls_checked, r->first_bad_call, r->first_bad_value, r->want_value);
    }
    if (r->calls_bad > 0) {
        return refuse(row, "not_recomputed", RULE_RECOMPUTE,
            "%d of %d calls after the first gave an output that does not follow their inputs "
            "(first: call %d, arrays rotated by %d %s, and a few elements moved, since the first, "
            "checked call): a call must compute its whole output from all of its inputs, not "
            "reuse an earlier result or skip work at sizes it recognises",
            r->calls_bad, r->calls_checked, r->first_bad_call, r->first_bad_rotation,
            row->rows > 0 ? "rows" : "elements");
    }
    double limit = isfinite(row->lag_excess_ms)
                       ? fmax(LAG_EXCESS_MIN_MS, LAG_EXCESS_FRACTION * r->ms_median)
                       : LAG_ALONE_MS + LAG_EXCESS_FRACTION * r->ms_median;
    double seen = isfinite(row->lag_excess_ms) ? row->lag_excess_ms : r->lag_median_ms;
    if (seen > limit) {
        return refuse(row, "timing_mismatch", RULE_TIMED,
            "the device was still busy %.3f ms after the timed region ended (median per call; "
            "%.3f ms timed): work was left on a stream the timing does not wait for "
            "(cudaStreamNonBlocking?) or launched from another thread",
            seen, r->ms_median);
    }
    return 0;
}

/* One sentence for output that failed the checks after timing. */
static char *wrong_detail(const bw_case_result *r, int64_t n)
{
    if (r->out.mismatches > 0)
        return bw_format_alloc("after timing, %" PRId64 " of %" PRId64 " elements are wrong "
                               "(first at index %" PRId64 ")",
                               r->out.mismatches, n, r->out.first_bad);
    if (r->guard_bad_bytes > 0)
        return bw_format_alloc("wrote outside array %d (%" PRId64 " guard bytes changed)",
                               r->guard_array, r->guard_bad_bytes);
    return bw_format_alloc("changed input array %d (%" PRId64 " elements)", r->input_array,
                           r->input_changed);
}

/* The same row in the baseline worker, whose call does nothing: the spans
 * the grader's clock sees there are the kit's own work. */
static void calibrate_row(bw_runner *base, const bw_request *student_req, bw_bench_row *row)
{
    bw_request req = *student_req;
    req.warmup = 1;
    req.min_samples = req.max_samples = CALIBRATION_SAMPLES;
    req.time_cap_s = 0.0;
    req.host_batch = 0;
    req.profile_calls = 0;
    req.rotate_seed = bw_random_u64() | 1;
    bw_reply r;
    char *detail = NULL;
    bw_witness_summary b;
    bw_outcome o = witnessed_bench(base, &req, &b, &r, &detail);
    if (o == BW_OUTCOME_PASS) {
        row->base_clock_samples = b.samples;
        row->base_span_ms = b.span_ms;
        row->base_prep_ms = b.prep_ms;
    } else {
        row->detail = bw_format_alloc("the baseline worker could not time this row (%s): %s",
                                      outcome_status(o), detail ? detail : "no details");
    }
    free(detail);
}

/* The case a row times: bw_timed_values, alpha 0.75, inputs from the seed
 * and the row. */
static void bench_case(const bw_bench_opts *o, const bw_bench_row *row, bw_case *c)
{
    const bw_exercise *ex = o->ex;
    memset(c, 0, sizeof *c);
    c->index = -1;
    c->n = row->n;
    c->rows = row->rows > 0 ? row->rows : 1;
    c->cols = row->rows > 0 ? row->cols : row->n;
    c->offset_elems = row->offset;
    c->alpha = ex->uses_alpha ? 0.75f : 0.0f;
    c->alpha_kind = ex->uses_alpha ? "fixed" : "-";
    c->values = bw_timed_values(ex);
    c->group = BW_GROUP_LARGE;
    c->data_seed = bw_mix64(o->seed ^ bw_mix64((uint64_t)row->n * 31u + (uint64_t)row->offset));
}

/* The hash the worker gives the first call's arrays (mix64.h), here. */
static uint64_t images_hash(const bw_case_data *d, const uint8_t *images, uint64_t key)
{
    uint64_t h = 0;
    for (int k = 0; k < d->ex->n_arrays; k++) {
        const uint8_t *data = images + bw_case_data_place(d, k) + d->layout[k].front_bytes;
        h += bw_array_hash(data, k, (int64_t)(d->layout[k].data_bytes / 2), key,
                           parallel_default_threads());
    }
    return h;
}

/* By value: how far two correct calls' results may lie apart (on the
 * timed values of bw_timed_values, less than any element of x). */
static double value_tolerance(const bw_case_data *d, const uint8_t *images)
{
    bw_case_result r;
    bw_case_result_init(&r);
    bw_case_data_check(d, images, &r);   /* before the call: the facts of its inputs */
    double tol = bw_sum_spread(bw_exercise_out_type(d->ex), r.shape.sum_bound,
                               fabs(r.shape.sum_exact) + r.shape.sum_bound);
    bw_case_result_free(&r);
    return tol;
}

/* Times one row and checks its output: 0 with *r filled, for judge_row to
 * finish once the copy is measured; else -1 with row->status set. The row
 * runs in a worker whose first call is this row's validated call: whatever
 * the code settled on its earlier calls (a library's tile size, a cached
 * launch configuration, chosen for the gate's tiny n) would otherwise be
 * timed here, not what its users get. fresh: restart the worker first;
 * else the worker must be new (bench's first row, before the gate). */
int measure_row(bw_runner *run, bw_runner *base, const bw_bench_opts *o,
                const sampling *s, bw_bench_row *row, int fresh, bw_reply *out)
{
    const bw_exercise *ex = o->ex;
    char *fresh_why = NULL;
    if (fresh && bw_runner_restart(run, &fresh_why) != 0) {
        row->status = "crash";
        row->detail = bw_format_alloc("a fresh worker for this row would not start: %s",
                                      fresh_why ? fresh_why : "no reason given");
        free(fresh_why);
        return -1;
    }
    row->worker_pid = bw_runner_worker_pid(run);
    bw_case c;
    bench_case(o, row, &c);
    bw_case_data d;
    bw_case_data_init(&d, ex, &c, 0, parallel_default_threads());
    char *why = NULL;
    uint8_t *images = bw_case_data_build(&d, bw_runner_shm(run), &why);
    if (!images) {
        row->status = "skipped";
        row->detail = why;
        return -1;
    }
    bw_request req;
    bw_case_data_request(&d, BW_REQ_BENCH, &req);
    /* Every array is rewritten before each call (in place or not). */
    /* Fresh for every row: not predictable from the kit or the seed. */
    req.rotate_seed = bw_random_u64();
    req.hash_key = bw_random_u64();
    row->by_value = req.by_value >= 0;
    if (row->by_value)
        req.value_tol = value_tolerance(&d, images);
    apply_sampling(&req, s);
    req.profile_calls = o->profile_calls;
    bw_reply r;
    char *detail = NULL;
    bw_witness_summary seen;
    bw_outcome o2 = witnessed_bench(run, &req, &seen, &r, &detail);
    if (o2 != BW_OUTCOME_PASS) {
        row->status = outcome_status(o2);
        row->detail = detail;
        return -1;
    }
    free(detail);
    row->clock_samples = seen.samples;
    row->span_ms = seen.span_ms;
    row->prep_ms = seen.prep_ms;

    row->timed = 1;
    row->samples = r.samples;
    row->ms_median = r.ms_median;
    row->ms_q1 = r.ms_q1;
    row->ms_q3 = r.ms_q3;
    row->ms_min = r.ms_min;
    row->ms_max = r.ms_max;
    row->noise = r.noise;
    row->timer_ms = r.timer_ms;
    row->event_ms = r.batch_event_ms;
    row->host_ms = r.batch_host_ms;
    row->ratio = r.batch_event_ms > 0 ? r.batch_host_ms / r.batch_event_ms : NAN;

    /* The first call's output must be right, and be what the worker hashed. */
    bw_case_result res;
    bw_case_result_init(&res);
    bw_case_data_check(&d, images, &res);
    uint64_t hash = images_hash(&d, images, req.hash_key);
    if (res.outcome != BW_OUTCOME_PASS) {
        row->status = "wrong";
        row->detail = wrong_detail(&res, row->n);
        bw_case_result_free(&res);
        return -1;
    }
    bw_case_result_free(&res);
    if (hash != r.out_hash) {
        return refuse(row, "not_recomputed", RULE_RECOMPUTE,
            "the worker's hash of the checked output (%016" PRIx64 ") is not the grader's "
            "(%016" PRIx64 "): the arrays changed after the check, or the worker was "
            "tampered with",
            r.out_hash, hash);
    }
    /* Under a profiler the spans mean nothing (its hooks delay launches). */
    if (o->profile_calls == 0) {
        /* The worker must time as many samples as asked (with fewer than
         * three there is no preparation to compare) ... */
        if (row->clock_samples < MIN_CLOCKED_SAMPLES || !isfinite(row->prep_ms)) {
            return refuse(row, "timing_mismatch", RULE_CLOCK,
                "the grader's clock saw %d timed samples; a row needs at least %d (the "
                "worker's sampling was tampered with, or one call takes longer than the "
                "sampling time)",
                row->clock_samples, MIN_CLOCKED_SAMPLES);
        }
        /* ... and nothing of the student's may run while the baseline worker
         * times: a thread or timer left behind in an idle worker could slow
         * the calibration or the copy, and so flatter every figure. */
        bw_runner_stop_worker(run);
        calibrate_row(base, &req, row);
        row->clocked = isfinite(row->base_span_ms) && row->base_clock_samples > 0;
        if (!row->clocked) {
            row->status = "skipped";
            if (!row->detail)
                row->detail = bw_format_alloc("the baseline worker's clock saw no sample");
            return -1;
        }
    }
    *out = r;
    return 0;
}

/* The worker's figure against the grader's clock; 0 when they agree. */
static int judge_clock(const bw_reply *r, bw_bench_row *row)
{
    if (!row->clocked)
        return 0;
    bw_witness_summary student = {row->clock_samples, row->span_ms, row->prep_ms};
    bw_witness_summary base = {row->base_clock_samples, row->base_span_ms, row->base_prep_ms};
    bw_witness_verdict v;
    int bad = bw_witness_judge(student, base, r->ms_median, &v);
    row->clock_ms = v.clock_ms;
    row->charged_ms = v.charged_ms;
    row->allowed_ms = v.allowed_ms;
    if (!bad)
        return 0;
    return refuse(row, "timing_mismatch", RULE_CLOCK,
        "the worker reported %.4f ms per call, but the grader's own clock saw %.4f ms "
        "(%.4f ms beyond a worker with no student code, plus %.4f ms more preparation "
        "than it needs): the worker's timing was tampered with, or the call's work ran "
        "before its timing started",
        r->ms_median, v.charged_ms, v.clock_ms, fmax(0.0, v.charged_ms - v.clock_ms));
}

/* A measured row against the rules that need the copy's figures. */
void judge_row(const bw_reply *r, const sampling *s, const bw_bench_report *rep,
               bw_bench_row *row)
{
    const bw_exercise *ex = rep->ex;
    if (judge_calls(r, rep, row) != 0 || judge_clock(r, row) != 0)
        return;

    double gbs = r->ms_median > 0 ? (double)row->bytes / (r->ms_median * 1e-3) / 1e9 : INFINITY;
    double least_ms = bw_exercise_least_dram_bytes(ex, row->n, rep->device ? rep->device->l2_bytes : 0) /
                      (rep->peak_gbs * 1e9) * 1e3;
    if (isfinite(rep->peak_gbs) && !(r->ms_median >= least_ms)) {
        refuse(row, "impossible", RULE_POSSIBLE,
            "timed at %.4g ms (%.1f GB/s), but reading its inputs from memory at the %.1f GB/s "
            "datasheet peak takes %.4g ms even if every output byte stayed in the L2 cache: "
            "the timed call cannot have moved all its data (work left running outside the "
            "timed stream?)",
            r->ms_median, gbs, rep->peak_gbs, least_ms);
        return;
    }
    if (isfinite(row->ratio) && row->ratio > 1.25 && r->batch_host_ms - r->batch_event_ms > 0.5) {
        refuse(row, "timing_mismatch", RULE_TIMED,
            "event timing disagrees with the host clock (%.3f ms by events, %.3f ms by the "
            "host clock, %d calls): work outside the timed stream?",
            r->batch_event_ms, r->batch_host_ms, s->host_batch);
        return;
    }
    row->status = "ok";
    row->gbs = gbs;
    row->pct_peak = 100.0 * gbs / rep->peak_gbs;
    row->pct_copy = isfinite(rep->copy.gbs) ? 100.0 * gbs / rep->copy.gbs : NAN;
    const bw_bench_copy *memcpy_copy = &rep->copies[BW_COPY_MEMCPY];
    row->pct_memcpy = memcpy_copy->status && strcmp(memcpy_copy->status, "ok") == 0
                          ? 100.0 * gbs / memcpy_copy->gbs
                          : NAN;
}

void init_row(bw_bench_row *row, const bw_exercise *ex, row_spec spec)
{
    memset(row, 0, sizeof *row);
    row->n = bw_size_n(spec.size);
    row->rows = spec.size.rows;
    row->cols = spec.size.rows > 0 ? spec.size.cols : 0;
    row->offset = spec.offset;
    row->bytes = bw_exercise_call_bytes(ex, row->n);
    row->status = "skipped";
    row->ratio = row->gbs = row->pct_peak = row->pct_copy = row->pct_memcpy = NAN;
    row->lag_ms = row->lag_excess_ms = NAN;
    row->span_ms = row->prep_ms = row->base_span_ms = row->base_prep_ms = NAN;
    row->clock_ms = row->charged_ms = row->allowed_ms = NAN;
}

/* The preparation the clock compares varies between two runs of one row
 * (docs/SECURITY.md): a row the clock
 * refused is timed once more, in a fresh worker beside a fresh calibration,
 * and stays refused only if it fails again (a forged timing fails every
 * time). Under a profiler the clock judges nothing. */
void retry_if_clock_refused(bw_runner *run, bw_runner *base, const bw_bench_opts *o,
                            const sampling *s, const bw_bench_report *rep,
                            bw_bench_row *row)
{
    if (!row->rule || strcmp(row->rule, RULE_CLOCK) != 0 || o->profile_calls != 0)
        return;
    char *first_detail = row->detail;
    row->detail = NULL;
    init_row(row, o->ex, (row_spec){{row->rows, row->rows > 0 ? row->cols : row->n}, row->offset});
    row->status = NULL;
    bw_reply r;
    if (measure_row(run, base, o, s, row, 1, &r) == 0)
        judge_row(&r, s, rep, row);
    row->clock_retried = 1;
    if (strcmp(row->status, "timing_mismatch") == 0 && first_detail) {
        char *both = bw_format_alloc("%s (and the first time: %s)", row->detail ? row->detail : "",
                                     first_detail);
        if (both) {
            free(row->detail);
            row->detail = both;
        }
    }
    /* Kept whatever the retry gave: a row that passed its retry still
     * shows, in the JSON, what the clock saw the first time. */
    row->clock_first_refusal = first_detail;
}

/* Which rows fit (the images, a device copy of each array's data, and the
 * L2 flush buffer, taken as twice the L2): status NULL, to be measured, or
 * "skipped" with the reason. *largest: the bytes of the largest that fits. */
void mark_rows_that_fit(bw_runner *run, const bw_exercise *ex, const bw_reply *device,
                        bw_bench_row *rows, int n_rows, int64_t *largest)
{
    *largest = 0;
    for (int i = 0; i < n_rows; i++) {
        bw_case c;
        bw_case_data d;
        memset(&c, 0, sizeof c);
        c.n = rows[i].n;
        c.rows = rows[i].rows > 0 ? rows[i].rows : 1;
        c.cols = rows[i].rows > 0 ? rows[i].cols : rows[i].n;
        c.offset_elems = rows[i].offset;
        bw_case_data_init(&d, ex, &c, 0, 1);
        /* The pristine copies the worker keeps of every array's data. */
        uint64_t extra = 2 * (uint64_t)device->l2_bytes;
        for (int k = 0; k < ex->n_arrays; k++)
            extra += d.layout[k].data_bytes;
        char *short_of = bw_memory_shortfall(d.images_bytes, d.images_bytes, extra, device,
                                             bw_runner_shm(run));
        if (short_of) {
            rows[i].status = "skipped";
            rows[i].detail = short_of;
        } else {
            rows[i].status = NULL;   /* to be measured */
            if (rows[i].bytes > *largest)
                *largest = rows[i].bytes;
        }
    }
}
