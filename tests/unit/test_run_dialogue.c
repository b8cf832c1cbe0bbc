/* The RUN dialogue (grader/supervisor/run_dialogue.c) against the fake
 * worker: chunks of the arrays through a window of slots in shared memory,
 * each sent and taken back in order, and a worker that breaks the dialogue
 * killed. Every test ends by checking that no child process was left. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "run_dialogue.h"
#include "stream_plan.h"
#include "check_support.h"
#include "supervisor_fixtures.h"

/* ------------------------------------------------------------ RUN dialogue */

/* Array k's geometry as bw_case_data_request fills it (judge/case_data.c):
 * count elements of elem_bytes at offset offset_elems, one vector. */
static void set_geom(bw_request *q, int k, int64_t count, int elem_bytes, int offset_elems,
                     uint32_t flags)
{
    bw_image_layout l = bw_image_layout_for(count, elem_bytes, offset_elems, 0);
    bw_array_geom *g = &q->arrays[k];
    g->elem_bytes = (uint32_t)elem_bytes;
    g->flags = flags;
    g->count = count;
    g->front_bytes = l.front_bytes;
    g->data_bytes = l.data_bytes;
    g->back_bytes = l.back_bytes;
    g->image_bytes = l.total_bytes;
    g->outer = 1;
    g->inner = count;
}

/* A RUN of 3 arrays through 2 slots of 12 KiB: 5,000 bf16 elements, 5,000
 * fp32 ones and a whole fp32 result (one element, travelling in chunk 0
 * only), as a reduction with two inputs of two types would send them.
 * 4 chunks, so the window wraps in both directions. mode: scalar 0, which
 * tells the fake worker how to behave. */
static bw_request dialogue_req(float mode)
{
    bw_request q;
    memset(&q, 0, sizeof q);
    q.magic = BW_PROTO_MAGIC;
    q.kind = BW_REQ_RUN;
    q.n = 5000;
    q.rows = 1;
    q.cols = 5000;
    q.n_scalars = 1;
    q.scalars[0] = mode;
    q.n_arrays = 3;
    q.by_value = 2;
    set_geom(&q, 0, 5000, 2, 3, BW_ARRAY_INPUT);
    set_geom(&q, 1, 5000, 4, 3, BW_ARRAY_INPUT);
    set_geom(&q, 2, 1, 4, 0, BW_ARRAY_WHOLE);
    ck_assert_int_eq(q.arrays[0].front_bytes, 518);
    ck_assert_int_eq(q.arrays[1].front_bytes, 524);
    ck_assert_int_eq(bw_stream_plan(&q, 2, 3 * 4096), 0);
    ck_assert_int_eq(q.chunks, 4);
    ck_assert(bw_stream_plan_ok(&q));
    return q;
}

typedef struct {
    int64_t filled, taken;   /* chunks so far, each must come in order */
    int64_t bad_bytes;
    uint64_t bytes[BW_MAX_ARRAYS], back[BW_MAX_ARRAYS];   /* each image's bytes sent, taken */
} dialogue_log;

static uint8_t pattern(int k, uint64_t pos) { return (uint8_t)(pos * 7 + (uint64_t)k * 31 + 3); }

static void fill_pattern(void *ctx, const bw_request *q, uint8_t *ring, int64_t c)
{
    dialogue_log *l = ctx;
    ck_assert_int_eq(c, l->filled);
    l->filled++;
    for (int k = 0; k < q->n_arrays; k++) {
        bw_chunk_span_t s = bw_chunk_span(q, c, k);
        for (uint64_t p = s.begin; p < s.end; p++)
            bw_slot_part(ring, q, c, k)[p - s.begin] = pattern(k, p);
        l->bytes[k] += s.end - s.begin;
    }
}

/* The fake's "kernel" adds 1 to every byte. */
static void take_pattern(void *ctx, const bw_request *q, const uint8_t *ring, int64_t c)
{
    dialogue_log *l = ctx;
    ck_assert_int_eq(c, l->taken);
    l->taken++;
    for (int k = 0; k < q->n_arrays; k++) {
        bw_chunk_span_t s = bw_chunk_span(q, c, k);
        for (uint64_t p = s.begin; p < s.end; p++)
            if (bw_slot_part((uint8_t *)ring, q, c, k)[p - s.begin] != (uint8_t)(pattern(k, p) + 1))
                l->bad_bytes++;
        l->back[k] += s.end - s.begin;
    }
}

