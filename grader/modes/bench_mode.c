/* bwgrade bench: only correct code gets speed figures, and only figures the
 * hardware could have produced are reported. This file runs the bench: the
 * correctness gate, the copies timed in the baseline worker, and the rows in
 * order (each row's steps are in bench_rows.c). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_mode.h"
#include "report_json.h"
#include "report_text.h"
#include "case_run.h"
#include "beside_self.h"
#include "bench_witness.h"
#include "runner.h"
#include "trusted_device.h"
#include "bench_rows.h"

#define BENCH_CALL_LIMIT_S 60.0          /* upload, sampling (capped at 2 s), download */
#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB ((uint64_t)1 << 20)

void apply_sampling(bw_request *req, const sampling *s)
{
    req->warmup = s->warmup;
    req->min_samples = s->min_samples;
    req->max_samples = s->max_samples;
    req->target_noise = s->target_noise;
    req->time_cap_s = s->time_cap_s;
    req->host_batch = s->host_batch;
    req->flush_l2 = s->flush_l2;
}

const char *outcome_status(bw_outcome o)
{
    switch (o) {
    case BW_OUTCOME_CRASH: return "crash";
    case BW_OUTCOME_TIMEOUT: return "timeout";
    case BW_OUTCOME_CUDA_ERROR: return "cuda_error";
    case BW_OUTCOME_SKIPPED: return "skipped";
    case BW_OUTCOME_FAIL: return "wrong";
    case BW_OUTCOME_PASS: break;
    }
    return "ok";
}

/* Correctness first: a few public cases, every offset, odd sizes and two
 * medium ones. Returns 0 when all pass, else a malloc'd description of the
 * first failure in *why. */
static int gate(bw_runner *run, const bw_bench_opts *o, char **why)
{
    static const int64_t gate_n[] = {1, 7, 8, 9, 1023, 1025};
    *why = NULL;
    bw_case_list all = {0};
    if (bw_cases_generate(o->ex, o->seed, 0, &all) != 0) {
        *why = bw_format_alloc("out of memory generating the cases");
        return -1;
    }
    int first_medium = -1, last_medium = -1, failed = 0;
    for (int i = 0; i < all.count; i++)
        if (all.items[i].group == BW_GROUP_MEDIUM) {
            if (first_medium < 0)
                first_medium = i;
            last_medium = i;
        }
    for (int i = 0; i < all.count && !failed; i++) {
        const bw_case *c = &all.items[i];
        int pick = i == first_medium || i == last_medium;
        if (c->group == BW_GROUP_SMALL)
            for (size_t k = 0; k < sizeof gate_n / sizeof gate_n[0]; k++)
                pick |= c->n == gate_n[k];
        if (!pick)
            continue;
        bw_case_result r;
        bw_test_run_case(run, c, NULL, 0, &r);
        if (r.outcome != BW_OUTCOME_PASS && r.outcome != BW_OUTCOME_SKIPPED) {
            failed = 1;
            if (r.outcome == BW_OUTCOME_FAIL)
                *why = bw_format_alloc("case %d (n=%" PRId64 ", offset %d) gives wrong output",
                                       c->index, c->n, c->offset_elems);
            else
                *why = bw_format_alloc("case %d (n=%" PRId64 ", offset %d): %s: %s", c->index,
                                       c->n, c->offset_elems, outcome_status(r.outcome),
                                       r.detail ? r.detail : "no details");
        }
        bw_case_result_free(&r);
    }
    bw_cases_free(&all);
    return failed ? -1 : 0;
}

/* A BENCH or COPY_BENCH with the grader's clock on every sample; *seen
 * (when not NULL) gets the medians of what it saw. */
bw_outcome witnessed_bench(bw_runner *run, const bw_request *req, bw_witness_summary *seen,
                           bw_reply *r, char **detail)
{
    char *output = NULL;
    bw_witness wit;
    bw_witness_init(&wit);
    bw_outcome o = bw_runner_bench(run, req, BENCH_CALL_LIMIT_S, &wit, r, detail, &output);
    free(output);
    if (seen)
        *seen = bw_witness_summarize(&wit);
    bw_witness_free(&wit);
    return o;
}

