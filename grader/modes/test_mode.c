/* bwgrade test: run the cases in a worker, find the pattern in the
 * failures, report. The pieces live apart: the worker process (runner.c),
 * one case start to end (case_run.c), its images and checks (case_data.c).
 * This file picks the cases, orders them, and decides when to stop. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "case_run.h"
#include "diagnose.h"
#include "mono_clock.h"
#include "report_json.h"
#include "report_text.h"
#include "runner.h"
#include "trusted_device.h"
#include "test_mode.h"

/* ---- the test command ---------------------------------------------------- */

int bw_parse_sanitizers(const char *list, const char *tools[BW_MAX_SANITIZERS])
{
    static const char *const known[BW_MAX_SANITIZERS] = {"memcheck", "racecheck", "initcheck"};
    int count = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0)
            return -1;
        if (len == 3 && strncmp(p, "all", 3) == 0) {
            for (int k = 0; k < BW_MAX_SANITIZERS; k++)
                tools[k] = known[k];
            count = BW_MAX_SANITIZERS;
        } else {
            int found = -1;
            for (int k = 0; k < BW_MAX_SANITIZERS; k++)
                if (strlen(known[k]) == len && strncmp(p, known[k], len) == 0)
                    found = k;
            if (found < 0)
                return -1;
            int dup = 0;
            for (int k = 0; k < count; k++)
                dup |= tools[k] == known[found];
            if (!dup)
                tools[count++] = known[found];
        }
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    return count;
}

/* Groups fast enough to run under a sanitizer. */
static int sanitizer_group(bw_case_group g)
{
    return g == BW_GROUP_SMALL || g == BW_GROUP_MEDIUM || g == BW_GROUP_SPECIAL;
}

static int is_failure(bw_outcome o)
{
    return o == BW_OUTCOME_FAIL || o == BW_OUTCOME_CRASH || o == BW_OUTCOME_TIMEOUT ||
           o == BW_OUTCOME_CUDA_ERROR;
}

static int is_broken_run(bw_outcome o)
{
    return o == BW_OUTCOME_CRASH || o == BW_OUTCOME_TIMEOUT || o == BW_OUTCOME_CUDA_ERROR;
}

/* A section's storage; the report's bw_test_section points into it. */
typedef struct {
    bw_case *cases;
    bw_case_result *results;
    int count;
    bw_diagnosis *diags;
    int n_diags;
} section_store;

/* "\r case 12 of 1204" on a terminal, so a long run visibly moves. */
static void progress(int show, const char *tool, int i, int count, double *last)
{
    if (!show)
        return;
    double t = bw_mono_s();
    if (i < count && t - *last < 0.2)
        return;
    *last = t;
    if (i >= count)
        fputs("\r                                                  \r", stderr);
    else
        fprintf(stderr, "\r  %s%scase %d of %d ", tool ? tool : "", tool ? ": " : "", i + 1, count);
    fflush(stderr);
}

/* Cheap groups first, so that a broken kernel shows its pattern (and a
 * fail-fast run stops) before the large cases cost anything: small,
 * special, medium, large, huge; by index within a group. */
static int group_cost_rank(bw_case_group g)
{
    switch (g) {
    case BW_GROUP_SMALL: return 0;
    case BW_GROUP_SPECIAL: return 1;
    case BW_GROUP_MEDIUM: return 2;
    case BW_GROUP_LARGE: return 3;
    case BW_GROUP_HUGE: return 4;
    }
    return 5;
}

static void cost_order(const bw_case *cases, int count, int *order)
{
    int k = 0;
    for (int rank = 0; rank <= 5; rank++)
        for (int i = 0; i < count; i++)
            if (group_cost_rank(cases[i].group) == rank)
                order[k++] = i;
}

/* --fail-fast: after the case at run position pos, stop when the diagnosis
 * is as clear as more cases would make it: at once after a hang (each costs
 * the full time limit), else once a group has run to its end with a
 * failure in it (the group's pattern is complete). Returns the reason the
 * remaining cases are not run (malloc'd), or NULL to go on. */
static char *fail_fast_stop(const bw_case *cases, const int *order, int count, int pos,
                            const bw_case_result *r, unsigned failed_groups)
{
    const bw_case *c = &cases[order[pos]];
    if (pos + 1 >= count)
        return NULL;
    if (r->outcome == BW_OUTCOME_TIMEOUT)
        return bw_format_alloc("not run: case %d hung, and each hang costs the full time limit "
                               "(fail-fast)", c->index);
    const bw_case *next = &cases[order[pos + 1]];
    if (next->group != c->group && ((failed_groups >> c->group) & 1u))
        return bw_format_alloc("not run: the %s cases already failed (fail-fast)",
                               bw_case_group_name(c->group));
    return NULL;
}

