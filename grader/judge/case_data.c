/* See case_data.h. A span is the same chunk of every array's image: a RUN
 * chunk, or for BENCH the whole images (case_check.h). Both passes over a
 * span run in parallel: the build by element ranges (which also spreads the
 * first touch of fresh memory over the cores), the check by fixed parts
 * merged in index order (each shape's check_*.c), so that what it reports
 * depends on neither the thread count nor the chunking. */
#include <stdlib.h>
#include <string.h>
#include "case_check.h"
#include "format_alloc.h"
#include "inputs.h"
#include "parallel_for.h"
#include "perturb.h"
#include "format_value.h"
#include "stream_plan.h"
#include "stream_store.h"
#include "transplant.h"

#define BUILD_BLOCK 2048                  /* elements generated at a time, per array */

void bw_case_data_init(bw_case_data *d, const bw_exercise *ex, const bw_case *c, int sanitize,
                       int threads)
{
    memset(d, 0, sizeof *d);
    d->ex = ex;
    d->c = *c;
    d->threads = threads;
    bw_case_scalars(ex, c, d->scalars);
    for (int k = 0; k < ex->n_arrays; k++) {
        const bw_array_decl *a = &ex->arrays[k];
        int whole = a->extent == BW_EXTENT_ONE;
        /* A result of one element sits at the start of its 256 bytes: the
         * contract promises it its type's alignment, nothing odd. */
        d->layout[k] = bw_image_layout_for(bw_exercise_count_of(ex, k, c->n), bw_type_bytes(a->type),
                                           whole ? 0 : c->offset_elems, sanitize);
        d->images_bytes += d->layout[k].total_bytes;
    }
}

uint64_t bw_case_data_place(const bw_case_data *d, int k)
{
    uint64_t at = 0;
    for (int a = 0; a < k; a++)
        at += d->layout[a].total_bytes;
    return at;
}

int64_t bw_check_parts(int64_t n, int64_t *part_len, int64_t *per_thread)
{
    int64_t blocks = (n + CHECK_BLOCK - 1) / CHECK_BLOCK;
    int64_t nparts = blocks < MAX_PARTS ? blocks : MAX_PARTS;
    if (nparts <= 0) {
        *part_len = 0;
        *per_thread = 1;
        return 0;
    }
    *part_len = (blocks + nparts - 1) / nparts * CHECK_BLOCK;
    *per_thread = MIN_THREAD_ELEMS / *part_len > 0 ? MIN_THREAD_ELEMS / *part_len : 1;
    return (n + *part_len - 1) / *part_len;
}

void *bw_check_parts_alloc(int64_t n, size_t part_size, void *one, int64_t *count,
                           int64_t *part_len, int64_t *per_thread)
{
    *count = bw_check_parts(n, part_len, per_thread);
    void *parts = *count > 1 ? malloc((size_t)*count * part_size) : one;
    if (!parts) {
        parts = one;
        *part_len = n;
        *count = 1;
    }
    return parts;
}

void bw_check_parts_free(void *parts, void *one)
{
    if (parts != one)
        free(parts);
}

void bw_check_inputs_kept(const bw_exercise *ex, void *const *regen, const uint8_t *const *data,
                          int64_t e0, int64_t b, int64_t len, int64_t *changed, int64_t *first)
{
    for (int k = 0; k < ex->n_arrays; k++) {
        if (k == ex->output || !bw_exercise_is_input(ex, k))
            continue;
        int eb = bw_type_bytes(ex->arrays[k].type);
        int64_t at = -1;
        int64_t n = bw_count_changed_bytes(regen[k], data[k] + (b - e0) * eb, len, eb, &at, 1);
        if (n > 0) {
            changed[k] += n;
            if (first[k] < 0)
                first[k] = b + at;
        }
    }
}

void bw_fill_unwritten(bw_type t, void *p, int64_t len, int whole)
{
    /* A reduction's result: a finite fill (case_data.h says why). */
    uint32_t v = whole ? bw_elem_from_float(t, BW_SUM_FILL) : bw_type_poison(t);
    for (int64_t i = 0; i < len; i++)
        bw_elem_store(t, p, i, v);
}

