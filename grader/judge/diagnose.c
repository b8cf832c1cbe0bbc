/* Failure patterns across cases. Each detector looks at every case and, when
 * its pattern holds, writes one sentence with evidence taken from a concrete
 * case (n, offset, index, expected and got values), so the student knows
 * both what went wrong and where to look. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diagnose.h"
#include "image.h"

/* ---- a growable string: text length is unbounded (details, names) ---- */

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *s, const char *fmt, ...)
{
    if (s->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0) {
        s->oom = 1;
        return;
    }
    if (s->len + (size_t)need + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + (size_t)need + 1)
            cap *= 2;
        char *p = realloc(s->p, cap);
        if (!p) {
            s->oom = 1;
            return;
        }
        s->p = p;
        s->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
    va_end(ap);
    s->len += (size_t)need;
}

/* ---- how things are named in the text ---- */

#define BW_MAX_NAMED 4   /* arrays named per exercise; others are "array k" */

static const struct {
    const char *exercise;
    const char *arrays[BW_MAX_NAMED];
} array_names[] = {
    {"haxpy", {"x", "y"}},
    {"vector_sum", {"a", "b", "c"}},
};

static void sb_array(sbuf *s, const bw_exercise *ex, int k)
{
    for (size_t i = 0; i < sizeof array_names / sizeof array_names[0]; i++)
        if (strcmp(array_names[i].exercise, ex->name) == 0 && k >= 0 && k < BW_MAX_NAMED &&
            array_names[i].arrays[k]) {
            sb_printf(s, "%s", array_names[i].arrays[k]);
            return;
        }
    sb_printf(s, "array %d", k);
}

static void sb_value(sbuf *s, bf16_t h)
{
    sb_printf(s, "0x%04x (", (unsigned)h);
    float f = bf16_to_float(h);
    if (bf16_is_nan(h))
        sb_printf(s, "NaN");
    else if (bf16_is_inf(h))
        sb_printf(s, "%sInf", (h & 0x8000) ? "-" : "+");
    else if (f == 0.0f)
        sb_printf(s, "%s0", (h & 0x8000) ? "-" : "+");
    else if ((h & 0x7F80) == 0)
        sb_printf(s, "%.4g, subnormal", (double)f);
    else
        sb_printf(s, "%.6g", (double)f);
    sb_printf(s, ")");
}

/* "case K (n=..., offset=..., ...)"; capital at the start of a sentence. */
static void sb_case_at(sbuf *s, const bw_case *c, int capital)
{
    sb_printf(s, "%sase %d (n=%lld, offset=%d elements, %s values", capital ? "C" : "c",
              c->index, (long long)c->n, c->offset_elems, bw_value_class_name(c->values));
    if (strcmp(c->alpha_kind, "-") != 0)
        sb_printf(s, ", alpha=%.9g", (double)c->alpha);
    sb_printf(s, ")");
}

static void sb_case(sbuf *s, const bw_case *c) { sb_case_at(s, c, 0); }

/* "at index i expected E, got G" for a case's first reported mismatch. */
static void sb_first_mismatch(sbuf *s, const bw_case_result *r)
{
    if (r->out.n_reported <= 0)
        return;
    const bw_mismatch *m = &r->out.reported[0];
    sb_printf(s, "at index %lld it expected ", (long long)m->index);
    sb_value(s, m->expected);
    sb_printf(s, " and got ");
    sb_value(s, m->got);
}

/* ---- what the results say ---- */

static int failed(const bw_case_result *r)
{
    return r->outcome != BW_OUTCOME_PASS && r->outcome != BW_OUTCOME_SKIPPED;
}

static int crashed(const bw_case_result *r)
{
    return r->outcome == BW_OUTCOME_CRASH || r->outcome == BW_OUTCOME_CUDA_ERROR;
}

/* A failure with wrong elements and none of the more specific signs. */
static int plain_wrong(const bw_case_result *r)
{
    return r->outcome == BW_OUTCOME_FAIL && r->out.mismatches > 0 && r->guard_bad_bytes == 0 &&
           !(r->input_array >= 0 && r->input_changed > 0) && !r->nondeterministic;
}

static int similar_n(int64_t a, int64_t b)
{
    return (a <= 2 * b && b <= 2 * a) || llabs((long long)(a - b)) <= 16;
}

typedef struct {
    const bw_exercise *ex;
    const bw_case *cases;
    const bw_case_result *res;
    int count;
    int nfail, first_fail;
    bw_diagnosis *out;
    int nout;
    int oom;
} diag_state;