static int run_section(bw_runner *run, const bw_test_opts *o, const bw_case_list *all,
                       const char *sanitizer, section_store *st, bw_test_section *sec)
{
    int sec_not_run = 0;
    memset(st, 0, sizeof *st);
    st->cases = malloc(sizeof *st->cases * (size_t)(all->count ? all->count : 1));
    if (!st->cases)
        return -1;
    for (int i = 0; i < all->count; i++) {
        const bw_case *c = &all->items[i];
        int wanted = o->case_index >= 0 ? c->index == o->case_index
                     : o->groups      ? (o->groups >> c->group) & 1u
                     : !sanitizer || sanitizer_group(c->group);
        if (!wanted)
            continue;
        st->cases[st->count++] = *c;
    }
    st->results = calloc((size_t)(st->count ? st->count : 1), sizeof *st->results);
    if (!st->results)
        return -1;

    int *order = malloc(sizeof *order * (size_t)(st->count ? st->count : 1));
    if (!order)
        return -1;
    cost_order(st->cases, st->count, order);

    int show = !o->quiet && isatty(STDERR_FILENO);
    double last_progress = 0;
    int streak = 0, broken = 0, hung_case = -1;
    unsigned failed_groups = 0;
    char *stop = NULL;   /* fail-fast: why the remaining cases are not run */
    for (int pos = 0; pos < st->count; pos++) {
        int i = order[pos];
        const bw_case *c = &st->cases[i];
        bw_case_result *r = &st->results[i];
        progress(show, sanitizer, pos, st->count, &last_progress);
        if (stop) {
            bw_case_result_init(r);
            r->outcome = BW_OUTCOME_SKIPPED;
            r->detail = bw_format_alloc("%s", stop);
            r->not_run = 1;
            sec_not_run++;
            continue;
        }
        if (o->group_fail_fast && ((failed_groups >> c->group) & 1u)) {
            bw_case_result_init(r);
            r->outcome = BW_OUTCOME_SKIPPED;
            r->detail = bw_format_alloc("not run: an earlier %s case failed, which already "
                                        "fails the group (--group-fail-fast)",
                                        bw_case_group_name(c->group));
            continue;
        }
        if (streak >= BW_GIVE_UP_AFTER || broken >= BW_GIVE_UP_TOTAL) {
            bw_case_result_init(r);
            r->outcome = BW_OUTCOME_SKIPPED;
            r->detail = streak >= BW_GIVE_UP_AFTER
                            ? bw_format_alloc("not run: the %d cases before it all crashed or "
                                              "hung; fix that first", BW_GIVE_UP_AFTER)
                            : bw_format_alloc("not run: %d cases already crashed or hung; fix "
                                              "those first", BW_GIVE_UP_TOTAL);
            continue;
        }
        double limit = hung_case >= 0
                           ? bw_case_time_limit_after_hang(o->ex, c->n, sanitizer != NULL)
                           : bw_case_time_limit(o->ex, c->n, sanitizer != NULL);
        if (o->case_limit_s > 0 && limit > o->case_limit_s)
            limit = o->case_limit_s;
        bw_test_run_case(run, c, sanitizer, limit, r);
        r->never_started = r->outcome == BW_OUTCOME_CRASH && bw_runner_unstarted(run);
        r->forged_reply = r->outcome == BW_OUTCOME_CRASH && bw_runner_last_forged(run);
        if (r->outcome == BW_OUTCOME_TIMEOUT && hung_case >= 0 && r->detail) {
            char *more = bw_format_alloc("%s (the limit is a fifth of the usual after case %d "
                                         "hung)", r->detail, hung_case);
            if (more) {
                free(r->detail);
                r->detail = more;
            }
        }
        if (r->outcome == BW_OUTCOME_TIMEOUT && hung_case < 0)
            hung_case = c->index;
        if (is_failure(r->outcome))
            failed_groups |= 1u << c->group;
        if (is_broken_run(r->outcome)) {
            streak++;
            broken++;
        } else if (r->outcome != BW_OUTCOME_SKIPPED) {
            streak = 0;
        }
        if (bw_runner_halted(run) && !stop)
            stop = bw_format_alloc("not run: %s", bw_runner_halted(run));
        if (o->fail_fast && !stop)
            stop = fail_fast_stop(st->cases, order, st->count, pos, r, failed_groups);
    }
    free(order);
    free(stop);
    if (getenv("BWLAB_TIMING")) {   /* for the kit's developers: where a run's time goes */
        for (int g = 0; g < BW_N_GROUPS; g++) {
            int cases = 0;
            double secs = 0;
            for (int i = 0; i < st->count; i++)
                if ((int)st->cases[i].group == g && !st->results[i].not_run) {
                    cases++;
                    secs += st->results[i].seconds;
                }
            if (cases)
                fprintf(stderr, "timing: %s: %d cases, %.2f s\n",
                        bw_case_group_name((bw_case_group)g), cases, secs);
        }
    }
    progress(show, sanitizer, st->count, st->count, &last_progress);

    int nd = bw_diagnose(o->ex, st->cases, st->results, st->count, &st->diags);
    st->n_diags = nd > 0 ? nd : 0;

    memset(sec, 0, sizeof *sec);
    sec->not_run = sec_not_run;
    sec->sanitizer = sanitizer;
    sec->cases = st->cases;
    sec->results = st->results;
    sec->count = st->count;
    sec->diags = st->diags;
    sec->n_diags = st->n_diags;
    int not_impl = 0;
    for (int i = 0; i < st->n_diags; i++)
        not_impl |= st->diags[i].code == BW_DIAG_NOT_IMPLEMENTED;
    /* A function that writes nothing anywhere earns nothing: the few cases it
     * "passes" (haxpy with alpha = 0 expects y unchanged) fail with it. */
    for (int i = 0; not_impl && i < st->count; i++) {
        bw_case_result *r = &st->results[i];
        if (r->outcome == BW_OUTCOME_PASS && r->nothing_written) {
            r->outcome = BW_OUTCOME_FAIL;
            free(r->detail);
            r->detail = bw_format_alloc("not implemented: this case expects the output unchanged, "
                                        "but the function writes nothing in any case");
        }
    }
    for (int i = 0; i < st->count; i++) {
        bw_outcome oc = st->results[i].outcome;
        sec->passed += oc == BW_OUTCOME_PASS;
        sec->failed += is_failure(oc);
        sec->skipped += oc == BW_OUTCOME_SKIPPED;
    }
    sec->status = sec->failed == 0 ? "pass" : not_impl ? "not_implemented" : "fail";
    if (o->case_index < 0 && o->groups)
        sec->note = "only the case groups asked for ran (--groups)";
    else if (sanitizer && o->case_index < 0)
        sec->note = "only the small, medium and special cases run under the sanitizer (the "
                    "large ones would take too long); a plain test run covers those";
    return 0;
}

