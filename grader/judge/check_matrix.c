/* A matrix exercise's check (case_check.h): output element o must hold the
 * bits of input element source(o) (the rule, reference/rule.h), regenerated
 * where it lies; the input must come back unchanged. For the diagnoses each
 * wrong element is also tested against a plain copy, against the same rule
 * with rows and cols swapped, and for where its source lies (whole tiles or
 * the ragged edge). */
#include <string.h>
#include "case_check.h"
#include "image_hash.h"
#include "inputs.h"
#include "parallel_for.h"

static const int64_t tiles[3] = {16, 32, 64};

typedef struct {
    bw_compare_result out;
    bw_shape_findings shape;
    int64_t changed, first;
    uint32_t hash;
} part;

typedef struct {
    const bw_case_data *d;
    int hash_only;
    int in_k, out_k;
    bw_input_reader reader;
    int64_t e0, e1;
    const uint8_t *in, *out;              /* element e0 of the input and of the output */
    int64_t part_len;
    part *parts;
} job;

static void judge_element(const job *j, int64_t o, uint32_t got, part *p)
{
    const bw_case *c = &j->d->c;
    const bw_rule *rule = j->d->ex->rule;
    bw_type t = j->d->ex->arrays[j->out_k].type;
    int64_t src = rule->source(o, c->rows, c->cols);
    uint32_t want = bw_input_read(&j->reader, j->in_k, src);
    if (got == want)
        return;
    bw_compare_result *r = &p->out;
    double u = bw_ulps_between_type(t, want, got);
    if (u > r->max_ulps)
        r->max_ulps = u;
    if (got == bw_type_poison(t))
        r->unwritten++;
    if (r->first_bad < 0)
        r->first_bad = o;
    r->last_bad = o;
    if (r->n_reported < BW_REPORTED_MISMATCHES) {
        bw_mismatch *m = &r->reported[r->n_reported++];
        m->index = o;
        m->expected = want;
        m->got = got;
        m->ulps = u;
    }
    r->mismatches++;
    p->shape.copy_like += got == bw_input_read(&j->reader, j->in_k, o);
    p->shape.swap_like += got == bw_input_read(&j->reader, j->in_k, rule->source(o, c->cols, c->rows));
    int64_t row = src / c->cols, col = src % c->cols;
    for (int q = 0; q < 3; q++)
        p->shape.interior_bad[q] += row < c->rows - c->rows % tiles[q] &&
                                    col < c->cols - c->cols % tiles[q];
}

static void check_range(const job *j, int64_t begin, int64_t end, part *p)
{
    const bw_exercise *ex = j->d->ex;
    bw_type in_t = ex->arrays[j->in_k].type, out_t = ex->arrays[j->out_k].type;
    int64_t in_eb = bw_type_bytes(in_t), out_eb = bw_type_bytes(out_t);
    uint8_t in[BW_MAX_ARRAYS][CHECK_BLOCK * 4];
    void *regen[BW_MAX_ARRAYS];
    for (int k = 0; k < ex->n_arrays; k++)
        regen[k] = in[k];
    for (int64_t b = begin; b < end; b += CHECK_BLOCK) {
        int64_t len = end - b < CHECK_BLOCK ? end - b : CHECK_BLOCK;
        const uint8_t *out = j->out + (b - j->e0) * out_eb;
        p->hash += bw_race_hash(out, b * (out_eb / 2), len * (out_eb / 2), RACE_HASH_KEY);
        if (j->hash_only)
            continue;
        bw_inputs_fill_range(ex, &j->d->c, regen, b, b + len);
        int64_t first = -1;
        int64_t changed = bw_count_changed_bytes(in[j->in_k], j->in + (b - j->e0) * in_eb, len,
                                                 (int)in_eb, &first, 1);
        if (changed > 0) {
            p->changed += changed;
            if (p->first < 0)
                p->first = b + first;
        }
        for (int64_t i = 0; i < len; i++)
            judge_element(j, b + i, bw_elem_load(out_t, out, i), p);
    }
}

static void check_parts(int64_t p0, int64_t p1, void *vjob)
{
    const job *j = vjob;
    for (int64_t p = p0; p < p1; p++) {
        int64_t begin = j->e0 + p * j->part_len;
        int64_t end = begin + j->part_len < j->e1 ? begin + j->part_len : j->e1;
        memset(&j->parts[p], 0, sizeof j->parts[p]);
        bw_compare_init(&j->parts[p].out);
        j->parts[p].first = -1;
        check_range(j, begin, end, &j->parts[p]);
    }
}

void bw_check_matrix(bw_case_check *k, const bw_span *s)
{
    const bw_case_data *d = k->d;
    const bw_exercise *ex = d->ex;
    job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    j.hash_only = k->hash_only;
    j.out_k = ex->output;
    for (int a = 0; a < ex->n_arrays; a++)
        if (bw_exercise_is_input(ex, a))
            j.in_k = a;
    bw_input_reader_init(&j.reader, ex, &d->c);
    j.e0 = s->e0;
    j.e1 = s->e1;
    j.in = bw_span_data(d, s, j.in_k);
    j.out = bw_span_data(d, s, j.out_k);
    int64_t nparts, per_thread;
    part one;
    j.parts = bw_check_parts_alloc(s->e1 - s->e0, sizeof one, &one, &nparts, &j.part_len,
                                   &per_thread);
    if (nparts > 0)
        parallel_for(nparts, d->threads, per_thread, check_parts, &j);
    for (int64_t p = 0; p < nparts; p++) {
        const part *pt = &j.parts[p];
        bw_compare_merge(&k->out, &pt->out);
        k->changed[j.in_k] += pt->changed;
        if (k->first[j.in_k] < 0)
            k->first[j.in_k] = pt->first;
        k->shape.copy_like += pt->shape.copy_like;
        k->shape.swap_like += pt->shape.swap_like;
        for (int q = 0; q < 3; q++)
            k->shape.interior_bad[q] += pt->shape.interior_bad[q];
        k->out_hash += pt->hash;
    }
    bw_check_parts_free(j.parts, &one);
}