/* ---- build ---------------------------------------------------------------- */

typedef struct {
    const bw_case_data *d;
    int64_t e0;
    uint8_t *data[BW_MAX_ARRAYS];         /* element e0 of each n-element array */
} build_job;

/* Elements [begin, end) of the span, a block at a time: generated into a
 * buffer that stays in the core's cache, then streamed into the images
 * (stream_store.h). The images are read next by the worker's copy to the
 * device, not by this CPU. */
static void build_body(int64_t begin, int64_t end, void *p)
{
    const build_job *j = p;
    const bw_exercise *ex = j->d->ex;
    uint8_t block[BW_MAX_ARRAYS][BUILD_BLOCK * 4];
    void *at[BW_MAX_ARRAYS];
    for (int k = 0; k < ex->n_arrays; k++) {
        at[k] = block[k];
        /* An output that is not read starts as the poison, so elements the
         * kernel never wrote stand out. */
        if (j->data[k] && !bw_exercise_is_input(ex, k))
            bw_fill_unwritten(ex->arrays[k].type, block[k], BUILD_BLOCK, 0);
    }
    for (int64_t b = begin; b < end; b += BUILD_BLOCK) {
        int64_t len = end - b < BUILD_BLOCK ? end - b : BUILD_BLOCK;
        bw_inputs_fill_range(ex, &j->d->c, at, j->e0 + b, j->e0 + b + len);
        for (int k = 0; k < ex->n_arrays; k++) {
            if (!j->data[k])
                continue;
            size_t eb = (size_t)bw_type_bytes(ex->arrays[k].type);
            bw_stream_copy(j->data[k] + (size_t)b * eb, block[k], (size_t)len * eb);
        }
    }
    bw_stream_fence();
}

static void fill_span(const bw_case_data *d, const bw_span *s)
{
    const bw_exercise *ex = d->ex;
    build_job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    j.e0 = s->e0;
    for (int k = 0; k < ex->n_arrays; k++) {
        bw_image_fill_guards_in(s->at[k], &d->layout[k], s->begin[k], s->end[k]);
        if (ex->arrays[k].extent != BW_EXTENT_ONE)
            j.data[k] = bw_span_data(d, s, k);
        else if (s->ae1[k] > s->ae0[k])   /* a whole result, where this span holds it */
            bw_fill_unwritten(ex->arrays[k].type, bw_span_data(d, s, k), s->ae1[k] - s->ae0[k], 1);
    }
    parallel_for(s->e1 - s->e0, d->threads, MIN_THREAD_ELEMS, build_body, &j);
}

/* A reduction whose result is the plain sum of its one input's elements
 * (its term is the input itself), as perturb.h assumes. */
static int sums_its_input(const bw_exercise *ex, const float *scalars)
{
    static const double probe[] = {0.0, 1.0, -2.5, 0x1p-9, 255 * 0x1p-8, -3e30};
    int inputs = 0;
    for (int k = 0; k < ex->n_arrays; k++)
        inputs += bw_exercise_is_input(ex, k);
    if (ex->shape != BW_SHAPE_REDUCTION || inputs != 1 || !ex->rule->term)
        return 0;
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        double in[1] = {probe[i]};
        if (ex->rule->term(scalars, in) != probe[i])
            return 0;
    }
    return 1;
}

