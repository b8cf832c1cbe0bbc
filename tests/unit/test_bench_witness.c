/* The grader's own clock on a benchmark (grader/supervisor/bench_witness.c), driven
 * against tests/unit/fake_worker.c: the fake "calls" sleep for as long as
 * a test says and claim whatever figure the test says, so a worker that
 * lies about its timing is seen without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench_witness.h"
#include "check_support.h"
#include "shm.h"
#include "supervisor.h"

#ifndef BW_FAKE_WORKER
#error "BW_FAKE_WORKER (the fake worker's path) must be defined by the build"
#endif

static bw_shm *shm;
static bw_worker *w;

static void start(void)
{
    shm = bw_shm_create();
    ck_assert_ptr_nonnull(shm);
    ck_assert_ptr_nonnull(bw_shm_reserve(shm, 4096));
    bw_worker_opts o;
    memset(&o, 0, sizeof o);
    o.worker_path = BW_FAKE_WORKER;
    o.output_cap = 4096;
    o.startup_timeout_s = 5.0;
    char *why = NULL;
    w = bw_worker_start(&o, shm, NULL, &why);
    ck_assert_msg(w != NULL, "start failed: %s", why ? why : "?");
}

static void stop(void)
{
    bw_worker_stop(w);
    w = NULL;
    bw_shm_destroy(shm);
    shm = NULL;
}

/* A BENCH for the fake: samples of call_us each, after prep_us, claiming
 * claim_ms (scalar 0); misbehave: the fake's min_samples code (0: none). */
static bw_call_status bench(int samples, int call_us, int prep_us, double claim_ms, int misbehave,
                            bw_witness *wit, bw_reply *rep, char **why)
{
    bw_request q;
    memset(&q, 0, sizeof q);
    q.magic = BW_PROTO_MAGIC;
    q.kind = BW_REQ_BENCH;
    q.n = call_us;
    q.warmup = prep_us;
    q.n_scalars = 1;
    q.scalars[0] = (float)claim_ms;   /* the fake claims scalar 0 ms per call */
    q.max_samples = samples;
    q.min_samples = misbehave;
    bw_witness_init(wit);
    return bw_bench_dialogue(w, &q, rep, 10.0, wit, why);
}

/* The clock sees each sample's call: samples of 50 ms give a median span
 * of at least 50 ms, and with a 20 ms preparation a median cycle of at
 * least 70 ms. (The times are long against a busy machine's wake-ups: CI
 * has two cores, and a late bwgrade moves time from one span to the next.) Catches spans
 * taken from the wrong messages (READY to DONE would hold no sleep if the
 * go were not waited for; DONE to DONE would hold the preparation). */
START_TEST(spans_hold_the_call_and_preps_the_preparation)
{
    start();
    bw_witness wit;
    bw_reply rep;
    char *why = NULL;
    ck_assert_int_eq(bench(10, 50000, 20000, 50.0, 0, &wit, &rep, &why), BW_CALL_OK);
    ck_assert_int_eq(rep.samples, 10);
    bw_witness_summary s = bw_witness_summarize(&wit);
    ck_assert_int_eq(s.samples, 10);
    ck_assert_msg(s.span_ms >= 50.0, "span %.3f ms", s.span_ms);
    ck_assert_msg(s.prep_ms + s.span_ms >= 69.0 && s.prep_ms < s.span_ms,
                  "prep %.3f ms, span %.3f ms", s.prep_ms, s.span_ms);
    bw_witness_free(&wit);
    stop();
}
END_TEST

/* The worker claims 0.7x what its calls took, as a worker whose event and
 * clock functions were rewritten would: the verdict refuses it, and
 * accepts what the clock saw. Catches a judge that trusts the reply, or
 * one whose slack swallows a 30% lie (the calls are 50 ms, so a busy
 * machine's delays stay well inside that). */
