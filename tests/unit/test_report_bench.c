/* The benchmark's report on made-up rows: its text table and the JSON
 * fields run.py reads (the test report: test_report.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "exercise.h"
#include "report_capture.h"
#include "report_json.h"
#include "report_text.h"

static void bench_fixture(bw_bench_report *b, bw_bench_row *rows, bw_reply *dev)
{
    memset(b, 0, sizeof *b);
    *dev = h100();
    b->ex = bw_exercise_find("haxpy");
    b->label = "student";
    b->device = dev;
    b->peak_gbs = bw_peak_gbs(dev);
    b->status = "fail";
    b->copy.run = 1;
    b->copy.bytes = 805306364;
    b->copy.status = "ok";
    b->copy.samples = 40;
    b->copy.ms_median = 0.55;
    b->copy.ms_q1 = 0.548;
    b->copy.ms_q3 = 0.553;
    b->copy.timer_ms = 0.00125;
    b->copy.gbs = 2.0 * 805306364 / 0.55e-3 / 1e9;
    b->copy.pct_peak = 100 * b->copy.gbs / b->peak_gbs;
    b->copy.method = "kernel";
    b->copies[BW_COPY_KERNEL] = b->copy;
    b->copies[BW_COPY_MEMCPY] = b->copy;
    b->copies[BW_COPY_MEMCPY].method = "memcpy";
    b->copies[BW_COPY_MEMCPY].ms_median = 0.56;
    b->copies[BW_COPY_MEMCPY].gbs = 2.0 * 805306364 / 0.56e-3 / 1e9;
    b->copies[BW_COPY_MEMCPY].pct_peak = 100 * b->copies[BW_COPY_MEMCPY].gbs / b->peak_gbs;
    memset(rows, 0, 3 * sizeof *rows);
    rows[0] = (bw_bench_row){.n = 268435455, .offset = 0, .bytes = 1610612730, .status = "ok",
                             .timed = 1, .samples = 40, .ms_median = 0.6, .ms_q1 = 0.597,
                             .ms_q3 = 0.606, .ms_min = 0.59, .ms_max = 0.7, .noise = 0.001,
                             .event_ms = 12, .host_ms = 12.2, .ratio = 12.2 / 12,
                             .lag_ms = 0.015, .lag_excess_ms = 0.001, .calls_checked = 44,
                             .worker_pid = 4242, .timer_ms = 0.00125};
    rows[0].gbs = 1610612730 / 0.6e-3 / 1e9;
    rows[0].pct_peak = 100 * rows[0].gbs / b->peak_gbs;
    rows[0].pct_copy = 100 * rows[0].gbs / b->copy.gbs;
    rows[0].pct_memcpy = 100 * rows[0].gbs / b->copies[BW_COPY_MEMCPY].gbs;
    rows[1] = (bw_bench_row){.n = 1 << 16, .offset = 7, .bytes = 6 << 16, .status = "impossible",
                             .timed = 1, .samples = 10, .ms_median = 1e-4, .ms_q1 = 1e-4,
                             .ms_q3 = 1e-4, .ratio = NAN, .gbs = NAN, .pct_peak = NAN,
                             .pct_copy = NAN, .pct_memcpy = NAN, .lag_ms = NAN,
                             .lag_excess_ms = NAN,
                             .rule = "a figure must be physically possible"};
    rows[1].detail = strdup("timed above the datasheet peak");
    rows[2] = (bw_bench_row){.n = 2147483647, .offset = 0, .bytes = 12884901882LL,
                             .status = "skipped", .ratio = NAN, .gbs = NAN, .pct_peak = NAN,
                             .pct_copy = NAN, .pct_memcpy = NAN};
    b->rows = rows;
    b->n_rows = 3;
}

START_TEST(bench_text)
{
    bw_bench_report b;
    bw_bench_row rows[3];
    bw_reply dev;
    bench_fixture(&b, rows, &dev);
    capture c;
    FILE *f = cap_open(&c);
    bw_report_bench_header(f, &b);
    bw_report_bench_copy(f, &b);
    bw_report_bench_table_head(f, &b);
    for (int i = 0; i < 3; i++)
        bw_report_bench_row(f, &rows[i]);
    bw_report_bench_footer(f, &b);
    char *s = cap_close(&c);
    HAS(s, "           n  offset   median ms");
    HAS(s, "haxpy benchmark (student)\n");
    HAS(s, "NVIDIA H100 80GB HBM3, cc 9.0, 132 SMs, 50 MB L2");
    HAS(s, "2619 MHz, 5120-bit bus: 3352.3 GB/s datasheet peak");
    HAS(s, "driver 13.0, runtime 13.0");
    HAS(s, "  cudaMemcpy : device to device, 768 MiB each way: 0.56 ms, 2876.1 GB/s (85.8% of peak)\n"
           "  copy kernel: device to device, 768 MiB each way: 0.55 ms, 2928.4 GB/s (87.4% of peak)"
           "  <- the baseline (% copy)\n"
           "  timing: GPU time between two events, less their own 1.25 us; every call also timed "
           "by bwgrade's own clock\n");
    HAS(s, "   268435455       0         0.6   +-0.8%    2684.4     80.1     91.7       40  ok\n");
    HAS(s, "  impossible\n      timed above the datasheet peak\n");
    HAS(s, "  2147483647       0           -        -         -        -        -        -  "
           "skipped\n");
    HAS(s, "1 of 3 sizes without a figure");
    free(s);

    /* Only skipped rows besides the measured ones: a row is skipped for
     * more reasons than memory (the worker refused it, say), so the footer
     * names none and points at each row's own. */
    rows[1].status = "ok";
    f = cap_open(&c);
    bw_report_bench_footer(f, &b);
    s = cap_close(&c);
    HAS(s, "  2 of 3 sizes measured (the rest skipped: the reason is under each)\n");
    free(s);
    rows[1].status = "impossible";

    /* A matrix exercise's rows name their shape, not n. */
    b.ex = bw_exercise_find("transpose");
    ck_assert_ptr_nonnull(b.ex);
    rows[0].n = 1000 * 1001;
    rows[0].rows = 1000;
    rows[0].cols = 1001;
    f = cap_open(&c);
    bw_report_bench_table_head(f, &b);
    bw_report_bench_row(f, &rows[0]);
    s = cap_close(&c);
    HAS(s, " rows x cols  offset   median ms");
    HAS(s, "   1000x1001       0         0.6");
    free(s);
    free(rows[1].detail);
}
END_TEST

