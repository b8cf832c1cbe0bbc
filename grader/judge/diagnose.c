/* Failure patterns across cases. Each detector looks at every case and, when
 * its pattern holds, writes one sentence with evidence taken from a concrete
 * case (n, offset, index, expected and got values), so the student knows
 * both what went wrong and where to look. This file holds the driver and
 * the detectors every shape shares; diagnose_elementwise.c and
 * diagnose_shapes.c hold the patterns of each shape's numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diagnose_state.h"

/* ---- what the results say ---- */

int failed(const bw_case_result *r)
{
    return r->outcome != BW_OUTCOME_PASS && r->outcome != BW_OUTCOME_SKIPPED;
}

int crashed(const bw_case_result *r)
{
    return r->outcome == BW_OUTCOME_CRASH || r->outcome == BW_OUTCOME_CUDA_ERROR;
}

int plain_wrong(const bw_case_result *r)
{
    return r->outcome == BW_OUTCOME_FAIL && r->out.mismatches > 0 && r->guard_bad_bytes == 0 &&
           !(r->input_array >= 0 && r->input_changed > 0) && !r->nondeterministic;
}

static int similar_n(int64_t a, int64_t b)
{
    return (a <= 2 * b && b <= 2 * a) || llabs((long long)(a - b)) <= 16;
}

int similar_pass(const diag_state *d, int f, int (*prop)(const diag_state *, const bw_case *))
{
    for (int i = 0; i < d->count; i++)
        if (d->res[i].outcome == BW_OUTCOME_PASS && prop(d, &d->cases[i]) &&
            similar_n(d->cases[i].n, d->cases[f].n))
            return 1;
    return 0;
}

/* "Only offset != 0 fails" means little when one case failed: it takes
 * failures at two offsets (or two remainders) to call it a pattern. */
int distinct_failing(const diag_state *d, int (*key)(const diag_state *, const bw_case *))
{
    unsigned char seen[256] = {0};
    int k = 0;
    for (int i = 0; i < d->count; i++)
        if (failed(&d->res[i])) {
            int v = key(d, &d->cases[i]) & 255;
            k += !seen[v];
            seen[v] = 1;
        }
    return k;
}

int all_failing(const diag_state *d,
                int (*pred)(const diag_state *, const bw_case *, const bw_case_result *))
{
    for (int i = 0; i < d->count; i++)
        if (failed(&d->res[i]) && !pred(d, &d->cases[i], &d->res[i]))
            return 0;
    return 1;
}

int evidence_case(const diag_state *d)
{
    int any = -1;
    for (int i = 0; i < d->count; i++)
        if (failed(&d->res[i]) && d->res[i].out.n_reported > 0) {
            if (d->cases[i].n > 16)
                return i;
            if (any < 0)
                any = i;
        }
    return any >= 0 ? any : d->first_fail;
}

/* The bytes of array k's data in case c. */
static int64_t array_bytes(const diag_state *d, int k, const bw_case *c)
{
    if (k < 0 || k >= d->ex->n_arrays)
        return 2 * c->n;
    return bw_type_bytes(d->ex->arrays[k].type) * bw_exercise_count_of(d->ex, k, c->n);
}

void emit(diag_state *d, bw_diag_code code, sbuf *s)
{
    static const char *const names[] = {
        "not_implemented", "crash", "timeout", "guard", "input_modified", "race",
        "head", "tail", "large_n", "special_values", "rounding",
        "not_zeroed", "lost_elements", "counted_twice", "precision",
        "copied", "dims_swapped", "edge_tiles", "none_found",
    };
    if (s->oom || !s->p) {
        free(s->p);
        d->oom = 1;
        return;
    }
    d->out[d->nout].code = code;
    d->out[d->nout].name = names[code];
    d->out[d->nout].text = s->p;
    d->nout++;
}

/* ---- the detectors every shape shares ---- */