START_TEST(a_figure_below_the_clock_is_refused_and_the_truth_accepted)
{
    start();
    bw_witness wit, base;
    bw_reply rep;
    char *why = NULL;
    ck_assert_int_eq(bench(10, 0, 20000, 0.0, 0, &base, &rep, &why), BW_CALL_OK);
    ck_assert_int_eq(bench(10, 50000, 20000, 35.0, 0, &wit, &rep, &why), BW_CALL_OK);
    bw_witness_summary b = bw_witness_summarize(&base), s = bw_witness_summarize(&wit);
    bw_witness_verdict v;
    ck_assert_int_ne(bw_witness_judge(s, b, 35.0, &v), 0);
    ck_assert_msg(v.charged_ms >= 40.0, "charged %.3f ms", v.charged_ms);
    /* What the clock saw is accepted (on a busy machine the sleeps may run
     * long, so the truth is what was seen, not the 4 ms asked for). */
    ck_assert_int_eq(bw_witness_judge(s, b, v.charged_ms, &v), 0);
    bw_witness_free(&wit);
    bw_witness_free(&base);
    stop();
}
END_TEST

/* The call's work done during the preparation, before the clock's span
 * starts: the span shrinks, the preparation grows, and the excess is
 * charged to the call. Catches a judge that reads the spans alone. */
START_TEST(work_moved_before_the_span_is_charged_to_the_call)
{
    start();
    bw_witness wit, base;
    bw_reply rep;
    char *why = NULL;
    ck_assert_int_eq(bench(10, 0, 20000, 0.0, 0, &base, &rep, &why), BW_CALL_OK);
    ck_assert_int_eq(bench(10, 50000, 20000, 35.0, -3, &wit, &rep, &why), BW_CALL_OK);
    bw_witness_summary b = bw_witness_summarize(&base), s = bw_witness_summarize(&wit);
    bw_witness_verdict v;
    ck_assert_int_ne(bw_witness_judge(s, b, 35.0, &v), 0);
    ck_assert_msg(v.clock_ms < 25.0, "span beyond the baseline %.3f ms", v.clock_ms);
    ck_assert_msg(v.charged_ms >= 40.0, "charged %.3f ms", v.charged_ms);
    bw_witness_free(&wit);
    bw_witness_free(&base);
    stop();
}
END_TEST

/* Judging in numbers: the slack is 5% or 0.02 ms, whichever is larger. */
START_TEST(the_slack_is_five_percent_or_twenty_microseconds)
{
    bw_witness_summary base = {20, 0.10, 1.00}, student = {20, 1.10, 1.00};
    bw_witness_verdict v;
    ck_assert_int_eq(bw_witness_judge(student, base, 0.951, &v), 0);
    ck_assert_int_ne(bw_witness_judge(student, base, 0.949, &v), 0);
    bw_witness_summary small = {20, 0.11, 1.00};
    ck_assert_int_eq(bw_witness_judge(small, base, 0.0, &v), 0);      /* 0.01 ms: noise */
    /* 0.3 ms more preparation, 0.05 ms of it slack (5% of the 1 ms call,
     * at least 0.05 ms): 0.25 ms charged, so 1.25 ms less 5% is the least */
    bw_witness_summary prep = {20, 1.10, 1.30};
    ck_assert_int_eq(bw_witness_judge(prep, base, 1.19, &v), 0);
    ck_assert_int_ne(bw_witness_judge(prep, base, 1.18, &v), 0);
}
END_TEST

/* Out-of-order timing messages and a sample count the clock did not see
 * end the worker. Catches a dialogue that takes whatever comes. */
START_TEST(a_broken_tick_dialogue_kills_the_worker)
{
    for (int code = -2; code <= -1; code++) {
        start();
        bw_witness wit;
        bw_reply rep;
        char *why = NULL;
        ck_assert_int_eq(bench(5, 100, 100, 0.1, code, &wit, &rep, &why), BW_CALL_PROTOCOL);
        ck_assert_ptr_nonnull(why);
        ck_assert_msg(strstr(why, code == -1 ? "timing message" : "grader's clock saw"),
                      "why: %s", why);
        ck_assert(!bw_worker_alive(w));
        free(why);
        bw_witness_free(&wit);
        stop();
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bench_witness");
    TCase *t = tcase_create("clock");
    tcase_add_test(t, spans_hold_the_call_and_preps_the_preparation);
    tcase_add_test(t, a_figure_below_the_clock_is_refused_and_the_truth_accepted);
    tcase_add_test(t, work_moved_before_the_span_is_charged_to_the_call);
    tcase_add_test(t, the_slack_is_five_percent_or_twenty_microseconds);
    tcase_add_test(t, a_broken_tick_dialogue_kills_the_worker);
    tcase_set_timeout(t, 60);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return bw_run_suite(suite()); }
