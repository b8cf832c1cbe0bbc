/* See case_data.h. Both passes over the images run in parallel: the build
 * by element ranges (which also spreads the first touch of fresh shared
 * memory over the cores), the check by fixed parts merged in index order,
 * so that what it reports does not depend on the thread count. */
#include <stdlib.h>
#include <string.h>
#include "case_data.h"
#include "image_hash.h"
#include "inputs.h"
#include "format_alloc.h"
#include "report_text.h"
#include "parallel_for.h"
#include "validate.h"

#define CHECK_BLOCK 2048                  /* elements regenerated at a time, per array */
#define MAX_PARTS 4096                    /* bounds the partial results to ~2 MB */
#define MIN_THREAD_ELEMS ((int64_t)1 << 16) /* less is not worth a thread */
#define RACE_HASH_KEY UINT64_C(0x7261636568617368)

void bw_case_data_init(bw_case_data *d, const bw_exercise *ex, const bw_case *c, int sanitize,
                       int threads)
{
    memset(d, 0, sizeof *d);
    d->ex = ex;
    d->c = *c;
    d->layout = bw_image_layout_for(c->n, c->offset_elems, sanitize);
    d->threads = threads;
}

static void fill_poison(bf16_t *a, int64_t len)
{
    for (int64_t i = 0; i < len; i++)
        a[i] = BW_POISON;
}

static bf16_t *array_data(const bw_case_data *d, const uint8_t *images, int k)
{
    return bw_image_data((uint8_t *)images + (uint64_t)k * d->layout.total_bytes, &d->layout);
}

/* ---- build ---------------------------------------------------------------- */

typedef struct {
    const bw_case_data *d;
    bf16_t *data[BW_MAX_ARRAYS];
} build_job;

static void build_body(int64_t begin, int64_t end, void *p)
{
    const build_job *j = p;
    const bw_exercise *ex = j->d->ex;
    bf16_t *at[BW_MAX_ARRAYS];
    for (int k = 0; k < ex->n_arrays; k++)
        at[k] = j->data[k] + begin;
    bw_inputs_fill_range(ex, &j->d->c, at, begin, end);
    /* An output that is not read starts as BW_POISON, so elements the
     * kernel never wrote stand out. */
    for (int k = 0; k < ex->n_arrays; k++)
        if (!bw_exercise_is_input(ex, k))
            fill_poison(at[k], end - begin);
}

uint8_t *bw_case_data_build(const bw_case_data *d, bw_shm *shm, char **why)
{
    const bw_exercise *ex = d->ex;
    uint64_t total = (uint64_t)ex->n_arrays * d->layout.total_bytes;
    uint8_t *base = bw_shm_reserve(shm, (size_t)total);
    if (!base) {
        char size[BW_SIZE_TEXT];
        bw_format_bytes(total, size);
        *why = bw_format_alloc("could not reserve %s of shared memory", size);
        return NULL;
    }
    build_job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    for (int k = 0; k < ex->n_arrays; k++) {
        bw_image_fill_guards(base + (uint64_t)k * d->layout.total_bytes, &d->layout);
        j.data[k] = array_data(d, base, k);
    }
    parallel_for(d->c.n, d->threads, MIN_THREAD_ELEMS, build_body, &j);
    return base;
}

void bw_case_data_request(const bw_case_data *d, bw_req_kind kind, bw_request *req)
{
    memset(req, 0, sizeof *req);
    req->magic = BW_PROTO_MAGIC;
    req->kind = (uint32_t)kind;
    req->n = (int32_t)d->c.n;
    req->alpha = d->ex->uses_alpha ? d->c.alpha : 0.0f;
    req->n_arrays = d->ex->n_arrays;
    req->front_bytes = d->layout.front_bytes;
    req->data_bytes = d->layout.data_bytes;
    req->back_bytes = d->layout.back_bytes;
    req->image_bytes = d->layout.total_bytes;
    req->shm_bytes = (uint64_t)d->ex->n_arrays * d->layout.total_bytes;
}

/* ---- check ---------------------------------------------------------------- */

typedef struct {
    bw_compare_result out;
    int64_t changed[BW_MAX_ARRAYS];   /* input elements the call changed */
    int64_t first[BW_MAX_ARRAYS];     /* ... the first of them, -1 if none */
    int64_t output_moved;             /* in place: output elements unlike the input */
} check_part;

typedef struct {
    const bw_case_data *d;
    const bf16_t *data[BW_MAX_ARRAYS];
    int64_t part_len;
    check_part *parts;
} check_job;

static void part_init(check_part *p)
{
    bw_compare_init(&p->out);
    for (int k = 0; k < BW_MAX_ARRAYS; k++) {
        p->changed[k] = 0;
        p->first[k] = -1;
    }
    p->output_moved = 0;
}

/* Elements [begin, end): regenerate each block's inputs, compare the input
 * arrays with them, run the reference on them, compare the output. */
