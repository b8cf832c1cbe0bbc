/* The worker's moved elements (grader/protocol/transplant.c), on the CPU:
 * arrays rotated as the worker rotates them, the moves applied to the
 * inputs, a pointwise call run on them (an axpy-like one in place, a sum
 * into a third array, a transpose), and every array hashed keyed by its
 * unrotated places. An honest call must give the validated hash plus the
 * plan's delta; the validated output replayed, rotated, must not. The
 * device half (bw_move_elements) only copies the planned elements; the
 * corpus runs on a GPU check it end to end (rotation_replay). */
#include <stdlib.h>
#include <string.h>
#include "check_support.h"
#include "element.h"
#include "mix64.h"
#include "transplant.h"

enum { AXPY, SUM, TRANSPOSE };   /* the call's kind */

typedef struct {
    bw_request q;
    int kind;
    uint8_t *images;     /* the validated call's arrays, unrotated, back to back */
    void *pristine[3];   /* each array before the validated call */
    void *live[3];       /* as a sample sees them: rotated, moved, then called */
} call_model;

/* Where the element at live index i of g's array came from: the worker's
 * rotation (sample_check.cu), written out on its own. */
static int64_t source(const bw_array_geom *g, int64_t r, int64_t i)
{
    const int64_t outer = g->outer > 0 ? g->outer : 1, inner = g->count / outer;
    if (outer == 1)
        return (i + r) % g->count;
    if (g->flags & BW_ARRAY_ROTATE_OUTER)
        return (i + r * inner) % g->count;
    return (i / inner) * inner + (i % inner + r) % inner;
}

static uint32_t mix_bits(bw_type t, uint64_t z)
{
    return (uint32_t)bw_mix64(z) & (t == BW_F32 ? 0xFFFFFFFFu : 0xFFFFu);
}

/* The call on arrays a (unrotated or rotated alike): pointwise in bits, so
 * that its output is exact and the same wherever it runs. */
static void call(call_model *m, void *const a[3])
{
    const bw_request *q = &m->q;
    const bw_type t = (bw_type)q->arrays[0].elem_type;
    for (int64_t i = 0; i < q->n; i++) {
        if (m->kind == AXPY) {
            uint32_t x = bw_elem_load(t, a[0], i), y = bw_elem_load(t, a[1], i);
            bw_elem_store(t, a[1], i, (3u * x + y) & (t == BW_F32 ? 0xFFFFFFFFu : 0xFFFFu));
        } else if (m->kind == SUM) {
            uint32_t x = bw_elem_load(t, a[0], i), y = bw_elem_load(t, a[1], i);
            bw_elem_store(t, a[2], i, (x ^ (y << 1)) & (t == BW_F32 ? 0xFFFFFFFFu : 0xFFFFu));
        } else {
            const int64_t r = i / q->cols, c = i % q->cols;
            bw_elem_store(t, a[1], c * q->rows + r, bw_elem_load(t, a[0], i));
        }
    }
}

static void model_init(call_model *m, int kind, bw_type t, int64_t rows, int64_t cols, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    bw_request *q = &m->q;
    m->kind = kind;
    q->n = rows * cols;
    q->rows = (int32_t)rows;
    q->cols = (int32_t)cols;
    q->n_arrays = kind == SUM ? 3 : 2;
    const int eb = bw_type_bytes(t);
    uint64_t place = 0;
    for (int k = 0; k < q->n_arrays; k++) {
        bw_array_geom *g = &q->arrays[k];
        g->elem_bytes = (uint32_t)eb;
        g->elem_type = (uint32_t)t;
        g->count = q->n;
        g->front_bytes = 64 + 2 * (uint64_t)k;   /* images need not be aligned */
        g->data_bytes = (uint64_t)q->n * (uint64_t)eb;
        g->image_bytes = g->front_bytes + g->data_bytes + 32;
        g->place = place;
        place += g->image_bytes;
        const int input = kind == SUM ? k < 2 : kind == AXPY ? 1 : k == 0;
        const int output = k == (kind == SUM ? 2 : 1);
        g->flags = (input ? BW_ARRAY_INPUT : 0u) | (output ? BW_ARRAY_OUTPUT : 0u);
        g->outer = 1;
        if (kind == TRANSPOSE) {
            g->outer = k == 0 ? rows : cols;
            g->flags |= k == 0 ? BW_ARRAY_ROTATE_OUTER : BW_ARRAY_TRANSPOSED;
        }
        g->inner = g->count / g->outer;
        m->pristine[k] = malloc((size_t)g->data_bytes);
        m->live[k] = malloc((size_t)g->data_bytes);
        ck_assert(m->pristine[k] && m->live[k]);
        for (int64_t i = 0; i < q->n; i++)   /* outputs start as poison: anything */
            bw_elem_store(t, m->pristine[k], i, mix_bits(t, seed * 31 + (uint64_t)(k * q->n + i)));
    }
    m->images = calloc(1, (size_t)place);
    ck_assert_ptr_nonnull(m->images);
    void *final[3];
    for (int k = 0; k < q->n_arrays; k++) {
        final[k] = m->images + q->arrays[k].place + q->arrays[k].front_bytes;
        memcpy(final[k], m->pristine[k], (size_t)q->arrays[k].data_bytes);
    }
    call(m, final);   /* the validated call, unrotated */
}