int detect_not_implemented(diag_state *d)
{
    int ran = 0, untouched = 0, any_fail = 0;
    for (int i = 0; i < d->count; i++) {
        const bw_case_result *r = &d->res[i];
        if (r->outcome != BW_OUTCOME_PASS && r->outcome != BW_OUTCOME_FAIL)
            continue;
        ran++;
        untouched += r->nothing_written != 0;
        any_fail |= r->outcome == BW_OUTCOME_FAIL;
    }
    /* Some correct results leave the output as it was (haxpy with alpha = 0),
     * so it takes a failure as well as an untouched output everywhere. */
    if (ran == 0 || untouched != ran || !any_fail)
        return 0;
    sbuf s = {0};
    sb_printf(&s, "%s is not implemented yet: no case changed the output (all %d cases that ran "
                  "left ",
              d->ex->name, ran);
    sb_array(&s, d->ex, d->ex->output);
    sb_printf(&s, " exactly as it was). Write the kernel in exercises/%s/%s.cu and launch it "
                  "from %s().",
              d->ex->name, d->ex->name, d->ex->name);
    emit(d, BW_DIAG_NOT_IMPLEMENTED, &s);
    return 1;
}

void detect_crash(diag_state *d)
{
    int first = -1, k = 0;
    for (int i = 0; i < d->count; i++)
        if (crashed(&d->res[i])) {
            if (first < 0)
                first = i;
            k++;
        }
    if (first < 0)
        return;
    const bw_case_result *r = &d->res[first];
    sbuf s = {0};
    if (r->never_started) {
        /* Not a kernel's fault pattern: no call was ever made. */
        sb_printf(&s, "No case ran: %s", r->detail ? r->detail : "the worker would not start");
        emit(d, BW_DIAG_CRASH, &s);
        return;
    }
    if (r->forged_reply) {
        /* Not a kernel's fault either: no kernel error makes these replies. */
        sb_printf(&s, "%d case%s failed on a reply the kit's worker never sends; the first is ",
                  k, k == 1 ? "" : "s");
        sb_case(&s, d, &d->cases[first]);
        sb_printf(&s, ": %s. Your code must not write to bwgrade's channel or the worker's "
                      "memory.", r->detail ? r->detail : bw_outcome_name(r->outcome));
        emit(d, BW_DIAG_CRASH, &s);
        return;
    }
    sb_printf(&s, "%d case%s crashed or stopped with a CUDA error; the first is ", k,
              k == 1 ? "" : "s");
    sb_case(&s, d, &d->cases[first]);
    sb_printf(&s, ": %s. An illegal or misaligned address usually means an index outside "
                  "[0, n) or a vector load/store through a pointer that is only %d-byte aligned. "
                  "Run with --sanitize memcheck to see the faulting line.",
              r->detail ? r->detail : bw_outcome_name(r->outcome), bw_exercise_elem_bytes(d->ex));
    emit(d, BW_DIAG_CRASH, &s);
}

void detect_timeout(diag_state *d)
{
    int first = -1, k = 0;
    for (int i = 0; i < d->count; i++)
        if (d->res[i].outcome == BW_OUTCOME_TIMEOUT) {
            if (first < 0)
                first = i;
            k++;
        }
    if (first < 0)
        return;
    sbuf s = {0};
    sb_printf(&s, "%d case%s did not finish in time; the first is ", k, k == 1 ? "" : "s");
    sb_case(&s, d, &d->cases[first]);
    if (d->res[first].detail)
        sb_printf(&s, " (%s)", d->res[first].detail);
    sb_printf(&s, ". Look for a loop that never ends: a grid-stride loop whose stride is 0, or "
                  "an int counter that wraps before reaching n.");
    emit(d, BW_DIAG_TIMEOUT, &s);
}

