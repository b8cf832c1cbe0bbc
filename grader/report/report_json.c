/* The --json reports; the format is docs/ARCHITECTURE.md's, see report_json.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "format_value.h"
#include "json_writer.h"
#include "report_json.h"

/* Top level and its direct containers one member per line; deeper (each
 * case, each row) on one line, so the file stays readable and greppable. */
#define PRETTY_DEPTH 2

/* Derived figures rounded to a sensible resolution; the raw timings keep
 * full precision. */
static double round_to(double v, double per_unit)
{
    /* Dividing by an exact integer gives the double nearest the decimal. */
    return isfinite(v) ? round(v * per_unit) / per_unit : v;
}

static void write_device(bw_json *w, const bw_reply *d)
{
    bw_json_key(w, "device");
    if (!d) {
        bw_json_null(w);
        return;
    }
    char cc[32];
    snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
    bw_json_begin_object(w);
    bw_json_kstring(w, "name", d->device_name);
    bw_json_kstring(w, "cc", cc);
    bw_json_kint(w, "sm_count", d->sm_count);
    bw_json_kint(w, "l2_bytes", d->l2_bytes);
    bw_json_kint(w, "mem_clock_khz", d->mem_clock_khz);
    bw_json_kint(w, "bus_width_bits", d->bus_width_bits);
    bw_json_knumber_or_null(w, "peak_gbs", round_to(bw_peak_gbs(d), 100));
    bw_json_kint(w, "driver_version", d->driver_version);
    bw_json_kint(w, "runtime_version", d->runtime_version);
    bw_json_end_object(w);
}

/* What confined the workers (containment.h); nothing when not said. */
static void write_containment(bw_json *w, const bw_containment *c)
{
    if (c == NULL)
        return;
    bw_json_key(w, "containment");
    bw_json_begin_object(w);
    bw_json_kstring(w, "user", c->user);
    bw_json_kbool(w, "pid_namespace", c->pid_namespace);
    bw_json_kbool(w, "subreaper", c->subreaper);
    bw_json_kstring(w, "sandbox", c->sandbox);
    if (c->gpu_minor >= 0) {   /* only then: reports of every other run stay as they were */
        char node[32];
        snprintf(node, sizeof node, "/dev/nvidia%d", c->gpu_minor);
        bw_json_kstring(w, "gpu_node", node);
    }
    bw_json_end_object(w);
}

static void write_hex(bw_json *w, const char *key, bw_type t, uint32_t v)
{
    char hex[16];
    bw_format_bits(t, v, hex);
    bw_json_kstring(w, key, hex);
}

/* What a reduction's or a matrix's check adds to a case (nothing for an
 * elementwise exercise, whose JSON stays as it always was). */
static void write_shape(bw_json *w, const bw_exercise *ex, const bw_case *c,
                        const bw_case_result *r)
{
    if (ex->shape == BW_SHAPE_MATRIX) {
        bw_json_kint(w, "rows", c->rows);
        bw_json_kint(w, "cols", c->cols);
        bw_json_kint(w, "copy_like", r->shape.copy_like);
        bw_json_kint(w, "swap_like", r->shape.swap_like);
    } else if (ex->shape == BW_SHAPE_REDUCTION && r->shape.sum_checked) {
        bw_json_kdouble(w, "sum_exact", r->shape.sum_exact);
        bw_json_kdouble(w, "sum_bound", r->shape.sum_bound);
        write_hex(w, "sum_got", bw_exercise_out_type(ex), r->shape.sum_got);
        bw_json_kdouble(w, "sum_got_value", bw_elem_to_double(bw_exercise_out_type(ex), r->shape.sum_got));
    }
}