static void model_free(call_model *m)
{
    for (int k = 0; k < m->q.n_arrays; k++) {
        free(m->pristine[k]);
        free(m->live[k]);
    }
    free(m->images);
}

/* Every array's hash, keyed by unrotated place (mix64.h): what the
 * worker's bw_hash_array adds up. */
static uint64_t hash_of(const call_model *m, void *const a[3], int64_t r, uint64_t key)
{
    uint64_t h = 0;
    for (int k = 0; k < m->q.n_arrays; k++) {
        const bw_array_geom *g = &m->q.arrays[k];
        const int units = (int)g->elem_bytes / 2;
        for (int64_t i = 0; i < g->count; i++) {
            uint32_t bits = bw_elem_load((bw_type)g->elem_type, a[k], i);
            for (int u = 0; u < units; u++)
                h += bw_hash_term(key, k, (uint64_t)source(g, r, i) * (uint64_t)units + (uint64_t)u,
                                  (uint16_t)(bits >> (16 * u)));
        }
    }
    return h;
}

/* One sample: every array rotated by r from its pristine copy (or, replay,
 * from the validated call's), the moves applied to the inputs as
 * bench_student.c applies them, then the call (not for a replay). */
static void sample(call_model *m, int64_t r, const bw_transplant *t, int replay)
{
    const bw_request *q = &m->q;
    for (int k = 0; k < q->n_arrays; k++) {
        const bw_array_geom *g = &q->arrays[k];
        const bw_type ty = (bw_type)g->elem_type;
        const void *from = replay ? (const void *)(m->images + g->place + g->front_bytes) : m->pristine[k];
        for (int64_t i = 0; i < g->count; i++)
            bw_elem_store(ty, m->live[k], i, bw_elem_load(ty, from, source(g, r, i)));
        if (replay || !(g->flags & BW_ARRAY_INPUT))
            continue;
        for (int j = 0; j < t->count; j++) {
            int64_t to = bw_rotated_index(g, r, bw_transplant_place(q, k, t->to[j]));
            bw_elem_store(ty, m->live[k], to,
                          bw_elem_load(ty, m->pristine[k], bw_transplant_place(q, k, t->from[j])));
        }
    }
    if (!replay)
        call(m, m->live);
}

/* Catches a rotated index in the wrong direction or on the wrong axis, a
 * transposed array's place taken as the input's, a delta with the terms'
 * signs or units wrong, and moves that change nothing. */
START_TEST(an_honest_call_gives_the_moved_hash_and_a_replay_does_not)
{
    const struct { int kind; bw_type t; int64_t rows, cols; } shapes[] = {
        {AXPY, BW_BF16, 1, 5003}, {AXPY, BW_F32, 1, 4099}, {SUM, BW_BF16, 1, 3001},
        {TRANSPOSE, BW_BF16, 37, 53}, {TRANSPOSE, BW_BF16, 48, 48}, {TRANSPOSE, BW_F32, 5, 301},
        {TRANSPOSE, BW_BF16, 1, 999}, {TRANSPOSE, BW_BF16, 999, 1},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        call_model m;
        model_init(&m, shapes[s].kind, shapes[s].t, shapes[s].rows, shapes[s].cols, 7 + s);
        void *final[3];
        for (int k = 0; k < m.q.n_arrays; k++)
            final[k] = m.images + m.q.arrays[k].place + m.q.arrays[k].front_bytes;
        const uint64_t key = bw_mix64(99 + s);
        const uint64_t want = hash_of(&m, final, 0, key);
        const int64_t axis = shapes[s].kind == TRANSPOSE ? shapes[s].rows : m.q.n;
        uint64_t rng = 5 + s;
        for (int c = 0; c < 6; c++) {
            const int64_t r = axis > 1 ? 1 + (c * 7919) % (axis - 1) : 0;
            bw_transplant t;
            ck_assert_int_eq(bw_transplant_plan(&rng, &m.q, m.images, BW_TRANSPLANT_MAX, &t), 0);
            ck_assert_int_eq(t.count, BW_TRANSPLANT_MAX);
            const uint64_t delta = bw_transplant_hash_delta(&m.q, m.images, key, &t);
            ck_assert_msg(delta != 0, "shape %zu: the moves changed no hash", s);
            sample(&m, r, &t, 0);
            ck_assert_msg(hash_of(&m, m.live, r, key) == want + delta,
                          "shape %zu, r %lld: an honest call's hash is not the moved one", s,
                          (long long)r);
            sample(&m, r, &t, 1);
            ck_assert_msg(hash_of(&m, m.live, r, key) == want,
                          "shape %zu, r %lld: the replay model is off", s, (long long)r);
        }
        model_free(&m);
    }
}
END_TEST