static void emit(diag_state *d, bw_diag_code code, sbuf *s)
{
    static const char *const names[] = {
        "not_implemented", "crash", "timeout", "guard", "input_modified", "race",
        "head", "tail", "large_n", "special_values", "rounding", "none_found",
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

/* ---- the detectors, each adding at most one diagnosis ---- */

static int detect_not_implemented(diag_state *d)
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
    sb_array(&s, d->ex, d->ex->n_arrays - 1);
    sb_printf(&s, " exactly as it was). Write the kernel in exercises/%s/%s.cu and launch it "
                  "from %s().",
              d->ex->name, d->ex->name, d->ex->name);
    emit(d, BW_DIAG_NOT_IMPLEMENTED, &s);
    return 1;
}

static void detect_crash(diag_state *d)
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
    sb_printf(&s, "%d case%s crashed or stopped with a CUDA error; the first is ", k,
              k == 1 ? "" : "s");
    sb_case(&s, &d->cases[first]);
    sb_printf(&s, ": %s. An illegal or misaligned address usually means an index outside "
                  "[0, n) or a vector load/store through a pointer that is only 2-byte aligned. "
                  "Run with --sanitize memcheck to see the faulting line.",
              r->detail ? r->detail : bw_outcome_name(r->outcome));
    emit(d, BW_DIAG_CRASH, &s);
}

static void detect_timeout(diag_state *d)
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
    sb_case(&s, &d->cases[first]);
    if (d->res[first].detail)
        sb_printf(&s, " (%s)", d->res[first].detail);
    sb_printf(&s, ". Look for a loop that never ends: a grid-stride loop whose stride is 0, or "
                  "an int counter that wraps before reaching n.");
    emit(d, BW_DIAG_TIMEOUT, &s);
}

static void detect_guard(diag_state *d)
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
        after |= r->guard_last >= 2 * d->cases[i].n;
    }
    if (first < 0)
        return;
    const bw_case_result *r = &d->res[first];
    const bw_case *c = &d->cases[first];
    int64_t data = 2 * c->n;
    sbuf s = {0};
    sb_printf(&s, "Writes outside the array: ");
    sb_case(&s, c);
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
        sb_printf(&s, " Before the start: the arrays are only 2-byte aligned, so rounding "
                      "a pointer down to a 16-byte boundary lands before element 0.");
    emit(d, BW_DIAG_GUARD, &s);
}

static void detect_input_modified(diag_state *d)
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
    sb_case_at(&s, &d->cases[first], 1);
    sb_printf(&s, " changed the input array ");
    sb_array(&s, d->ex, r->input_array);
    sb_printf(&s, ": %lld element%s differ after the call, the first at index %lld (%d case%s "
                  "like this). Only ",
              (long long)r->input_changed, r->input_changed == 1 ? "" : "s",
              (long long)r->input_first, k, k == 1 ? "" : "s");
    sb_array(&s, d->ex, d->ex->n_arrays - 1);
    sb_printf(&s, " may be written; check the argument order of your stores.");
    emit(d, BW_DIAG_INPUT_MODIFIED, &s);
}

/* Returns 1 when it found a race: racy output is wrong in no fixed pattern,
 * so no "no simple pattern" diagnosis should follow it. */
static int detect_race(diag_state *d)
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
    sb_case_at(&s, &d->cases[first], 1);
    sb_printf(&s, " gave different output on two runs with the same inputs (%d case%s like "
                  "this): threads race. Make sure each element is read and written by exactly "
                  "one thread (in place, a thread must not read an element another thread "
                  "already overwrote); run with --sanitize racecheck.",
              k, k == 1 ? "" : "s");
    emit(d, BW_DIAG_RACE, &s);
    return 1;
}

/* Where the wrong elements of cases long enough to tell lie. */
typedef struct {
    int located;      /* failing cases with mismatches and n > 16 */
    int all_head;     /* all their wrong elements among the first 8 */
    int all_tail;     /* all among the last 8 */
} locations;

static locations locate(const diag_state *d)
{
    locations L = {0, 1, 1};
    for (int i = 0; i < d->count; i++) {
        const bw_case_result *r = &d->res[i];
        const bw_case *c = &d->cases[i];
        if (r->outcome != BW_OUTCOME_FAIL || r->out.mismatches <= 0 || c->n <= 16)
            continue;
        L.located++;
        if (r->out.last_bad >= 8)
            L.all_head = 0;
        if (r->out.first_bad < c->n - 8)
            L.all_tail = 0;
    }
    if (!L.located)
        L.all_head = L.all_tail = 0;
    return L;
}

