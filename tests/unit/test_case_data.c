/* The images of a case and their check (case_data.c): the check
 * regenerates inputs and expected values block by block, so these tests put
 * a "kernel" result computed the plain way (whole arrays, bw_inputs_fill and
 * the reference) into the images and ask the check to judge it. Sizes cross
 * the check's block (2048) and part boundaries, and run on 1 and 4 threads.
 *
 * A RUN moves the images chunk by chunk through a ring (stream_plan.h).
 * Every check here is also done that way, through rings small enough that
 * the sizes above cross many chunks, and must agree with the check of the
 * whole images in every field; and the chunks the fill writes must add up
 * to the whole images, byte for byte. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "case_data.h"
#include "check_support.h"
#include "inputs.h"
#include "stream_plan.h"
#include "validate.h"

static const int64_t sizes[] = {1, 37, 2048, 2049, 4097, 70001, 300007};

/* A matrix of n elements: the most nearly square rows x cols (1 x n when n
 * is prime). */
static int64_t rows_for(int64_t n)
{
    int64_t rows = 1;
    for (int64_t d = 1; d * d <= n; d++)
        if (n % d == 0)
            rows = d;
    return rows;
}

static bw_case make_case(const bw_exercise *ex, int64_t n, int offset, bw_value_class v)
{
    bw_case c;
    memset(&c, 0, sizeof c);
    c.n = n;
    c.rows = ex->shape == BW_SHAPE_MATRIX ? rows_for(n) : 1;
    c.cols = n / c.rows;
    ck_assert_int_lt(offset, bw_exercise_max_offset(ex));
    c.offset_elems = offset;
    c.values = v;
    c.alpha = ex->uses_alpha ? -1.6875f : 0.0f;
    c.alpha_kind = "test";
    c.group = BW_GROUP_MEDIUM;
    c.data_seed = 0xC0FFEEu + (uint64_t)n;
    return c;
}

typedef struct {
    bw_shm *shm;
    uint8_t *images;
    bw_case_data d;
} built;

static built build(const bw_exercise *ex, const bw_case *c, int threads)
{
    built b;
    b.shm = bw_shm_create();
    ck_assert_ptr_nonnull(b.shm);
    bw_case_data_init(&b.d, ex, c, 0, threads);
    char *why = NULL;
    b.images = bw_case_data_build(&b.d, b.shm, &why);
    ck_assert_msg(b.images != NULL, "build: %s", why ? why : "?");
    return b;
}

/* Element 0 of array k in the whole images (laid out back to back). */
static void *data_of(built *b, int k)
{
    return bw_image_data(b->images + bw_case_data_place(&b->d, k), &b->d.layout[k]);
}

/* The same for a bf16 array (haxpy's and vector_sum's). */
static bf16_t *data(built *b, int k)
{
    ck_assert_int_eq(b->d.ex->arrays[k].type, BW_BF16);
    return data_of(b, k);
}

/* What a correct kernel leaves in the output of an elementwise exercise:
 * the reference over whole arrays, computed apart from the check's
 * block-by-block path. */
static void write_correct_output(built *b)
{
    const bw_exercise *ex = b->d.ex;
    int64_t n = b->d.c.n;
    ck_assert_int_eq(ex->shape, BW_SHAPE_ELEMENTWISE);
    void *arr[BW_MAX_ARRAYS] = {0};
    for (int k = 0; k < ex->n_arrays; k++) {
        arr[k] = malloc((size_t)n * (size_t)bw_type_bytes(ex->arrays[k].type));
        ck_assert_ptr_nonnull(arr[k]);
    }
    bw_inputs_fill(ex, &b->d.c, arr, 3);
    /* The images must hold exactly these inputs. */
    for (int k = 0; k < ex->n_arrays; k++)
        if (bw_exercise_is_input(ex, k))
            ck_assert_int_eq(memcmp(arr[k], data_of(b, k), (size_t)b->d.layout[k].data_bytes), 0);
    /* An output that is not read holds the poison when the call starts. */
    if (!ex->in_place) {
        bw_type t = ex->arrays[ex->output].type;
        for (int64_t i = 0; i < n; i++)
            bw_elem_store(t, arr[ex->output], i, bw_type_poison(t));
    }
    ex->rule->reference(n, b->d.scalars, arr, 1);
    memcpy(data_of(b, ex->output), arr[ex->output], (size_t)b->d.layout[ex->output].data_bytes);
    for (int k = 0; k < ex->n_arrays; k++)
        free(arr[k]);
}

/* Two rings: chunks of ~1,500 elements (under a check block) and of
 * ~32,000 (several blocks). */