static void write_case(bw_json *w, const bw_exercise *ex, const bw_case *c,
                       const bw_case_result *r, const char *sanitizer)
{
    bw_json_begin_object(w);
    bw_json_kint(w, "index", c->index);
    bw_json_kstring(w, "group", bw_case_group_name(c->group));
    bw_json_kint(w, "n", c->n);
    bw_json_kint(w, "offset", c->offset_elems);
    bw_json_kfloat(w, "alpha", ex->uses_alpha ? c->alpha : 0.0f);
    bw_json_kstring(w, "alpha_kind", c->alpha_kind ? c->alpha_kind : "-");
    bw_json_kstring(w, "values", bw_value_class_name(c->values));
    bw_json_kstring(w, "outcome", bw_outcome_name(r->outcome));
    if (r->not_run)
        bw_json_kbool(w, "not_run", 1);
    bw_json_kdouble(w, "max_ulps", r->out.max_ulps);
    bw_json_kint(w, "mismatches", r->out.mismatches);
    bw_json_kint(w, "unwritten", r->out.unwritten);
    bw_json_key(w, "first_mismatches");
    bw_json_begin_array(w);
    const bw_type t = bw_exercise_out_type(ex);
    for (int i = 0; i < r->out.n_reported && i < BW_REPORTED_MISMATCHES; i++) {
        const bw_mismatch *m = &r->out.reported[i];
        bw_json_begin_object(w);
        bw_json_kint(w, "index", m->index);
        write_hex(w, "expected", t, m->expected);
        write_hex(w, "got", t, m->got);
        bw_json_kdouble(w, "expected_value", bw_elem_to_double(t, m->expected));
        bw_json_kdouble(w, "got_value", bw_elem_to_double(t, m->got));
        bw_json_kdouble(w, "ulps", m->ulps);
        bw_json_end_object(w);
    }
    bw_json_end_array(w);
    bw_json_kint(w, "guard_bad_bytes", r->guard_bad_bytes);
    bw_json_kint(w, "guard_array", r->guard_array);
    bw_json_kint(w, "guard_first", r->guard_first);
    bw_json_kint(w, "input_changed", r->input_changed);
    bw_json_kint(w, "input_array", r->input_array);
    bw_json_kint(w, "input_first", r->input_first);
    bw_json_kbool(w, "nothing_written", r->nothing_written);
    bw_json_kbool(w, "nondeterministic", r->nondeterministic);
    write_shape(w, ex, c, r);
    bw_json_kstring(w, "detail", r->detail);
    bw_json_kstring(w, "student_output", r->student_output);
    bw_json_kdouble(w, "seconds", round_to(r->seconds, 1e6));
    if (sanitizer) {
        bw_json_kstring(w, "sanitizer", sanitizer);
        /* what the sanitizer saw that costs nothing (a CUDA API error) */
        bw_json_kstring(w, "sanitizer_note", r->sanitizer_note);
    }
    bw_json_end_object(w);
}

/* A report's opening: the object and the three keys every report starts with. */
static void begin_report(bw_json *w, FILE *f, const char *mode, const char *exercise)
{
    bw_json_init(w, f, PRETTY_DEPTH);
    bw_json_begin_object(w);
    bw_json_kstring(w, "tool", "bwgrade");
    bw_json_kstring(w, "mode", mode);
    bw_json_kstring(w, "exercise", exercise);
}

int bw_report_test_json_to(FILE *f, const bw_test_report *r)
{
    bw_json w;
    begin_report(&w, f, "test", r->ex->name);
    bw_json_kuint(&w, "seed", r->seed);
    bw_json_kbool(&w, "hidden", r->hidden);
    int sanitized = r->n_sections > 0 && r->sections[0].sanitizer;
    if (sanitized) {
        bw_json_key(&w, "sanitize");
        bw_json_begin_array(&w);
        for (int i = 0; i < r->n_sections; i++)
            bw_json_string(&w, r->sections[i].sanitizer);
        bw_json_end_array(&w);
    }
    write_device(&w, r->device);
    write_containment(&w, r->containment);
    bw_json_kstring(&w, "status", r->status);
    if (r->error)
        bw_json_kstring(&w, "error", r->error);
    /* Only bwgrade's own worker can say so (trusted_device.h); run.py grade
     * stops the batch on it, and on nothing a student's worker prints. */
    bw_json_kbool(&w, "no_device", r->no_device);
    bw_json_kint(&w, "passed", r->passed);
    bw_json_kint(&w, "failed", r->failed);
    bw_json_kint(&w, "skipped", r->skipped);
    bw_json_kint(&w, "not_run", r->not_run);
    bw_json_kint(&w, "total", r->total);

    bw_json_key(&w, "diagnoses");
    bw_json_begin_array(&w);
    for (int s = 0; s < r->n_sections; s++) {
        const bw_test_section *sec = &r->sections[s];
        for (int i = 0; i < sec->n_diags; i++) {
            bw_json_begin_object(&w);
            bw_json_kstring(&w, "code", sec->diags[i].name);
            bw_json_kstring(&w, "text", sec->diags[i].text);
            if (sec->sanitizer)
                bw_json_kstring(&w, "sanitizer", sec->sanitizer);
            bw_json_end_object(&w);
        }
    }
    bw_json_end_array(&w);

    bw_json_key(&w, "cases");
    bw_json_begin_array(&w);
    for (int s = 0; s < r->n_sections; s++) {
        const bw_test_section *sec = &r->sections[s];
        for (int i = 0; i < sec->count; i++)
            write_case(&w, r->ex, &sec->cases[i], &sec->results[i], sec->sanitizer);
    }
    bw_json_end_array(&w);
    bw_json_end_object(&w);
    return bw_json_finish(&w);
}