/* Does some case pass that is like case f in n but has the property? */
static int similar_pass(const diag_state *d, int f, int (*prop)(const bw_case *))
{
    for (int i = 0; i < d->count; i++)
        if (d->res[i].outcome == BW_OUTCOME_PASS && prop(&d->cases[i]) &&
            similar_n(d->cases[i].n, d->cases[f].n))
            return 1;
    return 0;
}

static int offset_zero(const bw_case *c) { return c->offset_elems == 0; }
static int whole_vectors(const bw_case *c) { return c->n % 8 == 0; }
static int offset_of(const bw_case *c) { return c->offset_elems % 256; }
static int rest_of(const bw_case *c) { return (int)(c->n % 8); }

/* How many values key takes over the failing cases (keys are below 256).
 * "Only offset != 0 fails" means little when one case failed: it takes
 * failures at two offsets (or two remainders) to call it a pattern. */
static int distinct_failing(const diag_state *d, int (*key)(const bw_case *))
{
    unsigned char seen[256] = {0};
    int k = 0;
    for (int i = 0; i < d->count; i++)
        if (failed(&d->res[i])) {
            int v = key(&d->cases[i]) & 255;
            k += !seen[v];
            seen[v] = 1;
        }
    return k;
}

/* Every failing case satisfies pred. */
static int all_failing(const diag_state *d, int (*pred)(const bw_case *, const bw_case_result *))
{
    for (int i = 0; i < d->count; i++)
        if (failed(&d->res[i]) && !pred(&d->cases[i], &d->res[i]))
            return 0;
    return 1;
}

static int has_offset(const bw_case *c, const bw_case_result *r)
{
    (void)r;
    return c->offset_elems != 0;
}

static int ragged(const bw_case *c, const bw_case_result *r)
{
    (void)r;
    return c->n % 8 != 0;
}

static int is_large(const bw_case *c, const bw_case_result *r)
{
    (void)r;
    return c->n > ((int64_t)1 << 20);
}

static int is_huge(const bw_case *c, const bw_case_result *r)
{
    (void)r;
    return c->n >= INT32_MAX;
}

static int special_values(const bw_case *c, const bw_case_result *r)
{
    (void)r;
    return c->values == BW_VALUES_SPECIAL;
}

static int cancel_values(const bw_case *c, const bw_case_result *r)
{
    (void)r;
    return c->values == BW_VALUES_CANCEL;
}

static int small_error(const bw_case *c, const bw_case_result *r)
{
    (void)c;
    return plain_wrong(r) && r->out.max_ulps <= 4.0;
}

static int wrong_output(const bw_case *c, const bw_case_result *r)
{
    (void)c;
    return plain_wrong(r);
}

/* The case to show: the first failing one that reports a mismatch, one long
 * enough (n > 16) to show where in the array it lies if there is one, else
 * the first failing case. */
static int evidence_case(const diag_state *d)
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

static void describe_failure_at(sbuf *s, const diag_state *d, int i, int capital)
{
    const bw_case_result *r = &d->res[i];
    sb_case_at(s, &d->cases[i], capital);
    if (r->outcome != BW_OUTCOME_FAIL) {
        sb_printf(s, " ended with %s", bw_outcome_name(r->outcome));
        if (r->detail)
            sb_printf(s, " (%s)", r->detail);
    } else if (r->out.mismatches == 1) {
        sb_printf(s, " has 1 wrong element: ");
        sb_first_mismatch(s, r);
    } else if (r->out.mismatches > 1) {
        sb_printf(s, " has %lld wrong elements, indices %lld to %lld; ",
                  (long long)r->out.mismatches, (long long)r->out.first_bad,
                  (long long)r->out.last_bad);
        sb_first_mismatch(s, r);
    } else {
        sb_printf(s, " failed");
    }
}

static void describe_failure(sbuf *s, const diag_state *d, int i)
{
    describe_failure_at(s, d, i, 0);
}