START_TEST(bench_json)
{
    bw_bench_report b;
    bw_bench_row rows[3];
    bw_reply dev;
    bench_fixture(&b, rows, &dev);
    capture c;
    ck_assert_int_eq(bw_report_bench_json_to(cap_open(&c), &b), 0);
    char *s = cap_close(&c);
    HAS(s, "\"mode\": \"bench\"");
    HAS(s, "\"label\": \"student\"");
    HAS(s, "\"bytes\": 805306364");
    HAS(s, "\"gbs\": 2928.39");
    HAS(s, "\"ms_median\": 0.55,\n    \"ms_q1\": 0.548,\n    \"ms_q3\": 0.553,\n    \"gbs\": 2928.39");
    HAS(s, "{\"n\": 268435455, \"offset\": 0, \"bytes\": 1610612730, \"samples\": 40, "
           "\"ms_median\": 0.6, \"ms_q1\": 0.597, \"ms_q3\": 0.606, \"ms_min\": 0.59, "
           "\"ms_max\": 0.7, \"noise\": 0.001, \"timer_ms\": 0.00125, \"gbs\": 2684.35, \"pct_peak\": 80.07, "
           "\"pct_copy\": 91.67, \"host_check\": {\"event_ms\": 12.0, \"host_ms\": 12.2, "
           "\"ratio\": 1.0167, \"lag_ms\": 0.015, \"lag_excess_ms\": 0.001}, "
           "\"recompute_check\": {\"calls_checked\": 44, \"calls_differing\": 0, "
           "\"first_differing_call\": 0, \"rotation_of_first\": 0}, \"pct_memcpy\": 93.33, "
           "\"clock_check\": null, \"worker_pid\": 4242, "
           "\"status\": \"ok\", \"rule\": null, \"detail\": null}");
    HAS(s, "\"gbs\": null, \"pct_peak\": null, \"pct_copy\": null, \"host_check\": {\"event_ms\": "
           "0.0, \"host_ms\": 0.0, \"ratio\": null, \"lag_ms\": null, \"lag_excess_ms\": null}, "
           "\"recompute_check\": null, \"pct_memcpy\": null, \"clock_check\": null, "
           "\"worker_pid\": null, \"status\": \"impossible\", "
           "\"rule\": \"a figure must be physically possible\"");
    HAS(s, "\"samples\": 0, \"ms_median\": null");
    HAS(s, "\"host_check\": null, \"recompute_check\": null, \"pct_memcpy\": null, "
           "\"clock_check\": null, \"worker_pid\": null, "
           "\"status\": \"skipped\"");
    free(s);

    b.copy.run = 0;
    ck_assert_int_eq(bw_report_bench_json_to(cap_open(&c), &b), 0);
    s = cap_close(&c);
    HAS(s, "\"copy\": null");
    free(s);

    /* A row the clock refused once and passed on its retry: the JSON keeps
     * what the clock saw the first time (a report that dropped it would
     * hide how close an honest row came to losing its figure). */
    rows[0].clocked = 1;
    rows[0].clock_samples = 40;
    rows[0].base_clock_samples = 20;
    rows[0].span_ms = 0.61;
    rows[0].base_span_ms = 0.01;
    rows[0].prep_ms = 2.1;
    rows[0].base_prep_ms = 2.0;
    rows[0].clock_ms = 0.6;
    rows[0].charged_ms = 0.65;
    rows[0].allowed_ms = 0.6175;
    rows[0].clock_retried = 1;
    rows[0].clock_first_refusal = strdup("the worker reported 0.6000 ms per call, but ...");
    ck_assert_int_eq(bw_report_bench_json_to(cap_open(&c), &b), 0);
    s = cap_close(&c);
    HAS(s, "\"clock_check\": {\"samples\": 40, \"baseline_samples\": 20, \"span_ms\": 0.61, "
           "\"baseline_span_ms\": 0.01, \"prep_ms\": 2.1, \"baseline_prep_ms\": 2.0, \"clock_ms\": 0.6, "
           "\"charged_ms\": 0.65, \"least_accepted_ms\": 0.6175, \"retried\": true, "
           "\"first_refusal\": \"the worker reported 0.6000 ms per call, but ...\"}");
    free(s);
    free(rows[0].clock_first_refusal);
    free(rows[1].detail);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report_bench");
    TCase *t = tcase_create("bench");
    tcase_add_test(t, bench_text);
    tcase_add_test(t, bench_json);
    suite_add_tcase(s, t);
    return bw_run_suite(s);
}
