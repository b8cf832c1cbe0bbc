/* The text reports: what a student reads after `run.py test` and `run.py bench`.
 * Short on success; on failure, a diagnosis first, then a few telling cases
 * with the exact elements that are wrong, then how to replay one. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "format_alloc.h"
#include "image.h"
#include "report_text.h"


#define SHOWN_FAILURES 6        /* failing cases detailed in the report */
#define SHOWN_MISMATCHES 3      /* wrong elements listed per case */
#define SHOWN_OUTPUT_LINES 5    /* lines of captured student output per case */
#define SHOWN_DETAIL_LINES 15   /* lines of a sanitizer log per case */
#define SHOWN_SKIP_GROUPS 8     /* runs of skipped cases listed */
#define LINE_CUT 160            /* longer captured lines are cut here */

double bw_peak_gbs(const bw_reply *d)
{
    if (!d || d->mem_clock_khz <= 0 || d->bus_width_bits <= 0)
        return NAN;
    return (double)d->mem_clock_khz * 1e3 * 2.0 * ((double)d->bus_width_bits / 8.0) / 1e9;
}

/* ---- helpers ------------------------------------------------------------- */

/* Prints text word-wrapped to WRAP_WIDTH: first line after `first`, later
 * lines after `cont`. A '\n' in text forces a break. */
static void wrap(FILE *f, const char *first, const char *cont, const char *text)
{
    fputs(first, f);
    size_t col = strlen(first);
    size_t indent = strlen(cont);
    int line_has_word = 0;
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            fputc('\n', f);
            fputs(cont, f);
            col = indent;
            line_has_word = 0;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t len = strcspn(p, " \n");
        if (line_has_word && col + 1 + len > WRAP_WIDTH) {
            fputc('\n', f);
            fputs(cont, f);
            col = indent;
            line_has_word = 0;
        }
        if (line_has_word) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, len, f);
        col += len;
        line_has_word = 1;
        p += len;
    }
    fputc('\n', f);
}

/* Prints at most max_lines lines of text, each behind prefix and cut at
 * LINE_CUT characters, then how many lines were left out. */