#define TEST_SLOTS 3
static const uint64_t slot_sizes[] = {12288, 196608};

static bw_request plan(const built *b, uint64_t slot_bytes)
{
    bw_request q;
    bw_case_data_request(&b->d, BW_REQ_RUN, &q);
    ck_assert_int_eq(bw_stream_plan(&q, TEST_SLOTS, slot_bytes), 0);
    return q;
}

/* What the worker does with the chunks (run_chunks.c): each chunk of a
 * slot goes to its place in the device images, and back. The images here
 * lie back to back as the whole-image build lays them out. */
static void move_chunk(uint8_t *ring, uint8_t *images, const bw_case_data *d, const bw_request *q,
                       int64_t c, int to_images)
{
    for (int k = 0; k < q->n_arrays; k++) {
        bw_chunk_span_t s = bw_chunk_span(q, c, k);
        uint8_t *slot = bw_slot_part(ring, q, c, k);
        uint8_t *image = images + bw_case_data_place(d, k) + s.begin;
        if (to_images)
            memcpy(image, slot, s.end - s.begin);
        else
            memcpy(slot, image, s.end - s.begin);
    }
}

/* The images as a RUN's fill sends them. */
static uint8_t *upload(const bw_case_data *d, const bw_request *q)
{
    uint8_t *ring = malloc(q->shm_bytes);
    uint8_t *images = malloc((size_t)d->images_bytes);
    ck_assert(ring != NULL && images != NULL);
    bw_case_check k;
    bw_chunk_ops ops = bw_case_data_chunk_ops(d, &k, 0);
    for (int64_t c = 0; c < q->chunks; c++) {
        ops.fill(ops.ctx, q, ring, c);
        move_chunk(ring, images, d, q, c, 1);
    }
    free(ring);
    return images;
}

/* The images' chunks taken as a RUN takes them coming back. */
static void take_all(const uint8_t *images, const bw_request *q, bw_case_check *k, int hash_only,
                     const bw_case_data *d)
{
    uint8_t *ring = malloc(q->shm_bytes);
    ck_assert_ptr_nonnull(ring);
    bw_chunk_ops ops = bw_case_data_chunk_ops(d, k, hash_only);
    for (int64_t c = 0; c < q->chunks; c++) {
        move_chunk(ring, (uint8_t *)images, d, q, c, 0);
        ops.take(ops.ctx, q, ring, c);
    }
    ck_assert_int_eq(k->chunks_taken, q->chunks);
    free(ring);
}

static void assert_same_result(const bw_case_result *a, const bw_case_result *b, int64_t chunks)
{
    ck_assert_msg(a->outcome == b->outcome && a->out.mismatches == b->out.mismatches &&
                      a->out.unwritten == b->out.unwritten && a->out.first_bad == b->out.first_bad &&
                      a->out.last_bad == b->out.last_bad && a->out.max_ulps == b->out.max_ulps &&
                      a->out.n_reported == b->out.n_reported,
                  "chunked (%lld chunks) and whole checks disagree: %lld/%lld mismatches, "
                  "first %lld/%lld", (long long)chunks, (long long)b->out.mismatches,
                  (long long)a->out.mismatches, (long long)b->out.first_bad,
                  (long long)a->out.first_bad);
    for (int k = 0; k < a->out.n_reported; k++) {
        const bw_mismatch *x = &a->out.reported[k], *y = &b->out.reported[k];
        ck_assert(x->index == y->index && x->expected == y->expected && x->got == y->got &&
                  x->ulps == y->ulps);
    }
    ck_assert_int_eq(a->nothing_written, b->nothing_written);
    ck_assert_int_eq(a->guard_bad_bytes, b->guard_bad_bytes);
    ck_assert_int_eq(a->guard_array, b->guard_array);
    ck_assert_int_eq(a->guard_first, b->guard_first);
    ck_assert_int_eq(a->guard_last, b->guard_last);
    ck_assert_int_eq(a->input_array, b->input_array);
    ck_assert_int_eq(a->input_changed, b->input_changed);
    ck_assert_int_eq(a->input_first, b->input_first);
}

/* The whole images' check, after asserting that the chunked checks say
 * exactly the same. */
static bw_case_result check(built *b)
{
    bw_case_result r;
    bw_case_result_init(&r);
    bw_case_data_check(&b->d, b->images, &r);
    for (size_t i = 0; i < sizeof slot_sizes / sizeof slot_sizes[0]; i++) {
        bw_request q = plan(b, slot_sizes[i]);
        bw_case_check k;
        take_all(b->images, &q, &k, 0, &b->d);
        bw_case_result rc;
        bw_case_result_init(&rc);
        bw_case_check_finish(&k, &rc);
        assert_same_result(&r, &rc, q.chunks);
        bw_case_result_free(&rc);
    }
    return r;
}