static bw_call_status dialogue(bw_worker *w, bw_shm *shm, float mode, double timeout,
                               dialogue_log *l, bw_reply *rep, char **why)
{
    bw_request q = dialogue_req(mode);
    uint8_t *ring = bw_shm_reserve(shm, (size_t)q.shm_bytes);
    ck_assert_ptr_nonnull(ring);
    memset(l, 0, sizeof *l);
    bw_chunk_ops ops = {fill_pattern, take_pattern, l, NULL};
    return bw_run_dialogue(w, &q, ring, &ops, rep, timeout, why);
}

/* Every byte of every chunk goes out and comes back, in order, twice on
 * the same worker. Catches a window that reuses a slot before the worker
 * freed it (the pattern of a later chunk would come back), chunks taken
 * out of order, a lost last chunk. */
START_TEST(run_dialogue_moves_every_chunk_both_ways)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    bw_worker *w = start_fake(shm, 4096);
    for (int round = 0; round < 2; round++) {
        dialogue_log l;
        bw_reply rep;
        char *why = NULL;
        ck_assert_int_eq(dialogue(w, shm, 0.0f, 5.0, &l, &rep, &why), BW_CALL_OK);
        ck_assert_ptr_null(why);
        ck_assert_int_eq(rep.status, BW_REP_OK);
        ck_assert_uint_eq(rep.kind, BW_REQ_RUN);
        ck_assert(rep.call_ms == 1.0);
        ck_assert_int_eq(l.filled, 4);
        ck_assert_int_eq(l.taken, 4);
        ck_assert_int_eq(l.bad_bytes, 0);
        /* Every byte of every image, once each way. */
        bw_request q = dialogue_req(0.0f);
        for (int k = 0; k < q.n_arrays; k++) {
            ck_assert_uint_eq(l.bytes[k], q.arrays[k].image_bytes);
            ck_assert_uint_eq(l.back[k], q.arrays[k].image_bytes);
        }
    }
    ck_assert(bw_worker_alive(w));
    bw_worker_stop(w);
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

/* A worker that breaks the dialogue is killed and the run is not taken
 * for done: a chunk out of turn, an OK before any chunk came back, a hang
 * in the call (timeout), a CUDA error during the upload (its reply ends
 * the run early, with that status). */
START_TEST(run_dialogue_refuses_a_broken_dialogue)
{
    bw_shm *shm = make_shm(IMAGE_BYTES);
    const float modes[] = {-1.0f, -2.0f, -3.0f, -4.0f};
    const bw_call_status want[] = {BW_CALL_PROTOCOL, BW_CALL_PROTOCOL, BW_CALL_TIMEOUT, BW_CALL_OK};
    const char *says[] = {"where chunk 0 was due", "0 of 4 chunks", "no answer after", NULL};
    for (int m = 0; m < 4; m++) {
        bw_worker *w = start_fake(shm, 4096);
        dialogue_log l;
        bw_reply rep;
        char *why = NULL;
        bw_call_status st = dialogue(w, shm, modes[m], 1.0, &l, &rep, &why);
        ck_assert_msg(st == want[m], "mode %g: status %d", (double)modes[m], (int)st);
        if (says[m] != NULL)
            ck_assert_msg(why != NULL && strstr(why, says[m]) != NULL, "mode %g: %s",
                          (double)modes[m], why ? why : "(no reason)");
        else
            ck_assert_int_eq(rep.status, BW_REP_CUDA_ERROR);
        ck_assert_int_eq(l.taken, 0);
        ck_assert(!bw_worker_alive(w));
        free(why);
        bw_worker_stop(w);
    }
    bw_shm_destroy(shm);
    assert_no_children();
}
END_TEST

static Suite *run_dialogue_suite(void)
{
    Suite *s = suite_create("run_dialogue");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, run_dialogue_moves_every_chunk_both_ways);
    tcase_add_test(tc, run_dialogue_refuses_a_broken_dialogue);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return bw_run_suite(run_dialogue_suite());
}