static void print_lines(FILE *f, const char *prefix, const char *text, int max_lines)
{
    const char *p = text;
    int shown = 0;
    /* Trailing newlines would only add empty lines. */
    size_t total = strlen(text);
    while (total > 0 && (text[total - 1] == '\n' || text[total - 1] == '\r'))
        total--;
    const char *stop = text + total;
    while (p < stop && shown < max_lines) {
        const char *nl = memchr(p, '\n', (size_t)(stop - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(stop - p);
        size_t keep = len;
        if (keep > 0 && p[keep - 1] == '\r')
            keep--;
        fputs(prefix, f);
        if (keep > LINE_CUT) {
            fwrite(p, 1, LINE_CUT, f);
            fputs(" [...]", f);
        } else {
            fwrite(p, 1, keep, f);
        }
        fputc('\n', f);
        shown++;
        p += len + (nl ? 1 : 0);
    }
    if (p < stop) {
        int more = 0;
        for (const char *q = p; q < stop; q++)
            if (*q == '\n')
                more++;
        more++;   /* the last line has no newline */
        fprintf(f, "%s[... %d more line%s]\n", prefix, more, more == 1 ? "" : "s");
    }
}

static int is_failure(bw_outcome o)
{
    return o == BW_OUTCOME_FAIL || o == BW_OUTCOME_CRASH || o == BW_OUTCOME_TIMEOUT ||
           o == BW_OUTCOME_CUDA_ERROR;
}

/* Floor division, so byte -1 lies in element -1, not 0. */
static int64_t element_of(int64_t byte, int64_t elem_bytes)
{
    return byte >= 0 ? byte / elem_bytes : -((-byte + elem_bytes - 1) / elem_bytes);
}

static void print_case_id(FILE *f, const bw_exercise *ex, const bw_case *c)
{
    if (ex->shape == BW_SHAPE_MATRIX)
        fprintf(f, "case %d  %" PRId64 "x%" PRId64 " offset=%d", c->index, c->rows, c->cols,
                c->offset_elems);
    else
        fprintf(f, "case %d  n=%" PRId64 " offset=%d", c->index, c->n, c->offset_elems);
    if (ex->uses_alpha)
        fprintf(f, " %s=%.6g (%s)", ex->scalars[0], (double)c->alpha,
                c->alpha_kind ? c->alpha_kind : "-");
    if (c->values != BW_VALUES_RANDOM)
        fprintf(f, " values=%s", bw_value_class_name(c->values));
}

/* The few words after the case's parameters that say what went wrong. */
static void print_verdict(FILE *f, const bw_exercise *ex, const bw_case *c,
                          const bw_case_result *r)
{
    int64_t count = bw_exercise_count_of(ex, ex->output, c->n);
    /* The detail of a crash, hang or CUDA error follows on its own lines. */
    switch (r->outcome) {
    case BW_OUTCOME_CRASH:
        fputs("crashed", f);
        return;
    case BW_OUTCOME_TIMEOUT:
        fputs("timed out", f);
        return;
    case BW_OUTCOME_CUDA_ERROR:
        fputs("CUDA error", f);
        return;
    case BW_OUTCOME_SKIPPED:
        fputs("skipped", f);
        return;
    case BW_OUTCOME_PASS:
        fputs("passed", f);
        return;
    case BW_OUTCOME_FAIL:
        break;
    }
    const bw_compare_result *o = &r->out;
    if (o->mismatches > 0) {
        if (ex->shape == BW_SHAPE_REDUCTION && o->unwritten == 0) {
            fputs("wrong result", f);
        } else if (o->mismatches == o->unwritten) {
            fprintf(f, "%" PRId64 " of %" PRId64 " elements never written", o->mismatches, count);
        } else {
            fprintf(f, "%" PRId64 " of %" PRId64 " elements wrong", o->mismatches, count);
            if (o->unwritten > 0)
                fprintf(f, " (%" PRId64 " never written)", o->unwritten);
            else if (isinf(o->max_ulps))
                fputs(", some NaN where a number belongs (or the reverse)", f);
            else
                fprintf(f, ", worst %.3g ulp", o->max_ulps);
        }
    } else if (r->guard_bad_bytes > 0) {
        fputs("output right, but wrote outside the array", f);
    } else if (r->input_changed > 0) {
        fputs("output right, but changed an input", f);
    } else if (r->nondeterministic) {
        fputs("output differs from run to run", f);
    } else if (r->detail) {
        fputs("the sanitizer reported errors", f);
    } else {
        fputs("failed", f);
    }
}

/* malloc'd printf, for sentences that are then word-wrapped. */
/* Wraps a malloc'd sentence as a detail line of a case, then frees it. */
static void detail_line(FILE *f, char *text)
{
    if (!text)
        return;
    wrap(f, "      ", "        ", text);
    free(text);
}

static void print_guard(FILE *f, const bw_exercise *ex, const bw_case *c, const bw_case_result *r)
{
    int k = r->guard_array >= 0 && r->guard_array < ex->n_arrays ? r->guard_array : 0;
    int64_t eb = bw_type_bytes(ex->arrays[k].type);
    int64_t count = bw_exercise_count_of(ex, k, c->n);
    int64_t e0 = element_of(r->guard_first, eb), e1 = element_of(r->guard_last, eb);
    const char *role = r->guard_array == ex->output ? "the output" : "an input";
    char *where;
    if (e1 < 0)
        where = bw_format_alloc("elements %" PRId64 "..%" PRId64 " (before index 0)", e0, e1);
    else if (e0 >= count)
        where = bw_format_alloc("elements %" PRId64 "..%" PRId64 " (past the end: n=%" PRId64 ")", e0,
                           e1, count);
    else
        where = bw_format_alloc("elements %" PRId64 "..%" PRId64, e0, e1);
    detail_line(f, bw_format_alloc("wrote outside the array: %" PRId64 " guard byte%s changed around "
                              "array %d (%s), %s",
                              r->guard_bad_bytes, r->guard_bad_bytes == 1 ? "" : "s",
                              r->guard_array, role, where ? where : "?"));
    free(where);
}

static int same_detail(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

/* same_as: the index of an earlier shown case that failed the same way
 * (its details are then not repeated), or -1. */
static void print_failure(FILE *f, const bw_exercise *ex, const bw_case *c, const bw_case_result *r,
                          int same_as)
{
    fputs("    ", f);
    print_case_id(f, ex, c);
    fputs("  ", f);
    print_verdict(f, ex, c, r);
    if (r->outcome != BW_OUTCOME_FAIL && same_as >= 0) {
        fprintf(f, " (the same way as case %d)\n", same_as);
        return;
    }
    fputc('\n', f);
    if (r->outcome != BW_OUTCOME_FAIL && r->outcome != BW_OUTCOME_PASS) {
        const char *d = r->detail ? r->detail : "no details";
        if (strchr(d, '\n'))
            print_lines(f, "      ", d, SHOWN_DETAIL_LINES);
        else
            wrap(f, "      ", "        ", d);
    }

    const bw_compare_result *o = &r->out;
    if (r->outcome == BW_OUTCOME_FAIL) {
        int shown = o->n_reported < SHOWN_MISMATCHES ? o->n_reported : SHOWN_MISMATCHES;
        const bw_type t = bw_exercise_out_type(ex);
        if (ex->shape == BW_SHAPE_REDUCTION && r->shape.sum_checked && o->mismatches > 0) {
            char got[BW_VALUE_TEXT];
            bw_format_value(t, r->shape.sum_got, got);
            fprintf(f, "      result %s; the exact sum is %.9g", got, r->shape.sum_exact);
            if (r->shape.sum_bound > 0)
                fprintf(f, ", a float sum lands within %.3g of it", r->shape.sum_bound);
            fputc('\n', f);
            shown = 0;
        }
        for (int i = 0; i < shown; i++) {
            const bw_mismatch *m = &o->reported[i];
            char exp[BW_VALUE_TEXT], got[BW_VALUE_TEXT];
            bw_format_value(t, m->expected, exp);
            bw_format_value(t, m->got, got);
            fprintf(f, "      index %" PRId64 ": expected %s  got %s", m->index, exp, got);
            if (m->got != bw_type_poison(t) && isfinite(m->ulps) && m->ulps > 0)
                fprintf(f, "  (%.3g ulp)", m->ulps);
            fputc('\n', f);
        }
        if (o->mismatches > shown && o->first_bad >= 0)
            fprintf(f, "      ... %" PRId64 " more, all within indices %" PRId64 "..%" PRId64 "\n",
                    o->mismatches - shown, o->first_bad, o->last_bad);
        if (r->guard_bad_bytes > 0)
            print_guard(f, ex, c, r);
        if (r->input_changed > 0)
            detail_line(f, bw_format_alloc("changed input array %d, which must only be read: %" PRId64
                                      " element%s, first at index %" PRId64,
                                      r->input_array, r->input_changed,
                                      r->input_changed == 1 ? "" : "s", r->input_first));
        /* Worth saying only where the output should have changed. */
        if (r->nothing_written && ex->in_place && o->mismatches > 0)
            detail_line(f, bw_format_alloc("the call left the output array exactly as it was"));
        if (r->nondeterministic)
            detail_line(f, bw_format_alloc("a second run on the same inputs gave different output: "
                                      "a race between threads?"));
        /* In a FAIL the detail is what compute-sanitizer found. */
        if (r->detail && same_as >= 0) {
            fprintf(f, "      compute-sanitizer: the same findings as for case %d\n", same_as);
        } else if (r->detail) {
            fputs("      compute-sanitizer:\n", f);
            print_lines(f, "        ", r->detail, SHOWN_DETAIL_LINES);
        }
    }
    if (r->student_output && r->student_output[0]) {
        fputs("      student output:\n", f);
        print_lines(f, "        | ", r->student_output, SHOWN_OUTPUT_LINES);
    }
}

/* Picks up to SHOWN_FAILURES failing cases, preferring variety: first the
 * earliest case of each (group, outcome) pair, then cases with an n not yet
 * shown, then the earliest others. Fills pick[] with indices into the
 * section, ascending; returns the count. */
static int pick_failures(const bw_test_section *s, int *pick)
{
    int n = 0;
    unsigned seen[BW_GROUP_HUGE + 1] = {0};   /* bit o: outcome o seen in group g */
    for (int pass = 0; pass < 3 && n < SHOWN_FAILURES; pass++) {
        for (int i = 0; i < s->count && n < SHOWN_FAILURES; i++) {
            if (!is_failure(s->results[i].outcome))
                continue;
            int taken = 0, same_n = 0;
            for (int k = 0; k < n; k++) {
                taken |= pick[k] == i;
                same_n |= s->cases[pick[k]].n == s->cases[i].n;
            }
            if (taken)
                continue;
            int g = (int)s->cases[i].group;
            unsigned bit = 1u << (unsigned)s->results[i].outcome;
            if (pass == 0) {
                if (g < 0 || g > BW_GROUP_HUGE || (seen[g] & bit))
                    continue;
                seen[g] |= bit;
            } else if (pass == 1 && same_n) {
                continue;
            }
            pick[n++] = i;
        }
    }
    /* Insertion sort: shown in case order. */
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && pick[k - 1] > pick[k]; k--) {
            int t = pick[k];
            pick[k] = pick[k - 1];
            pick[k - 1] = t;
        }
    return n;
}

/* Skipped cases, with runs of consecutive ones for the same reason merged.
 * Cases --fail-fast left out get one line of their own instead. */
static void print_skipped(FILE *f, const bw_exercise *ex, const bw_test_section *s)
{
    if (s->not_run > 0) {
        const char *why = "";
        for (int i = 0; i < s->count && !why[0]; i++)
            if (s->results[i].not_run && s->results[i].detail) {
                why = s->results[i].detail;
                if (strncmp(why, "not run: ", 9) == 0)
                    why += 9;
            }
        char *line = bw_format_alloc("%d case%s not run: %s", s->not_run,
                                     s->not_run == 1 ? "" : "s", why);
        wrap(f, "  stopped early, ", "    ", line ? line : why);
        free(line);
        fprintf(f, "  when these pass, run every case: python3 run.py test %s --all\n", ex->name);
    }
    if (s->skipped - s->not_run <= 0)
        return;
    fprintf(f, "  skipped (%d):\n", s->skipped - s->not_run);
    int groups = 0;
    for (int i = 0; i < s->count;) {
        if (s->results[i].outcome != BW_OUTCOME_SKIPPED || s->results[i].not_run) {
            i++;
            continue;
        }
        int j = i + 1;
        while (j < s->count && s->results[j].outcome == BW_OUTCOME_SKIPPED &&
               same_detail(s->results[j].detail, s->results[i].detail))
            j++;
        if (groups == SHOWN_SKIP_GROUPS) {
            int rest = 0;
            for (int k = i; k < s->count; k++)
                rest += s->results[k].outcome == BW_OUTCOME_SKIPPED && !s->results[k].not_run;
            fprintf(f, "    ... and %d more\n", rest);
            return;
        }
        const char *why = s->results[i].detail ? s->results[i].detail : "no reason given";
        if (j - i == 1) {
            fputs("    ", f);
            print_case_id(f, ex, &s->cases[i]);
            fprintf(f, "  %s\n", why);
        } else {
            fprintf(f, "    cases %d..%d (%d cases)  %s\n", s->cases[i].index,
                    s->cases[j - 1].index, j - i, why);
        }
        groups++;
        i = j;
    }
}

/* CUDA API errors the code got back: they cost nothing, but usually mean a
 * call did not do what the code meant; the first is shown. */
static void print_sanitizer_notes(FILE *f, const bw_exercise *ex, const bw_test_section *s)
{
    int count = 0, first = -1;
    for (int i = 0; i < s->count; i++)
        if (s->results[i].sanitizer_note) {
            count++;
            if (first < 0)
                first = i;
        }
    if (count == 0)
        return;
    fprintf(f, "  note: compute-sanitizer saw a CUDA API call return an error in %d case%s "
               "(it costs nothing by itself: your code got the error back; check that it "
               "meant to). First, in ", count, count == 1 ? "" : "s");
    print_case_id(f, ex, &s->cases[first]);
    fputs(":\n", f);
    print_lines(f, "      ", s->results[first].sanitizer_note, SHOWN_DETAIL_LINES);
}

static void print_context(FILE *f, const bw_test_report *r)
{
    fprintf(f, "(seed %" PRIu64 "%s, %s)", r->seed, r->hidden ? ", hidden cases included" : "",
            r->device ? r->device->device_name : "no device");
}

static void print_title(FILE *f, const bw_test_report *r, const bw_test_section *s)
{
    if (s->sanitizer)
        fprintf(f, "%s under compute-sanitizer %s", r->ex->name, s->sanitizer);
    else
        fputs(r->ex->name, f);
}

static void print_section(FILE *f, const bw_test_report *r, const bw_test_section *s, int quiet)
{
    int not_impl = strcmp(s->status, "not_implemented") == 0;
    if (quiet) {
        print_title(f, r, s);
        if (not_impl)
            fprintf(f, ": not implemented yet (%d of %d cases passed)", s->passed, s->count);
        else
            fprintf(f, ": %d of %d cases passed", s->passed, s->count);
        if (s->failed && !not_impl)
            fprintf(f, ", %d failed", s->failed);
        if (s->skipped)
            fprintf(f, ", %d skipped", s->skipped);
        fputs("  ", f);
        print_context(f, r);
        fputc('\n', f);
        return;
    }

    if (not_impl) {
        print_title(f, r, s);
        fputs(": not implemented yet (no case changed the output).\n", f);
        fprintf(f, "  Write your kernel in exercises/%s/%s.cu.\n", r->ex->name, r->ex->name);
        fprintf(f, "  %d of %d cases failed  ", s->failed, s->count);
        print_context(f, r);
        fputc('\n', f);
        if (s->note)
            wrap(f, "  note: ", "    ", s->note);
        print_skipped(f, r->ex, s);
        return;
    }

    print_title(f, r, s);
    if (s->failed == 0 && s->skipped == 0 && s->count == 1)
        fprintf(f, ": the one case passed  ");
    else if (s->failed == 0 && s->skipped == 0)
        fprintf(f, ": all %d cases passed  ", s->count);
    else if (s->skipped == 0)
        fprintf(f, ": %d of %d cases passed  ", s->passed, s->count);
    else if (s->failed == 0)
        fprintf(f, ": %d of %d cases passed, %d skipped  ", s->passed, s->count, s->skipped);
    else
        fprintf(f, ": %d of %d cases passed, %d failed, %d skipped  ", s->passed, s->count,
                s->failed, s->skipped);
    print_context(f, r);
    fputc('\n', f);
    if (s->note)
        wrap(f, "  note: ", "    ", s->note);
    for (int i = 0; i < s->n_diags; i++)
        wrap(f, "  diagnosis: ", "    ", s->diags[i].text ? s->diags[i].text : s->diags[i].name);
    print_sanitizer_notes(f, r->ex, s);

    if (s->failed > 0) {
        int pick[SHOWN_FAILURES];
        int n = pick_failures(s, pick);
        if (n < s->failed)
            fprintf(f, "  failing cases (%d of %d shown):\n", n, s->failed);
        else
            fprintf(f, "  failing case%s:\n", n == 1 ? "" : "s");
        for (int k = 0; k < n; k++) {
            const bw_case_result *res = &s->results[pick[k]];
            int same_as = -1;
            for (int j = 0; j < k && same_as < 0; j++)
                if (s->results[pick[j]].outcome == res->outcome && res->detail &&
                    same_detail(s->results[pick[j]].detail, res->detail))
                    same_as = s->cases[pick[j]].index;
            print_failure(f, r->ex, &s->cases[pick[k]], res, same_as);
        }
    }
    print_skipped(f, r->ex, s);

    if (s->failed > 0) {
        /* Replay the first failing case: the smallest is the easiest to debug. */
        int first = -1;
        for (int i = 0; i < s->count && first < 0; i++)
            if (is_failure(s->results[i].outcome))
                first = i;
        fprintf(f, "  replay one case: python3 run.py test %s --seed %" PRIu64 " --case %d%s",
                r->ex->name, r->seed, s->cases[first].index, r->hidden ? " --hidden" : "");
        if (s->sanitizer)
            fprintf(f, " --sanitize %s", s->sanitizer);
        fputc('\n', f);
    }
}

void bw_report_test_text(FILE *f, const bw_test_report *r, int quiet)
{
    if (strcmp(r->status, "error") == 0) {
        fprintf(f, "%s: could not run: %s\n", r->ex->name, r->error ? r->error : "unknown error");
        return;
    }
    for (int i = 0; i < r->n_sections; i++) {
        if (i > 0 && !quiet)
            fputc('\n', f);
        print_section(f, r, &r->sections[i], quiet);
    }
    fflush(f);
}

/* ---- bench --------------------------------------------------------------- */

void bw_report_bench_header(FILE *f, const bw_bench_report *r)
{
    fprintf(f, "%s benchmark", r->ex->name);
    if (r->label)
        fprintf(f, " (%s)", r->label);
    fputc('\n', f);
    const bw_reply *d = r->device;
    if (!d) {
        fflush(f);
        return;
    }
    char drv[BW_VERSION_TEXT], rt[BW_VERSION_TEXT];
    bw_format_cuda_version(d->driver_version, drv);
    bw_format_cuda_version(d->runtime_version, rt);
    fprintf(f, "  device: %s, cc %d.%d, %d SMs, %.0f MB L2\n", d->device_name, d->cc_major,
            d->cc_minor, d->sm_count, (double)d->l2_bytes / 1048576.0);
    if (isfinite(r->peak_gbs))
        fprintf(f, "  memory: %.0f MHz, %d-bit bus: %.1f GB/s datasheet peak\n",
                d->mem_clock_khz / 1000.0, d->bus_width_bits, r->peak_gbs);
    else
        fputs("  memory: clock or bus width unknown: no datasheet peak\n", f);
    fprintf(f, "  driver %s, runtime %s\n", drv, rt);
    fflush(f);
}

static void copy_line(FILE *f, const bw_bench_copy *c, int chosen)
{
    const char *what = c->method && strcmp(c->method, "kernel") == 0 ? "copy kernel" : "cudaMemcpy ";
    if (strcmp(c->status, "ok") == 0) {
        char size[BW_SIZE_TEXT];
        bw_format_bytes((uint64_t)c->bytes, size);
        fprintf(f, "  %s: device to device, %s each way: %.4g ms, %.1f GB/s", what, size,
                c->ms_median, c->gbs);
        if (isfinite(c->pct_peak))
            fprintf(f, " (%.1f%% of peak)", c->pct_peak);
        fputs(chosen ? "  <- the baseline (% copy)\n" : "\n", f);
    } else {
        fprintf(f, "  %s: no figure (%s)%s%s\n", what, c->status, c->detail ? ": " : "",
                c->detail ? c->detail : "");
    }
}

void bw_report_bench_copy(FILE *f, const bw_bench_report *r)
{
    const bw_bench_copy *c = &r->copy;
    if (!c->run)
        return;
    /* Both copies, in a worker with no student code; the faster is the baseline. */
    for (int m = 0; m < 2; m++)
        copy_line(f, &r->copies[m], strcmp(c->status, "ok") == 0 && r->copies[m].method &&
                                        c->method && strcmp(r->copies[m].method, c->method) == 0);
    if (strcmp(c->status, "ok") != 0 && c->detail && !r->copies[0].detail && !r->copies[1].detail)
        fprintf(f, "  copy: no figure (%s): %s\n", c->status, c->detail);
    if (strcmp(c->status, "ok") == 0 && isfinite(c->timer_ms))
        fprintf(f, "  timing: GPU time between two events, less their own %.2f us; every "
                   "call also timed by bwgrade's own clock\n",
                c->timer_ms * 1e3);
    fflush(f);
}

void bw_report_bench_table_head(FILE *f, const bw_bench_report *r)
{
    fprintf(f, "%12s %7s %11s %8s %9s %8s %8s %8s  %s\n",
            r->ex->shape == BW_SHAPE_MATRIX ? "rows x cols" : "n", "offset", "median ms", "spread",
            "GB/s", "% peak", "% copy", "samples", "status");
    fflush(f);
}

static void cell(FILE *f, int width, const char *fmt, double v)
{
    if (isfinite(v))
        fprintf(f, fmt, width, v);
    else
        fprintf(f, "%*s", width, "-");
}

void bw_report_bench_row(FILE *f, const bw_bench_row *w)
{
    if (w->rows > 0) {
        char shape[48];
        snprintf(shape, sizeof shape, "%" PRId64 "x%" PRId64, w->rows, w->cols);
        fprintf(f, "%12s %7d ", shape, w->offset);
    } else {
        fprintf(f, "%12" PRId64 " %7d ", w->n, w->offset);
    }
    if (w->timed) {
        cell(f, 11, "%*.4g", w->ms_median);
        /* Interquartile spread around the median, as +- percent. */
        double spread = w->ms_median > 0 ? 50.0 * (w->ms_q3 - w->ms_q1) / w->ms_median : NAN;
        /* Bounded: spread is clamped before formatting. */
        char text[24];
        if (!isfinite(spread))
            snprintf(text, sizeof text, "-");
        else if (spread >= 1000.0)
            snprintf(text, sizeof text, ">1000%%");
        else
            snprintf(text, sizeof text, "+-%.1f%%", spread);
        fprintf(f, " %8s", text);
        fputs(" ", f);
    } else {
        fprintf(f, "%11s %8s ", "-", "-");
    }
    cell(f, 9, "%*.1f", w->gbs);
    fputc(' ', f);
    cell(f, 8, "%*.1f", w->pct_peak);
    fputc(' ', f);
    cell(f, 8, "%*.1f", w->pct_copy);
    if (w->timed)
        fprintf(f, " %8d", w->samples);
    else
        fprintf(f, " %8s", "-");
    fprintf(f, "  %s\n", w->status);
    if (w->detail)
        wrap(f, "      ", "      ", w->detail);
    fflush(f);
}

void bw_report_bench_footer(FILE *f, const bw_bench_report *r)
{
    int ok = 0, skipped = 0;
    for (int i = 0; i < r->n_rows; i++) {
        ok += strcmp(r->rows[i].status, "ok") == 0;
        skipped += strcmp(r->rows[i].status, "skipped") == 0;
    }
    int bad = r->n_rows - ok - skipped;
    if (bad == 0)
        fprintf(f, "  %d of %d sizes measured%s\n", ok, r->n_rows,
                skipped ? " (the rest skipped: the reason is under each)" : "");
    else
        fprintf(f, "  %d of %d sizes without a figure: see their status above\n", bad, r->n_rows);
    fflush(f);
}
