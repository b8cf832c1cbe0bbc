/* A reduction's check (case_check.h): each span's inputs are regenerated,
 * compared with what came back (they must be unchanged) and summed in
 * double, part by part in index order, into the facts the rule's bound reads
 * (reference/rule.h); the result, one element, is read where its span holds
 * it. Once every span is in, the result is judged against the exact sum. */
#include <math.h>
#include <string.h>
#include "case_check.h"
#include "image_hash.h"
#include "inputs.h"
#include "parallel_for.h"

typedef struct {
    bw_sum_facts facts;
    int64_t changed[BW_MAX_ARRAYS];
    int64_t first[BW_MAX_ARRAYS];
} part;

typedef struct {
    const bw_case_data *d;
    int64_t e0, e1;
    const uint8_t *data[BW_MAX_ARRAYS];   /* element e0 of each input */
    int64_t part_len;
    part *parts;
} job;

static void facts_init(bw_sum_facts *f)
{
    memset(f, 0, sizeof *f);
    f->min_lsb = INT32_MAX;
}

/* The exponent of x's lowest set bit (x finite, not 0). */
static int lsb_exponent(double x)
{
    int e;
    double m = frexp(fabs(x), &e);              /* |x| = m * 2^e, 0.5 <= m < 1 */
    uint64_t s = (uint64_t)ldexp(m, 53);        /* the significand as an integer */
    int tz = 0;
    while (!(s & 1u)) {
        s >>= 1;
        tz++;
    }
    return e - 53 + tz;
}

static void add_term(bw_sum_facts *f, double t)
{
    if (isnan(t)) {
        f->nan = 1;
        return;
    }
    if (isinf(t)) {
        if (t > 0)
            f->pos_inf = 1;
        else
            f->neg_inf = 1;
        return;
    }
    f->sum += t;
    f->abs_sum += fabs(t);
    if (t != 0.0) {
        int l = lsb_exponent(t);
        if (l < f->min_lsb)
            f->min_lsb = l;
    }
}

static void merge_facts(bw_sum_facts *to, const bw_sum_facts *from)
{
    to->n += from->n;
    to->sum += from->sum;
    to->abs_sum += from->abs_sum;
    to->nan |= from->nan;
    to->pos_inf |= from->pos_inf;
    to->neg_inf |= from->neg_inf;
    if (from->min_lsb < to->min_lsb)
        to->min_lsb = from->min_lsb;
}

static void check_range(const job *j, int64_t begin, int64_t end, part *p)
{
    const bw_exercise *ex = j->d->ex;
    uint8_t in[BW_MAX_ARRAYS][CHECK_BLOCK * 4];
    void *regen[BW_MAX_ARRAYS];
    for (int k = 0; k < ex->n_arrays; k++)
        regen[k] = in[k];
    for (int64_t b = begin; b < end; b += CHECK_BLOCK) {
        int64_t len = end - b < CHECK_BLOCK ? end - b : CHECK_BLOCK;
        bw_inputs_fill_range(ex, &j->d->c, regen, b, b + len);
        bw_check_inputs_kept(ex, regen, j->data, j->e0, b, len, p->changed, p->first);
        for (int64_t i = 0; i < len; i++) {
            double v[BW_MAX_ARRAYS];
            int n_in = 0;
            for (int k = 0; k < ex->n_arrays; k++)
                if (bw_exercise_is_input(ex, k)) {
                    bw_type t = ex->arrays[k].type;
                    v[n_in++] = bw_elem_to_double(t, bw_elem_load(t, in[k], i));
                }
            add_term(&p->facts, ex->rule->term(j->d->scalars, v));
        }
        p->facts.n += len;
    }
}

static void check_parts(int64_t p0, int64_t p1, void *vjob)
{
    const job *j = vjob;
    for (int64_t p = p0; p < p1; p++) {
        int64_t begin = j->e0 + p * j->part_len;
        int64_t end = begin + j->part_len < j->e1 ? begin + j->part_len : j->e1;
        memset(&j->parts[p], 0, sizeof j->parts[p]);
        facts_init(&j->parts[p].facts);
        for (int k = 0; k < BW_MAX_ARRAYS; k++)
            j->parts[p].first[k] = -1;
        check_range(j, begin, end, &j->parts[p]);
    }
}