static int detect_head(diag_state *d, const locations *L)
{
    int f = d->first_fail;
    int offset_only = all_failing(d, has_offset) && similar_pass(d, f, offset_zero) &&
                      distinct_failing(d, offset_of) >= 2;
    if (!(L->all_head || (offset_only && !L->all_tail)))
        return 0;
    int e = evidence_case(d);
    const bw_case *c = &d->cases[e];
    sbuf s = {0};
    if (offset_only)
        sb_printf(&s, "Only cases whose arrays do not start on a 16-byte boundary fail "
                      "(offset != 0; every failing case has one, and offset-0 cases of "
                      "similar n pass). ");
    else
        sb_printf(&s, "Only the first elements are wrong (all wrong elements have index < 8). ");
    describe_failure_at(&s, d, e, 1);
    sb_printf(&s, ". The arrays are only 2-byte aligned: with offset=%d the first 16-byte "
                  "aligned element is index %d, so handle the head elements one by one "
                  "before using vector loads and stores.",
              c->offset_elems, (8 - c->offset_elems % 8) % 8);
    emit(d, BW_DIAG_HEAD, &s);
    return 1;
}

static int detect_tail(diag_state *d, const locations *L)
{
    int f = d->first_fail;
    int ragged_only = all_failing(d, ragged) && similar_pass(d, f, whole_vectors) &&
                      distinct_failing(d, rest_of) >= 2;
    if (!(L->all_tail || (ragged_only && !L->all_head)))
        return 0;
    int e = evidence_case(d);
    const bw_case *c = &d->cases[e];
    sbuf s = {0};
    if (ragged_only)
        sb_printf(&s, "Only cases whose n is not a multiple of 8 fail, while multiples of 8 "
                      "pass. ");
    else
        sb_printf(&s, "Only the last elements are wrong (all within the last 8). ");
    describe_failure_at(&s, d, e, 1);
    int rest = (int)(c->n % 8);
    if (rest)
        sb_printf(&s, ". A vector of 8 bf16 is 16 bytes (one uint4/float4); with n=%lld the "
                      "last %d element%s not fill one and need%s a scalar loop with the bound "
                      "test i < n.",
                  (long long)c->n, rest, rest == 1 ? " does" : "s do", rest == 1 ? "s" : "");
    else
        sb_printf(&s, ". Check how the last elements are reached: the bound test must be "
                      "i < n (not i < n - 1), and the last vector of 8 bf16 (16 bytes) must be "
                      "stored too.");
    emit(d, BW_DIAG_TAIL, &s);
    return 1;
}

static int detect_large_n(diag_state *d)
{
    int any_pass = 0;
    int64_t largest_pass = 0;
    for (int i = 0; i < d->count; i++)
        if (d->res[i].outcome == BW_OUTCOME_PASS) {
            any_pass = 1;
            if (d->cases[i].n > largest_pass)
                largest_pass = d->cases[i].n;
        }
    if (!any_pass || !all_failing(d, is_large))
        return 0;
    int smallest = d->first_fail;
    for (int i = 0; i < d->count; i++)
        if (failed(&d->res[i]) && d->cases[i].n < d->cases[smallest].n)
            smallest = i;
    sbuf s = {0};
    if (all_failing(d, is_huge)) {
        sb_printf(&s, "Only n = 2147483647 (2^31 - 1) fails: ");
        describe_failure(&s, d, smallest);
        sb_printf(&s, ". Each index fits in an int, but blockIdx.x * blockDim.x + threadIdx.x "
                      "of a rounded-up grid, i + stride in a grid-stride loop, or 2 * i as a "
                      "byte offset passes 2^31 - 1 and wraps negative: compute indices in "
                      "size_t or long long.");
    } else {
        sb_printf(&s, "Only large n fail (largest passing n = %lld): ", (long long)largest_pass);
        describe_failure(&s, d, smallest);
        sb_printf(&s, ". Check the launch: gridDim.x may be up to 2^31 - 1 but gridDim.y and "
                      "gridDim.z only up to 65535, a fixed grid needs a grid-stride loop to "
                      "cover n, and int index arithmetic overflows past 2^31 - 1.");
    }
    emit(d, BW_DIAG_LARGE_N, &s);
    return 1;
}

static void special_hint(sbuf *s, bf16_t expected, bf16_t got)
{
    int en = bf16_is_nan(expected), gn = bf16_is_nan(got);
    if (en && !gn)
        sb_printf(s, " A NaN input must give NaN: look for comparisons, max/min or "
                     "clamping that drop it.");
    else if (gn && !en)
        sb_printf(s, " A NaN appeared where a number was expected: check Inf - Inf and "
                     "0 * Inf in your arithmetic order.");
    else if (bf16_is_inf(expected))
        sb_printf(s, " Overflow past the largest bf16 must round to %sInf with the right sign.",
                  (expected & 0x8000) ? "-" : "+");
    else if ((expected & 0x7F80) == 0 || (got & 0x7F80) == 0)
        sb_printf(s, " Subnormals and signed zeros must be kept: do not flush to zero "
                     "(no --use_fast_math, no -ftz=true, no _ftz intrinsics).");
    else
        sb_printf(s, " Huge magnitudes near 2^127 must be computed in float without "
                     "intermediate overflow.");
}