static void done(built *b)
{
    bw_shm_destroy(b->shm);
}

/* Every elementwise exercise (bf16 and fp32, in place or not), every size,
 * special values too: a correct output passes on 1 and on 4 threads.
 * Catches regenerating the wrong element range, a block's reference run on
 * the wrong inputs, a tail block dropped. (A reduction's and a matrix's
 * outputs come from no reference: their checks are not this test's.) */
START_TEST(correct_output_passes)
{
    int tried = 0;
    for (int e = 0; e < bw_exercise_count(); e++) {
        const bw_exercise *ex = bw_exercise_at(e);
        if (ex->shape != BW_SHAPE_ELEMENTWISE)
            continue;
        tried++;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int v = 0; v < 3; v++)
                for (int threads = 1; threads <= 4; threads += 3) {
                    bw_case c = make_case(ex, sizes[s], (int)(s % 16), (bw_value_class)v);
                    built b = build(ex, &c, threads);
                    write_correct_output(&b);
                    bw_case_result r = check(&b);
                    ck_assert_msg(r.outcome == BW_OUTCOME_PASS,
                                  "%s n=%lld values %d threads %d: %lld mismatches, first at %lld, "
                                  "input %d changed, guard %lld",
                                  ex->name, (long long)c.n, v, threads,
                                  (long long)r.out.mismatches, (long long)r.out.first_bad,
                                  r.input_array, (long long)r.guard_bad_bytes);
                    ck_assert_int_eq(r.nothing_written, 0);
                    done(&b);
                }
    }
    ck_assert_int_ge(tried, 3);   /* haxpy, vector_sum, saxpy */
}
END_TEST

/* Wrong elements are found at their indices, in index order, the same on
 * any thread count. Catches partial results merged out of order and
 * indices reported relative to a block. */
START_TEST(wrong_elements_are_found_where_they_are)
{
    const bw_exercise *ex = bw_exercise_find("haxpy");
    const int64_t n = 300007;
    const int64_t bad[] = {0, 2047, 2048, 150001, n - 1};
    bw_compare_result seen[2];
    for (int t = 0; t < 2; t++) {
        bw_case c = make_case(ex, n, 3, BW_VALUES_RANDOM);
        built b = build(ex, &c, t == 0 ? 1 : 4);
        write_correct_output(&b);
        bf16_t *y = data(&b, 1);
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
            y[bad[k]] ^= 0x0100;   /* an exponent bit: far outside any tolerance */
        bw_case_result r = check(&b);
        ck_assert_int_eq(r.outcome, BW_OUTCOME_FAIL);
        ck_assert_int_eq(r.out.mismatches, 5);
        ck_assert_int_eq(r.out.first_bad, 0);
        ck_assert_int_eq(r.out.last_bad, n - 1);
        ck_assert_int_eq(r.out.n_reported, 5);
        for (int k = 0; k < 5; k++)
            ck_assert_int_eq(r.out.reported[k].index, bad[k]);
        ck_assert_int_eq(r.input_array, -1);
        seen[t] = r.out;
        done(&b);
    }
    for (int k = 0; k < 5; k++) {
        const bw_mismatch *a = &seen[0].reported[k], *m = &seen[1].reported[k];
        ck_assert(a->index == m->index && a->expected == m->expected && a->got == m->got &&
                  a->ulps == m->ulps);
    }
}
END_TEST

/* An input written by the call: which array, how many, the first. Catches
 * an input array left out of the comparison. */
START_TEST(a_changed_input_is_reported)
{
    const bw_exercise *ex = bw_exercise_find("vector_sum");
    bw_case c = make_case(ex, 70001, 7, BW_VALUES_RANDOM);
    built b = build(ex, &c, 4);
    write_correct_output(&b);
    data(&b, 1)[4096] ^= 1;
    data(&b, 1)[70000] ^= 1;
    bw_case_result r = check(&b);
    ck_assert_int_eq(r.outcome, BW_OUTCOME_FAIL);
    ck_assert_int_eq(r.input_array, 1);
    ck_assert_int_eq(r.input_changed, 2);
    ck_assert_int_eq(r.input_first, 4096);
    ck_assert_int_eq(r.out.mismatches, 0);
    done(&b);
}
END_TEST