/* One copy, timed in the baseline worker: cudaMemcpy or the kit's kernel. */
static void run_copy(bw_runner *run, const sampling *s, int method, int profile_calls,
                     bw_bench_report *rep)
{
    bw_bench_copy *c = &rep->copies[method];
    const bw_reply *dev = bw_runner_device(run);
    /* Source and destination both live on the device. */
    uint64_t need = 2 * (uint64_t)c->bytes;
    if (dev->mem_free && need + need / 20 + 256 * MIB > dev->mem_free) {
        c->status = "skipped";
        c->detail = bw_format_alloc("needs %.1f GiB device memory, %.1f GiB free",
                                    (double)need / GIB, (double)dev->mem_free / GIB);
        return;
    }
    bw_request req;
    memset(&req, 0, sizeof req);
    req.magic = BW_PROTO_MAGIC;
    req.kind = BW_REQ_COPY_BENCH;
    req.copy_bytes = (uint64_t)c->bytes;
    req.copy_method = method;
    req.profile_calls = profile_calls;
    apply_sampling(&req, s);
    bw_reply r;
    char *detail = NULL;
    bw_outcome o = witnessed_bench(run, &req, NULL, &r, &detail);
    if (o != BW_OUTCOME_PASS) {
        c->status = outcome_status(o);
        c->detail = detail;
        return;
    }
    free(detail);
    c->status = "ok";
    c->samples = r.samples;
    c->ms_median = r.ms_median;
    c->ms_q1 = r.ms_q1;
    c->ms_q3 = r.ms_q3;
    c->lag_ms = r.lag_median_ms;
    c->timer_ms = r.timer_ms;
    c->gbs = r.ms_median > 0 ? 2.0 * (double)c->bytes / (r.ms_median * 1e-3) / 1e9 : NAN;
    c->pct_peak = 100.0 * c->gbs / rep->peak_gbs;   /* NAN when the peak is unknown */
    if (!isfinite(c->gbs)) {
        c->status = "impossible";
        c->detail = bw_format_alloc("the copy timed at %g ms", r.ms_median);
    }
}