static void free_section(section_store *st)
{
    for (int i = 0; i < st->count && st->results; i++)
        bw_case_result_free(&st->results[i]);
    free(st->results);
    free(st->cases);
    if (st->diags)
        bw_diagnoses_free(st->diags, st->n_diags);
}

/* The student's worker would not start (*error says why). Where the worker
 * without student code starts (under the same sanitizer), the student's code
 * is to blame: a runner whose every case crashes with that reason. Else NULL,
 * and *error says what stopped the run (trust_why, the baseline's own word,
 * when it found no device: then *no_device is set). */
static bw_runner *blame_student(const bw_test_opts *o, const char *tool, bw_trust trust,
                                const char *trust_why, char **error, int *no_device)
{
    if (trust == BW_TRUST_NO_DEVICE) {
        *no_device = 1;
        char *e = bw_format_alloc("%s", trust_why ? trust_why : "no CUDA device");
        if (e) {
            free(*error);
            *error = e;
        }
        return NULL;
    }
    if (trust != BW_TRUST_OK || !*error)
        return NULL;
    if (!bw_recheck_baseline(o->ex, o->baseline_worker, tool, error))
        return NULL;
    char *detail = bw_unstarted_text(tool, *error);
    char *err = NULL;
    bw_runner *run = detail ? bw_runner_open_unstarted(o->ex, detail, &err) : NULL;
    free(detail);
    if (run) {
        free(*error);
        *error = NULL;
    }
    free(err);
    return run;
}