/* A byte written past the end lands in the guard. */
START_TEST(a_write_past_the_end_hits_the_guard)
{
    const bw_exercise *ex = bw_exercise_find("haxpy");
    bw_case c = make_case(ex, 4097, 1, BW_VALUES_RANDOM);
    built b = build(ex, &c, 1);
    write_correct_output(&b);
    data(&b, 1)[4097] = 0;
    bw_case_result r = check(&b);
    ck_assert_int_eq(r.outcome, BW_OUTCOME_FAIL);
    ck_assert_int_eq(r.guard_array, 1);
    ck_assert_int_eq(r.guard_first, 2 * 4097);
    done(&b);
}
END_TEST

/* Images as built, no call at all: "nothing written" for an in-place
 * exercise (output still holds its input), for one whose output starts as
 * poison and for a reduction whose result still holds its fill, every
 * shape. Catches the in-place test comparing with the wrong array. */
START_TEST(untouched_images_mean_nothing_written)
{
    for (int e = 0; e < bw_exercise_count(); e++) {
        const bw_exercise *ex = bw_exercise_at(e);
        bw_case c = make_case(ex, 70001, 0, BW_VALUES_RANDOM);
        built b = build(ex, &c, 4);
        bw_case_result r = check(&b);
        ck_assert_int_eq(r.outcome, BW_OUTCOME_FAIL);
        ck_assert_msg(r.nothing_written, "%s", ex->name);
        if (!ex->in_place)
            ck_assert_int_eq(r.out.unwritten, bw_exercise_count_of(ex, ex->output, 70001));
        bw_case_result_free(&r);
        done(&b);
    }
}
END_TEST

/* The race re-run's hash (a hash-only take) sees one flipped output bit
 * and nothing else, and equals the hash the full check computes. */
static uint32_t output_hash(built *b, int hash_only)
{
    bw_request q = plan(b, slot_sizes[0]);
    bw_case_check k;
    take_all(b->images, &q, &k, hash_only, &b->d);
    return k.out_hash;
}

START_TEST(output_hash_tells_outputs_apart)
{
    const bw_exercise *ex = bw_exercise_find("haxpy");
    bw_case c = make_case(ex, 300007, 5, BW_VALUES_RANDOM);
    built b = build(ex, &c, 4);
    write_correct_output(&b);
    uint64_t h = output_hash(&b, 1);
    ck_assert(h == output_hash(&b, 0));
    data(&b, 0)[12] ^= 1;   /* an input: not part of the output's hash */
    ck_assert(h == output_hash(&b, 1));
    data(&b, 1)[299999] ^= 1;
    ck_assert(h != output_hash(&b, 1));
    data(&b, 1)[299999] ^= 1;
    data(&b, 1)[0] ^= 0x8000;
    ck_assert(h != output_hash(&b, 0));
    done(&b);
}
END_TEST

/* The chunks a RUN's fill writes add up to the whole images, guards and
 * all, for every exercise (every shape and type) and size, through both
 * rings. Catches a chunk written at the wrong place of its slot, a guard
 * byte left out at a chunk boundary, inputs generated for the wrong element
 * range, a reduction's result sent in a chunk other than the first. */
START_TEST(chunks_add_up_to_the_whole_images)
{
    for (int e = 0; e < bw_exercise_count(); e++) {
        const bw_exercise *ex = bw_exercise_at(e);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            bw_case c = make_case(ex, sizes[s], (int)(s % 16), BW_VALUES_RANDOM);
            built b = build(ex, &c, 4);
            for (size_t i = 0; i < sizeof slot_sizes / sizeof slot_sizes[0]; i++) {
                bw_request q = plan(&b, slot_sizes[i]);
                uint8_t *sent = upload(&b.d, &q);
                ck_assert_msg(memcmp(sent, b.images, (size_t)b.d.images_bytes) == 0,
                              "%s n=%lld, %lld chunks: the chunks differ from the whole images",
                              ex->name, (long long)c.n, (long long)q.chunks);
                free(sent);
            }
            done(&b);
        }
    }
}
END_TEST

/* A guard hit at the front (first chunk) of one array and at the back
 * (last chunk) of another: the report names the first array, as for whole
 * images. Catches guards merged in chunk order rather than array order. */
START_TEST(guards_are_reported_by_array_across_chunks)
{
    const bw_exercise *ex = bw_exercise_find("vector_sum");
    bw_case c = make_case(ex, 70001, 2, BW_VALUES_RANDOM);
    built b = build(ex, &c, 4);
    write_correct_output(&b);
    data(&b, 0)[70001] = 0;   /* array 0, past its end: the last chunk */
    data(&b, 2)[-1] = 0;      /* array 2, before its start: the first chunk */
    bw_case_result r = check(&b);
    ck_assert_int_eq(r.outcome, BW_OUTCOME_FAIL);
    ck_assert_int_eq(r.guard_array, 0);
    ck_assert_int_eq(r.guard_first, 2 * 70001);
    ck_assert_int_eq(r.guard_bad_bytes, 4);   /* two bytes each */
    done(&b);
}
END_TEST