int bw_bench_main(const bw_bench_opts *o)
{
    const bw_exercise *ex = o->ex;
    int n_rows = 0;
    row_spec *specs = make_rows(o, &n_rows);
    bw_bench_row *rows = calloc((size_t)(n_rows ? n_rows : 1), sizeof *rows);
    if (!specs || !rows) {
        fprintf(stderr, "bwgrade: out of memory\n");
        free(specs);
        free(rows);
        return 3;
    }
    for (int i = 0; i < n_rows; i++)
        init_row(&rows[i], ex, specs[i]);

    sampling s = {3, 10, 200, 20, 1, 0.005, 2.0};
    if (o->quick) {
        s.max_samples = 100;
        s.time_cap_s = 0.5;
    }
    if (o->profile_calls > 0) {
        /* Under a profiler the figures mean nothing (ncu's hooks delay every
         * launch: about 45 us per call on the H100), so sample no more than
         * the minimum once the profiled calls are done. */
        s.min_samples = s.max_samples = 1;
        s.host_batch = 0;
    }

    bw_bench_report rep;
    memset(&rep, 0, sizeof rep);
    rep.ex = ex;
    rep.label = o->label ? o->label : "student";
    rep.peak_gbs = NAN;
    rep.rows = rows;
    rep.n_rows = n_rows;
    for (int m = 0; m < 3; m++) {
        bw_bench_copy *c = m < 2 ? &rep.copies[m] : &rep.copy;
        c->run = !o->no_copy;
        c->method = m == BW_COPY_KERNEL ? "kernel" : "memcpy";
        c->status = "skipped";
        c->ms_median = c->gbs = c->pct_peak = c->lag_ms = c->timer_ms = NAN;
        c->ms_q1 = c->ms_q3 = NAN;
    }

    /* With the JSON on stdout, the text goes to stderr. */
    FILE *out = o->json_path && strcmp(o->json_path, "-") == 0 ? stderr : stdout;
    char *error = NULL;
    int said_no_device = 0, code = 0;   /* the student's worker's word: proves nothing */
    /* The copies and the grader's clock need a worker with no student code;
     * a profiled run without copies needs none, and starts none: under ncu,
     * a second CUDA process made reduce_sum's kernel at 2^26 + 5 write 2.5 MB
     * to DRAM and take about 4 % longer (H200; docs/BENCHMARKS.md). */
    const int with_base = o->profile_calls == 0 || !o->no_copy;
    char *base_path = o->baseline_worker ? NULL : bw_path_beside_self("bw_worker_baseline");
    const char *bp = o->baseline_worker ? o->baseline_worker : base_path;
    /* Which rows and copies fit: the free memory before any student code
     * ran (trusted_device.h). */
    bw_reply trusted;
    char *trust_why = NULL;
    bw_trust trust = with_base && bp ? bw_trust_or_warn(ex, bp, &trusted, &trust_why)
                                     : BW_TRUST_UNKNOWN;
    int have_trusted = trust == BW_TRUST_OK;
    if (have_trusted)
        (void)bw_keep_to_trusted_gpu(ex, bp, &trusted);
    bw_runner *run = bw_runner_open(ex, o->worker_path, NULL, &error, &said_no_device);
    if (!run && trust == BW_TRUST_OK && !bw_recheck_baseline(ex, bp, NULL, &error))
        trust = BW_TRUST_UNKNOWN;   /* the GPU was taken meanwhile: nobody's fault */
    int students_fault = 0;
    if (!run && trust != BW_TRUST_UNKNOWN) {
        /* Whose fault: the baseline worker's word (trusted_device.h). */
        students_fault = trust == BW_TRUST_OK;
        char *e = trust == BW_TRUST_NO_DEVICE
                      ? bw_format_alloc("%s", trust_why ? trust_why : "no CUDA device")
                      : bw_unstarted_text(NULL, error);
        if (e) {
            free(error);
            error = e;
        }
        rep.no_device = trust == BW_TRUST_NO_DEVICE;
    }
    free(trust_why);
    bw_runner *base = NULL;
    if (run && with_base) {
        char *bwhy = NULL;
        base = bp ? bw_runner_open_beside(run, bp, &bwhy) : NULL;
        if (!base) {
            error = bw_format_alloc("the baseline worker %s would not start: %s (build the kit's "
                                    "bw_worker_baseline target, or pass --baseline-worker)",
                                    bp ? bp : "bw_worker_baseline", bwhy ? bwhy : "not found");
            free(bwhy);
            bw_runner_close(run);
            run = NULL;
        }
    }
    bw_reply device;
    if (!run) {
        rep.error = error ? error : "the worker would not start";
        fprintf(stderr, "bwgrade: %s: %s\n", ex->name, rep.error);
        rep.copy.run = 0;
        if (students_fault) {
            /* As test does: every row fails, with what the student reads
             * (exit 1); exit 3 would say that nothing could run, and run.py
             * grade would ask the instructor to look at a fault that is the
             * code's. */
            for (int i = 0; i < n_rows; i++) {
                rows[i].status = "crash";
                rows[i].detail = bw_format_alloc("%s", rep.error);
            }
            rep.status = "fail";
            code = 1;
        } else {
            rep.status = "error";
            rep.n_rows = 0;   /* nothing was measured: no rows, no copy */
            code = 3;
        }
        goto report;
    }
    if (have_trusted) {
        bw_runner_trust_device(run, &trusted);
        if (base)
            bw_runner_trust_device(base, &trusted);
    }
    device = *bw_runner_device(run);
    rep.device = &device;
    rep.peak_gbs = bw_peak_gbs(&device);
    bw_report_bench_header(out, &rep);

    /* The first row that fits runs in the worker just opened, before the
     * gate and the copy: each row needs a new worker, and starting one costs
     * 0.2-0.6 s of CUDA set-up (docs/SPEED.md). Its figures are judged once
     * the copy is known, and dropped if the gate then fails. */
    int first = -1;
    bw_reply first_reply;
    int first_measured = 0;
    int64_t largest = 0;
    mark_rows_that_fit(run, ex, &device, rows, n_rows, &largest);
    for (int i = 0; i < n_rows && first < 0; i++)
        if (!rows[i].status)
            first = i;
    if (first >= 0)
        first_measured = measure_row(run, base, o, &s, &rows[first], 0, &first_reply) == 0;

    char *why = NULL;
    int gate_rc = gate(run, o, &why);
    if (bw_runner_halted(run))
        goto halted;
    if (gate_rc != 0) {
        fprintf(out, "  wrong answers: no speed figures (run `python3 run.py test %s`)\n",
                ex->name);
        if (why)
            fprintf(out, "  first failure: %s\n", why);
        free(why);
        for (int i = 0; i < n_rows; i++) {   /* the first row's figures included */
            free(rows[i].detail);
            init_row(&rows[i], ex, (row_spec){{rows[i].rows, rows[i].rows > 0 ? rows[i].cols : rows[i].n},
                                               rows[i].offset});
            rows[i].status = "wrong";
        }
        rep.status = "wrong";
        code = 1;
        goto report;
    }

    if (rep.copy.run) {
        /* Half the largest row's traffic each way: the same total bytes moved. */
        rep.copy.bytes = (largest / 2) & ~(int64_t)1;
        if (rep.copy.bytes > 0) {
            /* The baseline is the faster copy this GPU runs: cudaMemcpy or the
             * kit's own kernel, each timed the same way. */
            int best = -1;
            bw_runner_stop_worker(run);   /* see measure_row: no student code while they run */
            for (int m = 0; m < 2; m++) {
                rep.copies[m].bytes = rep.copy.bytes;
                run_copy(base, &s, m, o->profile_calls, &rep);
                if (strcmp(rep.copies[m].status, "ok") == 0 &&
                    (best < 0 || rep.copies[m].gbs > rep.copies[best].gbs))
                    best = m;
            }
            rep.copy = rep.copies[best >= 0 ? best : BW_COPY_MEMCPY];
            rep.copy.detail = rep.copy.detail ? bw_format_alloc("%s", rep.copy.detail) : NULL;
        } else {
            rep.copy.detail = bw_format_alloc("no size fits in memory");
        }
        bw_report_bench_copy(out, &rep);
    }
    bw_report_bench_table_head(out, &rep);
    int bad = 0;
    if (first_measured) {
        judge_row(&first_reply, &s, &rep, &rows[first]);
        retry_if_clock_refused(run, base, o, &s, &rep, &rows[first]);
    }
    for (int i = 0; i < n_rows; i++) {
        bw_reply r;
        if (!rows[i].status && measure_row(run, base, o, &s, &rows[i], 1, &r) == 0) {
            judge_row(&r, &s, &rep, &rows[i]);
            retry_if_clock_refused(run, base, o, &s, &rep, &rows[i]);
        }
        bw_report_bench_row(out, &rows[i]);
        bad |= strcmp(rows[i].status, "ok") != 0 && strcmp(rows[i].status, "skipped") != 0;
    }
    bw_report_bench_footer(out, &rep);
    rep.status = bad ? "fail" : "ok";
    code = bad ? 1 : 0;
    if (!bw_runner_halted(run))
        goto report;
halted:   /* no figures from a run cut short by bwgrade's own trouble */
    free(why);
    why = NULL;
    free(error);
    error = bw_format_alloc("%s", bw_runner_halted(run));
    fprintf(stderr, "bwgrade: %s: %s\n", ex->name, error ? error : "halted");
    rep.status = "error";
    rep.error = error ? error : "halted";
    code = 3;

report:;
    bw_containment contained = bw_contain_report(); /* what the workers actually had */
    rep.containment = &contained;
    if (o->json_path && bw_report_bench_json(o->json_path, &rep) != 0) {
        fprintf(stderr, "bwgrade: could not write %s: %s\n", o->json_path, strerror(errno));
        code = 3;
    }
    bw_runner_close(base);   /* before run: it borrows run's shared memory */
    bw_runner_close(run);
    free(base_path);
    for (int i = 0; i < n_rows; i++) {
        free(rows[i].detail);
        free(rows[i].clock_first_refusal);
    }
    free(rows);
    free(specs);
    free(rep.copy.detail);
    for (int m = 0; m < 2; m++)
        free(rep.copies[m].detail);
    free(error);
    return code;
}