static void write_row(bw_json *w, const bw_bench_row *row)
{
    bw_json_begin_object(w);
    bw_json_kint(w, "n", row->n);
    if (row->rows > 0) {
        bw_json_kint(w, "rows", row->rows);
        bw_json_kint(w, "cols", row->cols);
    }
    bw_json_kint(w, "offset", row->offset);
    bw_json_kint(w, "bytes", row->bytes);
    bw_json_kint(w, "samples", row->timed ? row->samples : 0);
    double none = NAN;
    bw_json_knumber_or_null(w, "ms_median", row->timed ? row->ms_median : none);
    bw_json_knumber_or_null(w, "ms_q1", row->timed ? row->ms_q1 : none);
    bw_json_knumber_or_null(w, "ms_q3", row->timed ? row->ms_q3 : none);
    bw_json_knumber_or_null(w, "ms_min", row->timed ? row->ms_min : none);
    bw_json_knumber_or_null(w, "ms_max", row->timed ? row->ms_max : none);
    bw_json_knumber_or_null(w, "noise", row->timed ? row->noise : none);
    bw_json_knumber_or_null(w, "timer_ms", row->timed ? row->timer_ms : none);
    bw_json_knumber_or_null(w, "gbs", round_to(row->gbs, 100));
    bw_json_knumber_or_null(w, "pct_peak", round_to(row->pct_peak, 100));
    bw_json_knumber_or_null(w, "pct_copy", round_to(row->pct_copy, 100));
    bw_json_key(w, "host_check");
    if (row->timed) {
        bw_json_begin_object(w);
        bw_json_knumber_or_null(w, "event_ms", row->event_ms);
        bw_json_knumber_or_null(w, "host_ms", row->host_ms);
        bw_json_knumber_or_null(w, "ratio", round_to(row->ratio, 1e4));
        bw_json_knumber_or_null(w, "lag_ms", row->lag_ms);
        bw_json_knumber_or_null(w, "lag_excess_ms", row->lag_excess_ms);
        bw_json_end_object(w);
    } else {
        bw_json_null(w);
    }
    bw_json_key(w, "recompute_check");
    if (row->timed && row->calls_checked > 0) {
        bw_json_begin_object(w);
        bw_json_kint(w, "calls_checked", row->calls_checked);
        bw_json_kint(w, "calls_differing", row->calls_bad);
        bw_json_kint(w, "first_differing_call", row->first_bad_call);
        bw_json_kint(w, "rotation_of_first", row->first_bad_rotation);
        if (row->by_value) {
            bw_json_kbool(w, "by_value", 1);
            bw_json_knumber_or_null(w, "first_call_value", row->want_value);
            bw_json_knumber_or_null(w, "first_differing_value",
                                    row->calls_bad > 0 ? row->first_bad_value : NAN);
        }
        bw_json_end_object(w);
    } else {
        bw_json_null(w);
    }
    bw_json_knumber_or_null(w, "pct_memcpy", round_to(row->pct_memcpy, 100));
    bw_json_key(w, "clock_check");
    if (row->clocked) {
        bw_json_begin_object(w);
        bw_json_kint(w, "samples", row->clock_samples);
        bw_json_kint(w, "baseline_samples", row->base_clock_samples);
        bw_json_knumber_or_null(w, "span_ms", row->span_ms);
        bw_json_knumber_or_null(w, "baseline_span_ms", row->base_span_ms);
        bw_json_knumber_or_null(w, "prep_ms", row->prep_ms);
        bw_json_knumber_or_null(w, "baseline_prep_ms", row->base_prep_ms);
        bw_json_knumber_or_null(w, "clock_ms", row->clock_ms);
        bw_json_knumber_or_null(w, "charged_ms", row->charged_ms);
        bw_json_knumber_or_null(w, "least_accepted_ms", row->allowed_ms);
        bw_json_kbool(w, "retried", row->clock_retried);
        bw_json_kstring(w, "first_refusal", row->clock_first_refusal);
        bw_json_end_object(w);
    } else {
        bw_json_null(w);
    }
    if (row->worker_pid > 0) {
        bw_json_kint(w, "worker_pid", row->worker_pid);
    } else {
        bw_json_key(w, "worker_pid");
        bw_json_null(w);
    }
    bw_json_kstring(w, "status", row->status);
    bw_json_kstring(w, "rule", row->rule);
    bw_json_kstring(w, "detail", row->detail);
    bw_json_end_object(w);
}