void detect_guard(diag_state *d)
{
    int first = -1, k = 0, before = 0, after = 0;
    for (int i = 0; i < d->count; i++) {
        const bw_case_result *r = &d->res[i];
        if (r->guard_bad_bytes <= 0)
            continue;
        if (first < 0)
            first = i;
        k++;
        before |= r->guard_first < 0;
        after |= r->guard_last >= array_bytes(d, r->guard_array, &d->cases[i]);
    }
    if (first < 0)
        return;
    const bw_case_result *r = &d->res[first];
    const bw_case *c = &d->cases[first];
    int64_t data = array_bytes(d, r->guard_array, c);
    sbuf s = {0};
    sb_printf(&s, "Writes outside the array: ");
    sb_case(&s, d, c);
    sb_printf(&s, " changed %lld guard byte%s around ", (long long)r->guard_bad_bytes,
              r->guard_bad_bytes == 1 ? "" : "s");
    sb_array(&s, d->ex, r->guard_array);
    if (r->guard_first < 0)
        sb_printf(&s, ", starting %lld bytes before element 0", (long long)-r->guard_first);
    if (r->guard_last >= data)
        sb_printf(&s, "%s up to %lld bytes past element n-1 = %lld",
                  r->guard_first < 0 ? " and reaching" : ",",
                  (long long)(r->guard_last - data + 1), (long long)(c->n - 1));
    sb_printf(&s, " (%d case%s damaged guards).", k, k == 1 ? "" : "s");
    if (after)
        sb_printf(&s, " Past the end: check the bound test (i < n) for every store, "
                      "including the last partial vector.");
    if (before)
        sb_printf(&s, " Before the start: the arrays are only %d-byte aligned, so rounding "
                      "a pointer down to a 16-byte boundary lands before element 0.",
                  bw_exercise_elem_bytes(d->ex));
    emit(d, BW_DIAG_GUARD, &s);
}

void detect_input_modified(diag_state *d)
{
    int first = -1, k = 0;
    for (int i = 0; i < d->count; i++)
        if (d->res[i].input_array >= 0 && d->res[i].input_changed > 0) {
            if (first < 0)
                first = i;
            k++;
        }
    if (first < 0)
        return;
    const bw_case_result *r = &d->res[first];
    sbuf s = {0};
    sb_case_at(&s, d, &d->cases[first], 1);
    sb_printf(&s, " changed the input array ");
    sb_array(&s, d->ex, r->input_array);
    sb_printf(&s, ": %lld element%s differ after the call, the first at index %lld (%d case%s "
                  "like this). Only ",
              (long long)r->input_changed, r->input_changed == 1 ? "" : "s",
              (long long)r->input_first, k, k == 1 ? "" : "s");
    sb_array(&s, d->ex, d->ex->output);
    sb_printf(&s, " may be written; check the argument order of your stores.");
    emit(d, BW_DIAG_INPUT_MODIFIED, &s);
}

/* Returns 1 when it found a race: racy output is wrong in no fixed pattern,
 * so no "no simple pattern" diagnosis should follow it. */
int detect_race(diag_state *d)
{
    int first = -1, k = 0;
    for (int i = 0; i < d->count; i++)
        if (d->res[i].nondeterministic) {
            if (first < 0)
                first = i;
            k++;
        }
    if (first < 0)
        return 0;
    sbuf s = {0};
    sb_case_at(&s, d, &d->cases[first], 1);
    if (d->ex->shape == BW_SHAPE_REDUCTION)
        sb_printf(&s, " gave results on two runs with the same inputs that differ by more than "
                      "any order of float additions explains (%d case%s like this): threads "
                      "race. Partial sums must meet through atomicAdd, or through shared memory "
                      "with __syncthreads() between writing and reading them (and "
                      "__threadfence() before another block reads them); run with --sanitize "
                      "racecheck.",
                  k, k == 1 ? "" : "s");
    else
        sb_printf(&s, " gave different output on two runs with the same inputs (%d case%s like "
                      "this): threads race. Make sure each element is read and written by "
                      "exactly one thread (in place, a thread must not read an element another "
                      "thread already overwrote); run with --sanitize racecheck.",
                  k, k == 1 ? "" : "s");
    emit(d, BW_DIAG_RACE, &s);
    return 1;
}