/* Catches a plan that repeats a place, moves an element onto its own value,
 * leaves the call's range, repeats itself across calls, or plans for an
 * array too short or an output too uniform to take it (where only the
 * inputs differ, a replay of the output would pass the move). */
START_TEST(plans_are_distinct_fresh_and_only_where_they_change_something)
{
    call_model m;
    model_init(&m, SUM, BW_BF16, 1, 2000, 3);
    uint64_t rng = 1;
    bw_transplant a, b;
    ck_assert_int_eq(bw_transplant_plan(&rng, &m.q, m.images, BW_TRANSPLANT_MAX, &a), 0);
    ck_assert_int_eq(bw_transplant_plan(&rng, &m.q, m.images, BW_TRANSPLANT_MAX, &b), 0);
    int same = 0;
    for (int j = 0; j < a.count; j++) {
        ck_assert(a.to[j] >= 0 && a.to[j] < m.q.n && a.from[j] >= 0 && a.from[j] < m.q.n);
        for (int i = 0; i < j; i++)
            ck_assert(a.to[i] != a.to[j]);
        same += a.to[j] == b.to[j];
        const bw_array_geom *g = &m.q.arrays[2];   /* the output */
        const uint8_t *d = m.images + g->place + g->front_bytes;
        ck_assert(bw_elem_load(BW_BF16, d, a.to[j]) != bw_elem_load(BW_BF16, d, a.from[j]));
    }
    ck_assert_int_lt(same, 2);
    model_free(&m);

    model_init(&m, AXPY, BW_BF16, 1, 4 * BW_TRANSPLANT_MAX - 1, 3);
    ck_assert_int_eq(bw_transplant_plan(&rng, &m.q, m.images, BW_TRANSPLANT_MAX, &a), -1);
    ck_assert_int_eq(a.count, 0);
    model_free(&m);

    /* One output element unlike the rest: pairs that differ are rare, and
     * a plan keeps the moves it found rather than none (the rotation alone
     * is what a replay beats). */
    model_init(&m, SUM, BW_BF16, 1, 1000, 3);
    uint8_t *out = m.images + m.q.arrays[2].place + m.q.arrays[2].front_bytes;
    memset(out, 0, (size_t)m.q.arrays[2].data_bytes);
    bw_elem_store(BW_BF16, out, 990, 0x3f80u);
    int partial = 0;
    for (uint64_t seed = 1; seed <= 64; seed++) {
        uint64_t z = seed;
        if (bw_transplant_plan(&z, &m.q, m.images, BW_TRANSPLANT_MAX, &a) != 0) {
            ck_assert_int_eq(a.count, 0);
            continue;
        }
        partial += a.count < BW_TRANSPLANT_MAX;
        for (int j = 0; j < a.count; j++)
            ck_assert(a.to[j] == 990 || a.from[j] == 990);
    }
    ck_assert_msg(partial > 0, "no plan kept fewer moves than asked");
    model_free(&m);

    /* Every output element alike, the inputs not: a move would change no
     * output a replay writes, so there is nothing to move. */
    model_init(&m, SUM, BW_BF16, 1, 1000, 3);
    memset(m.images + m.q.arrays[2].place, 0, (size_t)m.q.arrays[2].image_bytes);
    ck_assert_int_eq(bw_transplant_plan(&rng, &m.q, m.images, BW_TRANSPLANT_MAX, &a), -1);
    model_free(&m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("transplant");
    TCase *t = tcase_create("moves");
    tcase_add_test(t, an_honest_call_gives_the_moved_hash_and_a_replay_does_not);
    tcase_add_test(t, plans_are_distinct_fresh_and_only_where_they_change_something);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return bw_run_suite(suite()); }
