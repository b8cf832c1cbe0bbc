/* See case_data.h. A span is the same byte range [begin, end) of every
 * array's image, holding elements [e0, e1): a RUN chunk, or for BENCH the
 * whole image. Both passes over a span run in parallel: the build by
 * element ranges (which also spreads the first touch of fresh memory over
 * the cores), the check by fixed parts merged in index order, so that what
 * it reports depends on neither the thread count nor the chunking. */
#include <stdlib.h>
#include <string.h>
#include "case_data.h"
#include "format_alloc.h"
#include "image_hash.h"
#include "inputs.h"
#include "parallel_for.h"
#include "format_value.h"
#include "stream_plan.h"
#include "stream_store.h"

#define CHECK_BLOCK 2048                  /* elements regenerated at a time, per array */
#define BUILD_BLOCK 2048                  /* elements generated at a time, per array */
#define MAX_PARTS 4096                    /* bounds the partial results to ~2 MB */
#define MIN_THREAD_ELEMS ((int64_t)1 << 16) /* less is not worth a thread */
#define RACE_HASH_KEY UINT64_C(0x7261636568617368)

typedef struct {
    uint64_t begin, end;
    int64_t e0, e1;
    uint8_t *at[BW_MAX_ARRAYS];           /* image byte `begin` of each array */
} span;

void bw_case_data_init(bw_case_data *d, const bw_exercise *ex, const bw_case *c, int sanitize,
                       int threads)
{
    memset(d, 0, sizeof *d);
    d->ex = ex;
    d->c = *c;
    d->layout = bw_image_layout_for(c->n, c->offset_elems, sanitize);
    d->threads = threads;
}

/* Element e0 of array k in the span. */
static bf16_t *span_data(const bw_case_data *d, const span *s, int k)
{
    return (bf16_t *)(void *)(s->at[k] + (d->layout.front_bytes + 2u * (uint64_t)s->e0 - s->begin));
}

static void fill_poison(bf16_t *a, int64_t len)
{
    for (int64_t i = 0; i < len; i++)
        a[i] = BW_POISON;
}

/* ---- build ---------------------------------------------------------------- */

typedef struct {
    const bw_case_data *d;
    int64_t e0;
    bf16_t *data[BW_MAX_ARRAYS];          /* element e0 */
} build_job;

/* Elements [begin, end) of the span, a block at a time: generated into a
 * buffer that stays in the core's cache, then streamed into the images
 * (stream_store.h). The images are read next by the worker's copy to the
 * device, not by this CPU. */
static void build_body(int64_t begin, int64_t end, void *p)
{
    const build_job *j = p;
    const bw_exercise *ex = j->d->ex;
    bf16_t block[BW_MAX_ARRAYS][BUILD_BLOCK];
    bf16_t *at[BW_MAX_ARRAYS];
    for (int k = 0; k < ex->n_arrays; k++) {
        at[k] = block[k];
        /* An output that is not read starts as BW_POISON, so elements the
         * kernel never wrote stand out. */
        if (!bw_exercise_is_input(ex, k))
            fill_poison(block[k], BUILD_BLOCK);
    }
    for (int64_t b = begin; b < end; b += BUILD_BLOCK) {
        int64_t len = end - b < BUILD_BLOCK ? end - b : BUILD_BLOCK;
        bw_inputs_fill_range(ex, &j->d->c, at, j->e0 + b, j->e0 + b + len);
        for (int k = 0; k < ex->n_arrays; k++)
            bw_stream_copy(j->data[k] + b, block[k], (size_t)len * sizeof(bf16_t));
    }
    bw_stream_fence();
}

static void fill_span(const bw_case_data *d, const span *s)
{
    build_job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    j.e0 = s->e0;
    for (int k = 0; k < d->ex->n_arrays; k++) {
        bw_image_fill_guards_in(s->at[k], &d->layout, s->begin, s->end);
        j.data[k] = span_data(d, s, k);
    }
    parallel_for(s->e1 - s->e0, d->threads, MIN_THREAD_ELEMS, build_body, &j);
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
    /* A slot holds 64 MiB, the guards a few hundred bytes: never fails. */
    if (kind == BW_REQ_RUN)
        (void)bw_stream_plan(req, BW_RING_SLOTS, BW_SLOT_BYTES);
}

/* ---- check ---------------------------------------------------------------- */

typedef struct {
    bw_compare_result out;
    int64_t changed[BW_MAX_ARRAYS];
    int64_t first[BW_MAX_ARRAYS];
    int output_moved;
    uint32_t hash;
} check_part;

typedef struct {
    const bw_case_data *d;
    int hash_only;
    int64_t e0, e1;
    const bf16_t *data[BW_MAX_ARRAYS];    /* element e0 */
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
    p->hash = 0;
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
        const bf16_t *out = j->data[last] + (b - j->e0);
        p->hash += bw_race_hash((const uint8_t *)out, b, len, RACE_HASH_KEY);
        if (j->hash_only)
            continue;
        bw_inputs_fill_range(ex, c, regen, b, b + len);
        /* Inputs other than the output must come back bit for bit. */
        for (int k = 0; k < last; k++) {
            if (!bw_exercise_is_input(ex, k))
                continue;
            int64_t first = -1;
            int64_t changed =
                bw_count_changed(in[k], j->data[k] + (b - j->e0), len, &first, 1);
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
        bw_compare_block(ex, alpha, inputs, expected, out, b, len, &p->out);
        if (ex->in_place && !p->output_moved)
            p->output_moved = memcmp(in[last], out, (size_t)len * sizeof *out) != 0;
    }
}