void detect_none_found(diag_state *d)
{
    int e = evidence_case(d);
    sbuf s = {0};
    sb_printf(&s, "No simple pattern explains the %d failing case%s. The first: ", d->nfail,
              d->nfail == 1 ? "" : "s");
    describe_failure(&s, d, e);
    sb_printf(&s, ".");
    const bw_case_result *r = &d->res[e];
    if (r->out.unwritten > 0)
        sb_printf(&s, bw_exercise_out_type(d->ex) == BW_F32
                          ? " %lld element%s never written (still holding the poison 0x%08x): the "
                          : " %lld element%s never written (still holding the poison 0x%04x): the "
                      "grid does not reach every index below n.",
                  (long long)r->out.unwritten, r->out.unwritten == 1 ? " was" : "s were",
                  (unsigned)bw_type_poison(bw_exercise_out_type(d->ex)));
    sb_printf(&s, " Compare your index computation with the reference on a small n, e.g. "
                  "`--case %d`.",
              d->cases[e].index);
    emit(d, BW_DIAG_NONE_FOUND, &s);
}

int bw_diagnose(const bw_exercise *ex, const bw_case *cases, const bw_case_result *results,
                int count, bw_diagnosis **out)
{
    *out = NULL;
    diag_state d = {ex, cases, results, count, 0, -1, 16 / bw_exercise_elem_bytes(ex),
                    NULL, 0, 0};
    for (int i = 0; i < count; i++)
        if (failed(&results[i])) {
            if (d.first_fail < 0)
                d.first_fail = i;
            d.nfail++;
        }
    if (d.nfail == 0)
        return 0;
    d.out = calloc(BW_DIAG_NONE_FOUND + 1, sizeof *d.out);
    if (!d.out)
        return -1;

    /* Most telling first: patterns that say where to look come before the
     * symptoms (crash, guard) they often cause. */
    if (detect_not_implemented(&d)) {
        detect_crash(&d);
        detect_timeout(&d);
    } else {
        int pattern = 0, race = 0;
        if (ex->shape == BW_SHAPE_ELEMENTWISE) {
            locations L = locate(&d);
            pattern |= detect_head(&d, &L);
            pattern |= detect_tail(&d, &L);
            pattern |= detect_large_n(&d);
            pattern |= detect_special_values(&d);
        } else {
            /* One result, or elements moved rather than computed: where the
             * wrong elements lie says nothing by itself; which cases fail
             * does (offsets, the largest). A reduction's race outranks the
             * patterns of its sums: a race's numbers form none. */
            locations none = {0, 0, 0};
            if (ex->shape == BW_SHAPE_REDUCTION) {
                race = detect_race(&d);
                if (!race)
                    pattern |= detect_sum_patterns(&d);
            } else {
                /* Only the largest shapes wrong: their indices or grid
                 * wrapped, whatever the wrong elements look like. */
                pattern |= detect_large_n(&d);
                if (!pattern)
                    pattern |= detect_matrix_patterns(&d);
            }
            if (!pattern && !race)
                pattern |= detect_head(&d, &none);
            if (!pattern && !race && ex->shape == BW_SHAPE_REDUCTION)
                pattern |= detect_large_n(&d);
        }
        detect_input_modified(&d);
        detect_guard(&d);
        if (ex->shape != BW_SHAPE_REDUCTION)
            race = detect_race(&d);
        detect_crash(&d);
        detect_timeout(&d);
        if (!pattern && ex->shape == BW_SHAPE_ELEMENTWISE)
            pattern = detect_rounding(&d);
        /* Wrong values not explained by any pattern or specific sign. */
        int unexplained = 0;
        for (int i = 0; i < count; i++)
            unexplained |= plain_wrong(&results[i]);
        if (!pattern && !race && (unexplained || d.nout == 0))
            detect_none_found(&d);
    }
    if (d.oom) {
        bw_diagnoses_free(d.out, d.nout);
        return -1;
    }
    *out = d.out;
    return d.nout;
}

void bw_diagnoses_free(bw_diagnosis *d, int count)
{
    if (!d)
        return;
    for (int i = 0; i < count; i++)
        free(d[i].text);
    free(d);
}