void bw_check_reduction(bw_case_check *k, const bw_span *s)
{
    const bw_case_data *d = k->d;
    const bw_exercise *ex = d->ex;
    const int out_k = ex->output;
    if (s->ae1[out_k] > s->ae0[out_k]) {   /* the result travels in this span */
        const uint8_t *at = bw_span_data(d, s, out_k);
        bw_type t = ex->arrays[out_k].type;
        k->got = bw_elem_load(t, at, 0);
        k->got_seen = 1;
        k->out_hash += bw_race_hash(at, 0, bw_type_bytes(t) / 2, RACE_HASH_KEY);
    }
    if (k->hash_only)
        return;
    job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    j.e0 = s->e0;
    j.e1 = s->e1;
    for (int a = 0; a < ex->n_arrays; a++)
        j.data[a] = bw_span_data(d, s, a);
    int64_t nparts, per_thread;
    part one;
    j.parts = bw_check_parts_alloc(s->e1 - s->e0, sizeof one, &one, &nparts, &j.part_len,
                                   &per_thread);
    if (nparts > 0)
        parallel_for(nparts, d->threads, per_thread, check_parts, &j);
    for (int64_t p = 0; p < nparts; p++) {
        merge_facts(&k->facts, &j.parts[p].facts);
        for (int a = 0; a < ex->n_arrays; a++) {
            k->changed[a] += j.parts[p].changed[a];
            if (k->first[a] < 0)
                k->first[a] = j.parts[p].first[a];
        }
    }
    bw_check_parts_free(j.parts, &one);
}

void bw_check_reduction_finish(const bw_case_check *k, bw_case_result *r)
{
    const bw_exercise *ex = k->d->ex;
    const bw_sum_facts *f = &k->facts;
    bw_type t = bw_exercise_out_type(ex);
    bw_exact e;
    e.value = f->nan || (f->pos_inf && f->neg_inf) ? NAN
              : f->pos_inf                         ? INFINITY
              : f->neg_inf                         ? -INFINITY
                                                   : f->sum;
    e.slack = isfinite(e.value) ? ex->rule->bound(f) : 0.0;
    uint32_t fill = bw_elem_from_float(t, BW_SUM_FILL);
    r->shape.sum_checked = k->got_seen;
    r->shape.sum_exact = e.value;
    r->shape.sum_bound = e.slack;
    r->shape.sum_abs = f->abs_sum;
    r->shape.sum_got = k->got;
    bw_compare_init(&r->out);
    if (!k->got_seen)
        return;
    /* What a kernel that rounds the exact sum once would give. */
    uint32_t want = bw_elem_from_float(t, (float)e.value);
    r->out.max_ulps = bw_ulps_between_type(t, want, k->got);
    if (k->got != fill && bw_exact_accepts_type(t, e, k->got))
        return;
    r->out.mismatches = 1;
    r->out.unwritten = k->got == fill;
    r->out.first_bad = r->out.last_bad = 0;
    r->out.n_reported = 1;
    r->out.reported[0].index = 0;
    r->out.reported[0].expected = want;
    r->out.reported[0].got = k->got;
    r->out.reported[0].ulps = r->out.max_ulps;
}

int bw_case_check_differs(const bw_case_check *first, const bw_case_check *again,
                          const bw_case_result *r)
{
    const bw_exercise *ex = first->d->ex;
    if (ex->shape != BW_SHAPE_REDUCTION)
        return again->out_hash != first->out_hash;
    if (first->got_seen != again->got_seen)
        return 1;
    bw_type t = bw_exercise_out_type(ex);
    double a = bw_elem_to_double(t, first->got), b = bw_elem_to_double(t, again->got);
    if (isnan(a) || isnan(b))
        return isnan(a) != isnan(b);
    if (a == b)
        return 0;
    double bound = isfinite(r->shape.sum_bound) ? r->shape.sum_bound : 0.0;
    return !(fabs(a - b) <= bw_sum_spread(t, bound, fmax(fabs(a), fabs(b))));
}

double bw_sum_spread(bw_type t, double bound, double at)
{
    return 2.0 * (bound + bw_type_ulp_at(t, at));
}