/* The sum of x as a call that skips one 64-element line in 32 and scales
 * up what it read (tests/corpus/reduce_samples), the exact sum, and the
 * smallest nonzero |x[i]|. */
static void sampled_and_exact(built *b, double *sampled, double *exact, double *least)
{
    const bw_exercise *ex = b->d.ex;
    int k = 0;
    while (!bw_exercise_is_input(ex, k))
        k++;
    bw_type t = ex->arrays[k].type;
    const void *x = data_of(b, k);
    double kept = 0.0, all = 0.0;
    *least = INFINITY;
    for (int64_t i = 0; i < b->d.c.n; i++) {
        double v = bw_elem_to_double(t, bw_elem_load(t, x, i));
        all += v;
        if (v != 0.0 && fabs(v) < *least)
            *least = fabs(v);
        if ((i >> 6) % 32 != 31)
            kept += v;
    }
    *sampled = kept * 32.0 / 31.0;
    *exact = all;
}

/* A benchmark of a reduction checks each timed call by value, against the
 * validated first call, within bw_sum_spread. On its timed values the
 * rule's bound is 0 and the spread (rounding alone) is below any element,
 * so a call that skips one is seen, and one that reads 31/32 of x and
 * scales by 32/31; on positive values (the benchmark's before) that call
 * lay within the spread. And the sum is far from 0, where a remembered one
 * would match the negated inputs'. Catches timed values with slack
 * (positive, random) or signs (exact), and a spread of more than rounding
 * where the bound is 0. */
START_TEST(timed_values_show_a_skipped_element)
{
    int tried = 0;
    for (int e = 0; e < bw_exercise_count(); e++) {
        const bw_exercise *ex = bw_exercise_at(e);
        if (ex->shape != BW_SHAPE_REDUCTION)
            continue;
        bw_type t = bw_exercise_out_type(ex);
        const int64_t ns[] = {1048579, 4194319};
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            for (int timed = 1; timed >= 0; timed--) {
                bw_case c = make_case(ex, ns[i], 0, timed ? bw_timed_values(ex) : BW_VALUES_POSITIVE);
                built b = build(ex, &c, 4);
                bw_case_result r = check(&b);
                double sampled, exact, least;
                sampled_and_exact(&b, &sampled, &exact, &least);
                ck_assert_double_eq(r.shape.sum_exact, exact);
                double spread = bw_sum_spread(t, r.shape.sum_bound, fabs(exact) + r.shape.sum_bound);
                if (timed) {
                    ck_assert_msg(r.shape.sum_bound == 0.0 && spread < least,
                                  "%s n=%lld: timed values with bound %g, spread %g, least "
                                  "|x| %g", ex->name, (long long)ns[i], r.shape.sum_bound,
                                  spread, least);
                    ck_assert_msg(fabs(sampled - exact) > spread, "%s n=%lld: sampling unseen",
                                  ex->name, (long long)ns[i]);
                    /* No signs: a remembered sum misses the negated inputs'. */
                    ck_assert_msg(exact > 1.0 && r.shape.sum_abs == exact,
                                  "%s n=%lld: a timed sum of %g, of |x| %g", ex->name,
                                  (long long)ns[i], exact, r.shape.sum_abs);
                } else {
                    ck_assert_msg(fabs(sampled - exact) <= spread,
                                  "%s n=%lld: positive values no longer hide sampling "
                                  "(%g from the sum, spread %g): update this test's premise",
                                  ex->name, (long long)ns[i], fabs(sampled - exact), spread);
                }
                bw_case_result_free(&r);
                done(&b);
                tried++;
            }
        }
    }
    ck_assert_int_gt(tried, 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("case_data");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, correct_output_passes);
    tcase_add_test(t, wrong_elements_are_found_where_they_are);
    tcase_add_test(t, a_changed_input_is_reported);
    tcase_add_test(t, a_write_past_the_end_hits_the_guard);
    tcase_add_test(t, untouched_images_mean_nothing_written);
    tcase_add_test(t, output_hash_tells_outputs_apart);
    tcase_add_test(t, chunks_add_up_to_the_whole_images);
    tcase_add_test(t, guards_are_reported_by_array_across_chunks);
    tcase_add_test(t, timed_values_show_a_skipped_element);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return bw_run_suite(suite()); }
