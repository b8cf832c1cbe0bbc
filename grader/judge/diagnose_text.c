/* How the diagnoses name things: arrays by their declared names, values in
 * their output type, cases by what they hold (see diagnose_state.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diagnose_state.h"

void sb_printf(sbuf *s, const char *fmt, ...)
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

void sb_array(sbuf *s, const bw_exercise *ex, int k)
{
    if (k >= 0 && k < ex->n_arrays)
        sb_printf(s, "%s", ex->arrays[k].name);
    else
        sb_printf(s, "array %d", k);
}

void sb_value(sbuf *s, bw_type t, uint32_t bits)
{
    sb_printf(s, t == BW_F32 ? "0x%08x (" : "0x%04x (", (unsigned)bits);
    double f = bw_elem_to_double(t, bits);
    if (bw_elem_is_nan(t, bits))
        sb_printf(s, "NaN");
    else if (bw_elem_is_inf(t, bits))
        sb_printf(s, "%sInf", bw_elem_sign(t, bits) ? "-" : "+");
    else if (f == 0.0)
        sb_printf(s, "%s0", bw_elem_sign(t, bits) ? "-" : "+");
    else if (bw_elem_is_tiny(t, bits))
        sb_printf(s, "%.4g, subnormal", f);
    else
        sb_printf(s, t == BW_F32 ? "%.9g" : "%.6g", f);
    sb_printf(s, ")");
}

void sb_case_at(sbuf *s, const diag_state *d, const bw_case *c, int capital)
{
    if (d->ex->shape == BW_SHAPE_MATRIX)
        sb_printf(s, "%sase %d (%lld x %lld, offset=%d elements, %s values", capital ? "C" : "c",
                  c->index, (long long)c->rows, (long long)c->cols, c->offset_elems,
                  bw_value_class_name(c->values));
    else
        sb_printf(s, "%sase %d (n=%lld, offset=%d elements, %s values", capital ? "C" : "c",
                  c->index, (long long)c->n, c->offset_elems, bw_value_class_name(c->values));
    if (strcmp(c->alpha_kind, "-") != 0)
        sb_printf(s, ", %s=%.9g", d->ex->scalars[0], (double)c->alpha);
    sb_printf(s, ")");
}

void sb_case(sbuf *s, const diag_state *d, const bw_case *c) { sb_case_at(s, d, c, 0); }

void sb_first_mismatch(sbuf *s, const diag_state *d, const bw_case_result *r)
{
    if (r->out.n_reported <= 0)
        return;
    bw_type t = bw_exercise_out_type(d->ex);
    const bw_mismatch *m = &r->out.reported[0];
    sb_printf(s, "at index %lld it expected ", (long long)m->index);
    sb_value(s, t, m->expected);
    sb_printf(s, " and got ");
    sb_value(s, t, m->got);
}

/* A reduction's wrong result: the sum it gave against the exact one. */
static void describe_sum(sbuf *s, const diag_state *d, const bw_case_result *r)
{
    bw_type t = bw_exercise_out_type(d->ex);
    sb_printf(s, " gave ");
    sb_value(s, t, r->shape.sum_got);
    sb_printf(s, " where the exact sum is %.9g", r->shape.sum_exact);
    if (isfinite(r->shape.sum_exact))
        sb_printf(s, r->shape.sum_bound > 0 ? " (a float sum in any order lands within %.3g of it)"
                                            : " (every partial sum is a float: exact in any order)",
                  r->shape.sum_bound);
}

void describe_failure_at(sbuf *s, const diag_state *d, int i, int capital)
{
    const bw_case_result *r = &d->res[i];
    sb_case_at(s, d, &d->cases[i], capital);
    if (r->outcome != BW_OUTCOME_FAIL) {
        sb_printf(s, " ended with %s", bw_outcome_name(r->outcome));
        if (r->detail)
            sb_printf(s, " (%s)", r->detail);
    } else if (d->ex->shape == BW_SHAPE_REDUCTION && r->out.mismatches > 0) {
        describe_sum(s, d, r);
    } else if (r->out.mismatches == 1) {
        sb_printf(s, " has 1 wrong element: ");
        sb_first_mismatch(s, d, r);
    } else if (r->out.mismatches > 1) {
        sb_printf(s, " has %lld wrong elements, indices %lld to %lld; ",
                  (long long)r->out.mismatches, (long long)r->out.first_bad,
                  (long long)r->out.last_bad);
        sb_first_mismatch(s, d, r);
    } else {
        sb_printf(s, " failed");
    }
}

void describe_failure(sbuf *s, const diag_state *d, int i) { describe_failure_at(s, d, i, 0); }