void bw_case_data_request(const bw_case_data *d, bw_req_kind kind, bw_request *req)
{
    const bw_exercise *ex = d->ex;
    memset(req, 0, sizeof *req);
    req->magic = BW_PROTO_MAGIC;
    req->kind = (uint32_t)kind;
    req->n = d->c.n;
    req->rows = (int32_t)d->c.rows;
    req->cols = (int32_t)d->c.cols;
    req->n_scalars = ex->n_scalars;
    for (int s = 0; s < ex->n_scalars && s < BW_MAX_CALL_SCALARS; s++)
        req->scalars[s] = d->scalars[s];
    req->n_arrays = ex->n_arrays;
    req->by_value = -1;
    for (int k = 0; k < ex->n_arrays; k++) {
        const bw_array_decl *a = &ex->arrays[k];
        bw_array_geom *g = &req->arrays[k];
        const bw_image_layout *l = &d->layout[k];
        g->elem_bytes = (uint32_t)bw_type_bytes(a->type);
        g->elem_type = (uint32_t)a->type;
        g->count = bw_exercise_count_of(ex, k, d->c.n);
        g->front_bytes = l->front_bytes;
        g->data_bytes = l->data_bytes;
        g->back_bytes = l->back_bytes;
        g->image_bytes = l->total_bytes;
        g->place = bw_case_data_place(d, k);
        g->flags = (a->extent == BW_EXTENT_ONE ? BW_ARRAY_WHOLE : 0u) |
                   (a->extent == BW_EXTENT_ROWS_COLS ? BW_ARRAY_ROTATE_OUTER : 0u) |
                   (a->extent == BW_EXTENT_COLS_ROWS ? BW_ARRAY_TRANSPOSED : 0u) |
                   (bw_exercise_is_input(ex, k) ? BW_ARRAY_INPUT : 0u) |
                   (k == ex->output ? BW_ARRAY_OUTPUT : 0u);
        /* BENCH rotates every array by the same amount r in [1, L): a vector
         * by r elements, a rows x cols matrix by r whole rows, its cols x
         * rows transpose by r elements within each row: a transpose of the
         * rotated input is the rotated transpose. */
        g->outer = a->extent == BW_EXTENT_ROWS_COLS ? d->c.rows
                   : a->extent == BW_EXTENT_COLS_ROWS ? d->c.cols : 1;
        g->inner = g->count / (g->outer > 0 ? g->outer : 1);
        if (a->extent == BW_EXTENT_ONE)
            req->by_value = k;
    }
    if (kind == BW_REQ_BENCH && req->by_value >= 0 && sums_its_input(ex, d->scalars))
        req->perturb = BW_PERTURB_MAX;
    if (kind == BW_REQ_BENCH && req->by_value < 0)
        req->transplant = BW_TRANSPLANT_MAX;
    req->shm_bytes = d->images_bytes;
    /* A slot holds 64 MiB, the guards a few hundred bytes: never fails. */
    if (kind == BW_REQ_RUN)
        (void)bw_stream_plan(req, BW_RING_SLOTS, BW_SLOT_BYTES);
}

/* ---- check ---------------------------------------------------------------- */

static void totals_init(bw_case_check *k, const bw_case_data *d, int hash_only)
{
    memset(k, 0, sizeof *k);
    k->d = d;
    k->hash_only = hash_only;
    bw_compare_init(&k->out);
    for (int a = 0; a < BW_MAX_ARRAYS; a++)
        k->first[a] = -1;
    k->facts.min_lsb = INT32_MAX;
}

/* Adds the span's guards and elements to k, in index order. */
static void check_span(bw_case_check *k, const bw_span *s)
{
    const bw_case_data *d = k->d;
    const bw_exercise *ex = d->ex;
    if (!k->hash_only)
        for (int a = 0; a < ex->n_arrays; a++)
            bw_image_scan_guards_in(s->at[a], &d->layout[a], s->begin[a], s->end[a], &k->guards[a]);
    switch (ex->shape) {
    case BW_SHAPE_ELEMENTWISE: bw_check_elementwise(k, s); break;
    case BW_SHAPE_REDUCTION: bw_check_reduction(k, s); break;
    case BW_SHAPE_MATRIX: bw_check_matrix(k, s); break;
    }
    k->chunks_taken++;
}