int bw_test_main(const bw_test_opts *o)
{
    const char *tools[BW_MAX_SANITIZERS];
    int n_tools = 0;
    if (o->sanitize) {
        n_tools = bw_parse_sanitizers(o->sanitize, tools);
        if (n_tools <= 0) {
            fprintf(stderr, "bwgrade: --sanitize takes memcheck, racecheck, initcheck (comma "
                            "separated) or all\n");
            return 2;
        }
    }
    bw_case_list all = {0};
    if (bw_cases_generate(o->ex, o->seed, o->hidden, &all) != 0) {
        fprintf(stderr, "bwgrade: out of memory generating the cases\n");
        return 3;
    }
    if (o->case_index >= all.count) {
        fprintf(stderr, "bwgrade: there is no case %d: %s has cases 0..%d%s\n", o->case_index,
                o->ex->name, all.count - 1, o->hidden ? "" : " (without --hidden)");
        bw_cases_free(&all);
        return 2;
    }

    int n_sections = n_tools ? n_tools : 1;
    section_store store[BW_MAX_SANITIZERS];
    bw_test_section sections[BW_MAX_SANITIZERS];
    memset(store, 0, sizeof store);
    bw_reply device, trusted;
    /* Which cases fit: the device's free memory as a worker with no
     * student code saw it, before any student code ran (trusted_device.h). */
    char *trust_why = NULL;
    bw_trust trust = bw_trust_or_warn(o->ex, o->baseline_worker, &trusted, &trust_why);
    if (trust == BW_TRUST_OK)
        (void)bw_keep_to_trusted_gpu(o->ex, o->baseline_worker, &trusted);
    int have_device = 0, have_trusted = trust == BW_TRUST_OK, no_device = 0;
    char *error = NULL;
    int done = 0;
    for (int s = 0; s < n_sections && !error; s++) {
        const char *tool = n_tools ? tools[s] : NULL;
        int said_no_device = 0;   /* the student's worker's word: proves nothing */
        double t_open = bw_mono_s();
        bw_runner *run = bw_runner_open(o->ex, o->worker_path, tool, &error, &said_no_device);
        if (!run)
            run = blame_student(o, tool, trust, trust_why, &error, &no_device);
        double t_cases = bw_mono_s();
        if (!run) {
            if (!error)
                error = bw_format_alloc("the worker would not start");
            break;
        }
        bw_runner_set_device_lock(run, o->device_lock);
        if (have_trusted)
            bw_runner_trust_device(run, &trusted);
        if (!have_device) {
            device = *bw_runner_device(run);
            have_device = 1;
        }
        if (run_section(run, o, &all, tool, &store[s], &sections[s]) != 0)
            error = bw_format_alloc("out of memory");
        else if (bw_runner_halted(run))   /* no grade from a run cut short */
            error = bw_format_alloc("%s", bw_runner_halted(run));
        else
            done++;
        double t_close = bw_mono_s();
        bw_runner_close(run);
        if (getenv("BWLAB_TIMING"))
            fprintf(stderr, "timing: worker start %.2f s, cases %.2f s, worker stop and memory "
                            "release %.2f s\n", t_cases - t_open, t_close - t_cases,
                    bw_mono_s() - t_close);
    }

    bw_test_report rep;
    memset(&rep, 0, sizeof rep);
    rep.ex = o->ex;
    rep.seed = o->seed;
    rep.hidden = o->hidden;
    rep.device = have_device ? &device : NULL;
    rep.no_device = no_device;
    rep.sections = sections;
    rep.n_sections = error ? 0 : done;
    int any_fail = 0, any_not_impl_only = 1;
    for (int s = 0; s < rep.n_sections; s++) {
        rep.passed += sections[s].passed;
        rep.failed += sections[s].failed;
        rep.skipped += sections[s].skipped;
        rep.not_run += sections[s].not_run;
        rep.total += sections[s].count;
        if (sections[s].failed) {
            any_fail = 1;
            any_not_impl_only &= strcmp(sections[s].status, "not_implemented") == 0;
        }
    }
    int code;
    if (error) {
        rep.status = "error";
        rep.error = error;
        code = 3;
    } else if (any_fail) {
        rep.status = any_not_impl_only ? "not_implemented" : "fail";
        code = 1;
    } else {
        rep.status = "pass";
        code = 0;
    }

    if (error)
        fprintf(stderr, "bwgrade: %s: %s\n", o->ex->name, error);
    else
        bw_report_test_text(o->json_path && strcmp(o->json_path, "-") == 0 ? stderr : stdout,
                            &rep, o->quiet);
    bw_containment contained = bw_contain_report(); /* what the workers actually had */
    rep.containment = &contained;
    if (o->json_path && bw_report_test_json(o->json_path, &rep) != 0) {
        fprintf(stderr, "bwgrade: could not write %s: %s\n", o->json_path, strerror(errno));
        code = 3;
    }

    for (int s = 0; s < n_sections; s++)
        free_section(&store[s]);
    free(error);
    free(trust_why);
    bw_cases_free(&all);
    return code;
}
