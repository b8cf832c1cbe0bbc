/* An elementwise exercise's check of one span (case_check.h): regenerate
 * each block's inputs, compare the input arrays with them, run the
 * reference on them, compare the output with the tolerance of validate.h. */
#include <string.h>
#include "case_check.h"
#include "image_hash.h"
#include "inputs.h"
#include "parallel_for.h"

typedef struct {
    bw_compare_result out;
    int64_t changed[BW_MAX_ARRAYS];
    int64_t first[BW_MAX_ARRAYS];
    int output_moved;
    uint32_t hash;
} part;

typedef struct {
    const bw_case_data *d;
    int hash_only;
    int64_t e0, e1;
    const uint8_t *data[BW_MAX_ARRAYS];   /* element e0 */
    int64_t part_len;
    part *parts;
} job;

static void part_init(part *p)
{
    bw_compare_init(&p->out);
    for (int k = 0; k < BW_MAX_ARRAYS; k++) {
        p->changed[k] = 0;
        p->first[k] = -1;
    }
    p->output_moved = 0;
    p->hash = 0;
}

/* Elements [begin, end). */
static void check_range(const job *j, int64_t begin, int64_t end, part *p)
{
    const bw_exercise *ex = j->d->ex;
    const bw_case *c = &j->d->c;
    const int out_k = ex->output;
    const bw_type out_t = ex->arrays[out_k].type;
    const int64_t out_eb = bw_type_bytes(out_t);
    uint8_t in[BW_MAX_ARRAYS][CHECK_BLOCK * 4];
    uint8_t expected[CHECK_BLOCK * 4];
    void *regen[BW_MAX_ARRAYS], *ref[BW_MAX_ARRAYS];
    const void *inputs[BW_MAX_ARRAYS];
    int n_in = 0;
    for (int k = 0; k < ex->n_arrays; k++) {
        regen[k] = ref[k] = in[k];
        if (bw_exercise_is_input(ex, k))
            inputs[n_in++] = in[k];   /* the tolerance sees the inputs as generated */
    }
    ref[out_k] = expected;
    for (int64_t b = begin; b < end; b += CHECK_BLOCK) {
        int64_t len = end - b < CHECK_BLOCK ? end - b : CHECK_BLOCK;
        const uint8_t *out = j->data[out_k] + (b - j->e0) * out_eb;
        /* The race hash counts 16-bit units: an element of 4 bytes is two. */
        p->hash += bw_race_hash(out, b * (out_eb / 2), len * (out_eb / 2), RACE_HASH_KEY);
        if (j->hash_only)
            continue;
        bw_inputs_fill_range(ex, c, regen, b, b + len);
        bw_check_inputs_kept(ex, regen, j->data, j->e0, b, len, p->changed, p->first);
        /* The reference works on the arrays as the student's function would:
         * inputs as generated, the output holding its input when in place. */
        if (ex->in_place)
            memcpy(expected, in[out_k], (size_t)(len * out_eb));
        else
            bw_fill_unwritten(out_t, expected, len, 0);
        ex->rule->reference(len, j->d->scalars, ref, 1);
        bw_compare_block(ex, j->d->scalars, inputs, expected, out, b, len, &p->out);
        if (ex->in_place && !p->output_moved)
            p->output_moved = memcmp(in[out_k], out, (size_t)(len * out_eb)) != 0;
    }
}

static void check_parts(int64_t p0, int64_t p1, void *vjob)
{
    const job *j = vjob;
    for (int64_t p = p0; p < p1; p++) {
        int64_t begin = j->e0 + p * j->part_len;
        int64_t end = begin + j->part_len < j->e1 ? begin + j->part_len : j->e1;
        part_init(&j->parts[p]);
        check_range(j, begin, end, &j->parts[p]);
    }
}

void bw_check_elementwise(bw_case_check *k, const bw_span *s)
{
    const bw_case_data *d = k->d;
    const bw_exercise *ex = d->ex;
    job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    j.hash_only = k->hash_only;
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
        const part *pt = &j.parts[p];
        bw_compare_merge(&k->out, &pt->out);
        for (int a = 0; a < ex->n_arrays; a++) {
            k->changed[a] += pt->changed[a];
            if (k->first[a] < 0)
                k->first[a] = pt->first[a];
        }
        k->output_moved |= pt->output_moved;
        k->out_hash += pt->hash;
    }
    bw_check_parts_free(j.parts, &one);
}