void bw_case_check_finish(const bw_case_check *k, bw_case_result *r)
{
    const bw_exercise *ex = k->d->ex;
    for (int a = 0; a < ex->n_arrays; a++) {
        const bw_guard_scan *g = &k->guards[a];
        if (g->count > 0) {
            r->guard_bad_bytes += g->count;
            if (r->guard_array < 0) {
                r->guard_array = a;
                r->guard_first = g->first;
                r->guard_last = g->last;
            }
        }
    }
    r->out = k->out;
    r->shape = k->shape;
    for (int a = 0; a < ex->n_arrays && r->input_array < 0; a++)
        if (k->changed[a] > 0) {
            r->input_array = a;
            r->input_changed = k->changed[a];
            r->input_first = k->first[a];
        }
    if (ex->shape == BW_SHAPE_REDUCTION)
        bw_check_reduction_finish(k, r);
    int64_t out_count = bw_exercise_count_of(ex, ex->output, k->d->c.n);
    r->nothing_written = ex->in_place ? k->output_moved == 0 : r->out.unwritten == out_count;
    r->outcome = (r->out.mismatches > 0 || r->guard_bad_bytes > 0 || r->input_changed > 0)
                     ? BW_OUTCOME_FAIL
                     : BW_OUTCOME_PASS;
}

/* ---- RUN: the chunk ops ---------------------------------------------------- */

static bw_span chunk_span(const bw_request *run, uint8_t *ring, int64_t c)
{
    bw_span s;
    memset(&s, 0, sizeof s);
    for (int k = 0; k < run->n_arrays; k++) {
        bw_chunk_span_t cs = bw_chunk_span(run, c, k);
        s.begin[k] = cs.begin;
        s.end[k] = cs.end;
        s.ae0[k] = cs.e0;
        s.ae1[k] = cs.e1;
        s.at[k] = bw_slot_part(ring, run, c, k);
        if (!(run->arrays[k].flags & BW_ARRAY_WHOLE)) {
            s.e0 = cs.e0;
            s.e1 = cs.e1;
        }
    }
    return s;
}

static void fill_chunk(void *ctx, const bw_request *run, uint8_t *ring, int64_t c)
{
    const bw_case_check *k = ctx;
    bw_span s = chunk_span(run, ring, c);
    fill_span(k->d, &s);
}

static void take_chunk(void *ctx, const bw_request *run, const uint8_t *ring, int64_t c)
{
    bw_span s = chunk_span(run, (uint8_t *)ring, c);
    check_span(ctx, &s);
}

bw_chunk_ops bw_case_data_chunk_ops(const bw_case_data *d, bw_case_check *k, int hash_only)
{
    totals_init(k, d, hash_only);
    bw_chunk_ops ops = {fill_chunk, take_chunk, k, NULL};
    return ops;
}

/* ---- BENCH: whole images ---------------------------------------------------- */

static bw_span whole_span(const bw_case_data *d, const uint8_t *images)
{
    bw_span s;
    memset(&s, 0, sizeof s);
    s.e0 = 0;
    s.e1 = d->c.n;
    for (int k = 0; k < d->ex->n_arrays; k++) {
        s.begin[k] = 0;
        s.end[k] = d->layout[k].total_bytes;
        s.ae0[k] = 0;
        s.ae1[k] = bw_exercise_count_of(d->ex, k, d->c.n);
        s.at[k] = (uint8_t *)images + bw_case_data_place(d, k);
    }
    return s;
}

uint8_t *bw_case_data_build(const bw_case_data *d, bw_shm *shm, char **why)
{
    uint8_t *base = bw_shm_reserve(shm, (size_t)d->images_bytes);
    if (!base) {
        char size[BW_SIZE_TEXT];
        bw_format_bytes(d->images_bytes, size);
        *why = bw_format_alloc("could not reserve %s of shared memory", size);
        return NULL;
    }
    bw_span s = whole_span(d, base);
    fill_span(d, &s);
    return base;
}

void bw_case_data_check(const bw_case_data *d, const uint8_t *images, bw_case_result *r)
{
    bw_case_check k;
    totals_init(&k, d, 0);
    bw_span s = whole_span(d, images);
    check_span(&k, &s);
    bw_case_check_finish(&k, r);
}