static int detect_special_values(diag_state *d)
{
    int other_pass = 0;
    for (int i = 0; i < d->count; i++)
        if (d->res[i].outcome == BW_OUTCOME_PASS && d->cases[i].values != BW_VALUES_SPECIAL)
            other_pass = 1;
    if (!other_pass || !all_failing(d, special_values))
        return 0;
    int e = evidence_case(d);
    sbuf s = {0};
    sb_printf(&s, "Only cases with special values (NaN, Inf, subnormals, signed zeros, "
                  "magnitudes near 2^127) fail: ");
    describe_failure(&s, d, e);
    sb_printf(&s, ".");
    if (d->res[e].out.n_reported > 0)
        special_hint(&s, d->res[e].out.reported[0].expected, d->res[e].out.reported[0].got);
    emit(d, BW_DIAG_SPECIAL_VALUES, &s);
    return 1;
}

static int detect_rounding(diag_state *d)
{
    if (!all_failing(d, wrong_output))
        return 0;
    int small = all_failing(d, small_error);
    int cancel_only = 0;
    if (!small && all_failing(d, cancel_values))
        for (int i = 0; i < d->count; i++)
            if (d->res[i].outcome == BW_OUTCOME_PASS && d->cases[i].values != BW_VALUES_CANCEL)
                cancel_only = 1;
    if (!small && !cancel_only)
        return 0;
    int worst = -1;
    for (int i = 0; i < d->count; i++)
        if (failed(&d->res[i]) &&
            (worst < 0 || d->res[i].out.max_ulps > d->res[worst].out.max_ulps))
            worst = i;
    sbuf s = {0};
    if (small) {
        sb_printf(&s, "Every wrong element is off by at most %.3g ulps, so the indexing is "
                      "right and the rounding is not. Largest error: ",
                  d->res[worst].out.max_ulps);
        describe_failure(&s, d, worst);
        sb_printf(&s, ". Convert float to bf16 with round-to-nearest-even (__float2bfloat16 or "
                      "__float2bfloat16_rn), not by keeping the top 16 bits, and round once, "
                      "at the end.");
    } else {
        sb_printf(&s, "Only the cancellation cases fail (the result is much smaller than its "
                      "terms, so early rounding shows): ");
        describe_failure(&s, d, evidence_case(d));
        if (d->ex->uses_alpha)
            sb_printf(&s, ". Compute alpha * x + y in float with a single rounding (fmaf, or "
                          "float multiply and add) and round to bf16 once; do not round the "
                          "product alpha * x to bf16 before adding.");
        else
            sb_printf(&s, ". Add in float and round to bf16 once, at the end.");
    }
    emit(d, BW_DIAG_ROUNDING, &s);
    return 1;
}

static void detect_none_found(diag_state *d)
{
    int e = evidence_case(d);
    sbuf s = {0};
    sb_printf(&s, "No simple pattern explains the %d failing case%s. The first: ", d->nfail,
              d->nfail == 1 ? "" : "s");
    describe_failure(&s, d, e);
    sb_printf(&s, ".");
    const bw_case_result *r = &d->res[e];
    if (r->out.unwritten > 0)
        sb_printf(&s, " %lld element%s never written (still holding the poison 0x%04x): the "
                      "grid does not reach every index below n.",
                  (long long)r->out.unwritten, r->out.unwritten == 1 ? " was" : "s were",
                  (unsigned)BW_POISON);
    sb_printf(&s, " Compare your index computation with the reference on a small n, e.g. "
                  "`--case %d`.",
              d->cases[e].index);
    emit(d, BW_DIAG_NONE_FOUND, &s);
}

int bw_diagnose(const bw_exercise *ex, const bw_case *cases, const bw_case_result *results,
                int count, bw_diagnosis **out)
{
    *out = NULL;
    diag_state d = {ex, cases, results, count, 0, -1, NULL, 0, 0};
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
        locations L = locate(&d);
        int pattern = 0;
        pattern |= detect_head(&d, &L);
        pattern |= detect_tail(&d, &L);
        pattern |= detect_large_n(&d);
        pattern |= detect_special_values(&d);
        detect_input_modified(&d);
        detect_guard(&d);
        int race = detect_race(&d);
        detect_crash(&d);
        detect_timeout(&d);
        if (!pattern)
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