static void check_parts(int64_t p0, int64_t p1, void *vjob)
{
    const check_job *j = vjob;
    for (int64_t p = p0; p < p1; p++) {
        int64_t begin = j->e0 + p * j->part_len;
        int64_t end = begin + j->part_len < j->e1 ? begin + j->part_len : j->e1;
        part_init(&j->parts[p]);
        check_range(j, begin, end, &j->parts[p]);
    }
}

static void totals_init(bw_case_check *k, const bw_case_data *d, int hash_only)
{
    memset(k, 0, sizeof *k);
    k->d = d;
    k->hash_only = hash_only;
    bw_compare_init(&k->out);
    for (int a = 0; a < BW_MAX_ARRAYS; a++)
        k->first[a] = -1;
}

/* Adds the span's guards and elements to k, in index order. */
static void check_span(bw_case_check *k, const span *s)
{
    const bw_case_data *d = k->d;
    const bw_exercise *ex = d->ex;
    if (!k->hash_only)
        for (int a = 0; a < ex->n_arrays; a++)
            bw_image_scan_guards_in(s->at[a], &d->layout, s->begin, s->end, &k->guards[a]);

    check_job j;
    memset(&j, 0, sizeof j);
    j.d = d;
    j.hash_only = k->hash_only;
    j.e0 = s->e0;
    j.e1 = s->e1;
    for (int a = 0; a < ex->n_arrays; a++)
        j.data[a] = span_data(d, s, a);
    int64_t n = s->e1 - s->e0;
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
    for (int64_t p = 0; p < nparts; p++) {
        const check_part *part = &j.parts[p];
        bw_compare_merge(&k->out, &part->out);
        for (int a = 0; a < ex->n_arrays; a++) {
            k->changed[a] += part->changed[a];
            if (k->first[a] < 0)
                k->first[a] = part->first[a];
        }
        k->output_moved |= part->output_moved;
        k->out_hash += part->hash;
    }
    if (j.parts != &one)
        free(j.parts);
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
    for (int a = 0; a < ex->n_arrays && r->input_array < 0; a++)
        if (k->changed[a] > 0) {
            r->input_array = a;
            r->input_changed = k->changed[a];
            r->input_first = k->first[a];
        }
    r->nothing_written = ex->in_place ? k->output_moved == 0 : r->out.unwritten == k->d->c.n;
    r->outcome = (r->out.mismatches > 0 || r->guard_bad_bytes > 0 || r->input_changed > 0)
                     ? BW_OUTCOME_FAIL
                     : BW_OUTCOME_PASS;
}

/* ---- RUN: the chunk ops ---------------------------------------------------- */

static span chunk_span(const bw_request *run, uint8_t *ring, int64_t c)
{
    bw_chunk_span_t cs = bw_chunk_span(run, c);
    span s;
    memset(&s, 0, sizeof s);
    s.begin = cs.begin;
    s.end = cs.end;
    s.e0 = cs.e0;
    s.e1 = cs.e1;
    for (int k = 0; k < run->n_arrays; k++)
        s.at[k] = bw_slot_part(ring, run, c, k);
    return s;
}

static void fill_chunk(void *ctx, const bw_request *run, uint8_t *ring, int64_t c)
{
    const bw_case_check *k = ctx;
    span s = chunk_span(run, ring, c);
    fill_span(k->d, &s);
}

static void take_chunk(void *ctx, const bw_request *run, const uint8_t *ring, int64_t c)
{
    span s = chunk_span(run, (uint8_t *)ring, c);
    check_span(ctx, &s);
}

bw_chunk_ops bw_case_data_chunk_ops(const bw_case_data *d, bw_case_check *k, int hash_only)
{
    totals_init(k, d, hash_only);
    bw_chunk_ops ops = {fill_chunk, take_chunk, k, NULL};
    return ops;
}

/* ---- BENCH: whole images ---------------------------------------------------- */

static span whole_span(const bw_case_data *d, const uint8_t *images)
{
    span s;
    memset(&s, 0, sizeof s);
    s.begin = 0;
    s.end = d->layout.total_bytes;
    s.e0 = 0;
    s.e1 = d->c.n;
    for (int k = 0; k < d->ex->n_arrays; k++)
        s.at[k] = (uint8_t *)images + (uint64_t)k * d->layout.total_bytes;
    return s;
}

uint8_t *bw_case_data_build(const bw_case_data *d, bw_shm *shm, char **why)
{
    uint64_t total = (uint64_t)d->ex->n_arrays * d->layout.total_bytes;
    uint8_t *base = bw_shm_reserve(shm, (size_t)total);
    if (!base) {
        char size[BW_SIZE_TEXT];
        bw_format_bytes(total, size);
        *why = bw_format_alloc("could not reserve %s of shared memory", size);
        return NULL;
    }
    span s = whole_span(d, base);
    fill_span(d, &s);
    return base;
}

void bw_case_data_check(const bw_case_data *d, const uint8_t *images, bw_case_result *r)
{
    bw_case_check k;
    totals_init(&k, d, 0);
    span s = whole_span(d, images);
    check_span(&k, &s);
    bw_case_check_finish(&k, r);
}