/* A copy's figures; null when copies were not run. */
static void write_copy(bw_json *w, const bw_bench_copy *c, int or_null)
{
    if (!c->run && or_null) {
        bw_json_null(w);
        return;
    }
    bw_json_begin_object(w);
    bw_json_kstring(w, "method", c->method);
    bw_json_kint(w, "bytes", c->bytes);
    bw_json_knumber_or_null(w, "ms_median", c->ms_median);
    bw_json_knumber_or_null(w, "ms_q1", c->ms_q1);
    bw_json_knumber_or_null(w, "ms_q3", c->ms_q3);
    bw_json_knumber_or_null(w, "gbs", round_to(c->gbs, 100));
    bw_json_knumber_or_null(w, "pct_peak", round_to(c->pct_peak, 100));
    bw_json_knumber_or_null(w, "lag_ms", c->lag_ms);
    bw_json_knumber_or_null(w, "timer_ms", c->timer_ms);
    bw_json_kint(w, "samples", c->samples);
    bw_json_kstring(w, "status", c->status);
    bw_json_kstring(w, "detail", c->detail);
    bw_json_end_object(w);
}

int bw_report_bench_json_to(FILE *f, const bw_bench_report *r)
{
    bw_json w;
    begin_report(&w, f, "bench", r->ex->name);
    bw_json_kstring(&w, "label", r->label);
    bw_json_kstring(&w, "status", r->status);
    if (r->error)
        bw_json_kstring(&w, "error", r->error);
    /* Only bwgrade's own worker can say so (trusted_device.h); run.py grade
     * stops the batch on it, and on nothing a student's worker prints. */
    bw_json_kbool(&w, "no_device", r->no_device);
    write_device(&w, r->device);
    write_containment(&w, r->containment);

    bw_json_key(&w, "copy");
    write_copy(&w, &r->copy, 1);
    bw_json_key(&w, "copies");
    if (r->copy.run) {
        bw_json_begin_array(&w);
        for (int m = 0; m < 2; m++)
            write_copy(&w, &r->copies[m], 0);
        bw_json_end_array(&w);
    } else {
        bw_json_null(&w);
    }

    bw_json_key(&w, "rows");
    bw_json_begin_array(&w);
    for (int i = 0; i < r->n_rows; i++)
        write_row(&w, &r->rows[i]);
    bw_json_end_array(&w);
    bw_json_end_object(&w);
    return bw_json_finish(&w);
}

typedef int (*writer_fn)(FILE *f, const void *report);

static int write_test(FILE *f, const void *r) { return bw_report_test_json_to(f, r); }
static int write_bench(FILE *f, const void *r) { return bw_report_bench_json_to(f, r); }

static int write_file(const char *path, writer_fn fn, const void *report)
{
    if (strcmp(path, "-") == 0)
        return fn(stdout, report);
    /* The temporary name is sized from the path: no length limit. */
    size_t len = strlen(path) + 32;
    char *tmp = malloc(len);
    if (!tmp)
        return -1;
    snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        int e = errno;
        free(tmp);
        errno = e;
        return -1;
    }
    int rc = fn(f, report);
    int e = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        e = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        if (e == 0)
            e = EIO;   /* misuse inside the writer sets no errno */
    }
    free(tmp);
    errno = e;
    return rc;
}

int bw_report_test_json(const char *path, const bw_test_report *r)
{
    return write_file(path, write_test, r);
}

int bw_report_bench_json(const char *path, const bw_bench_report *r)
{
    return write_file(path, write_bench, r);
}