static void check_range(const check_job *j, int64_t begin, int64_t end, check_part *p)
{
    const bw_exercise *ex = j->d->ex;
    const bw_case *c = &j->d->c;
    const int last = ex->n_arrays - 1;
    const float alpha = ex->uses_alpha ? c->alpha : 0.0f;
    bf16_t in[BW_MAX_ARRAYS][CHECK_BLOCK];
    bf16_t expected[CHECK_BLOCK];
    bf16_t *regen[BW_MAX_ARRAYS], *ref[BW_MAX_ARRAYS];
    const bf16_t *inputs[BW_MAX_ARRAYS];
    int n_in = 0;
    for (int k = 0; k < ex->n_arrays; k++) {
        regen[k] = ref[k] = in[k];
        if (bw_exercise_is_input(ex, k))
            inputs[n_in++] = in[k];   /* the tolerance sees the inputs as generated */
    }
    ref[last] = expected;
    for (int64_t b = begin; b < end; b += CHECK_BLOCK) {
        int64_t len = end - b < CHECK_BLOCK ? end - b : CHECK_BLOCK;
        bw_inputs_fill_range(ex, c, regen, b, b + len);
        /* Inputs other than the output must come back bit for bit. */
        for (int k = 0; k < last; k++) {
            if (!bw_exercise_is_input(ex, k))
                continue;
            int64_t first = -1;
            int64_t changed = bw_count_changed(in[k], j->data[k] + b, len, &first, 1);
            if (changed > 0) {
                p->changed[k] += changed;
                if (p->first[k] < 0)
                    p->first[k] = b + first;
            }
        }
        /* The reference works on the arrays as the student's function would:
         * inputs as generated, output last (holding its input when in place). */
        if (ex->in_place)
            memcpy(expected, in[last], (size_t)len * sizeof(bf16_t));
        else
            fill_poison(expected, len);
        ex->reference(len, alpha, ref, 1);
        const bf16_t *out = j->data[last] + b;
        bw_compare_block(ex, alpha, inputs, expected, out, b, len, &p->out);
        if (ex->in_place)
            p->output_moved += bw_count_changed(in[last], out, len, NULL, 1);
    }
}

static void check_parts(int64_t p0, int64_t p1, void *vjob)
{
    const check_job *j = vjob;
    int64_t n = j->d->c.n;
    for (int64_t p = p0; p < p1; p++) {
        int64_t begin = p * j->part_len;
        int64_t end = begin + j->part_len < n ? begin + j->part_len : n;
        part_init(&j->parts[p]);
        check_range(j, begin, end, &j->parts[p]);
    }
}

static void check_guards(const bw_case_data *d, const uint8_t *images, bw_case_result *r)
{
    for (int k = 0; k < d->ex->n_arrays; k++) {
        int64_t first = 0, lastb = 0;
        const uint8_t *image = images + (uint64_t)k * d->layout.total_bytes;
        int64_t bad = bw_image_check_guards(image, &d->layout, &first, &lastb);
        if (bad > 0) {
            r->guard_bad_bytes += bad;
            if (r->guard_array < 0) {
                r->guard_array = k;
                r->guard_first = first;
                r->guard_last = lastb;
            }
        }
    }
}

void bw_case_data_check(const bw_case_data *d, const uint8_t *images, bw_case_result *r)
{
    const bw_exercise *ex = d->ex;
    const int64_t n = d->c.n;
    check_guards(d, images, r);

    check_job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    for (int k = 0; k < ex->n_arrays; k++)
        j.data[k] = array_data(d, images, k);
    int64_t blocks = (n + CHECK_BLOCK - 1) / CHECK_BLOCK;
    int64_t nparts = blocks < MAX_PARTS ? blocks : MAX_PARTS;
    check_part one;
    if (nparts > 0) {
        j.part_len = (blocks + nparts - 1) / nparts * CHECK_BLOCK;
        nparts = (n + j.part_len - 1) / j.part_len;
        j.parts = nparts > 1 ? malloc((size_t)nparts * sizeof *j.parts) : &one;
        if (!j.parts) {   /* no memory for the partials: one part, one thread */
            j.parts = &one;
            j.part_len = n;
            nparts = 1;
        }
        int64_t parts_per_thread = MIN_THREAD_ELEMS / j.part_len;
        parallel_for(nparts, d->threads, parts_per_thread > 0 ? parts_per_thread : 1, check_parts,
                     &j);
    }

    bw_compare_init(&r->out);
    int64_t changed[BW_MAX_ARRAYS] = {0}, first[BW_MAX_ARRAYS], moved = 0;
    for (int k = 0; k < BW_MAX_ARRAYS; k++)
        first[k] = -1;
    for (int64_t p = 0; p < nparts; p++) {
        const check_part *part = &j.parts[p];
        bw_compare_merge(&r->out, &part->out);
        for (int k = 0; k < ex->n_arrays; k++) {
            changed[k] += part->changed[k];
            if (first[k] < 0)
                first[k] = part->first[k];
        }
        moved += part->output_moved;
    }
    if (j.parts != &one)
        free(j.parts);
    for (int k = 0; k < ex->n_arrays && r->input_array < 0; k++)
        if (changed[k] > 0) {
            r->input_array = k;
            r->input_changed = changed[k];
            r->input_first = first[k];
        }
    r->nothing_written = ex->in_place ? moved == 0 : r->out.unwritten == n;
    r->outcome = (r->out.mismatches > 0 || r->guard_bad_bytes > 0 || r->input_changed > 0)
                     ? BW_OUTCOME_FAIL
                     : BW_OUTCOME_PASS;
}

uint64_t bw_case_data_output_hash(const bw_case_data *d, const uint8_t *images)
{
    const uint8_t *out = images + (uint64_t)(d->ex->n_arrays - 1) * d->layout.total_bytes;
    return bw_images_hash(out, 1, d->layout.total_bytes, &d->layout, d->c.n, RACE_HASH_KEY,
                          d->threads);
}
