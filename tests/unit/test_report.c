/* The report writers on made-up results: formatters, the student-facing text
 * for each kind of outcome, and the JSON fields run.py reads (the benchmark's
 * report: test_report_bench.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "image.h"
#include "report_capture.h"
#include "report_text.h"
#include "report_json.h"

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static size_t longest_line(const char *s)
{
    size_t best = 0, cur = 0;
    for (; *s; s++) {
        if (*s == '\n') {
            if (cur > best)
                best = cur;
            cur = 0;
        } else {
            cur++;
        }
    }
    return cur > best ? cur : best;
}

/* ---- formatters ---------------------------------------------------------- */

START_TEST(format_bf16_values)
{
    char s[BW_BF16_TEXT];
    bw_format_bf16(0x3f80, s);
    ck_assert_str_eq(s, "0x3f80 (1)");
    bw_format_bf16(BW_POISON, s);
    ck_assert_str_eq(s, "0x7fd7 (never written)");
    bw_format_bf16(0x7f80, s);
    ck_assert_str_eq(s, "0x7f80 (inf)");
    bw_format_bf16(0xff80, s);
    ck_assert_str_eq(s, "0xff80 (-inf)");
    bw_format_bf16(0x7fc0, s);
    ck_assert_str_eq(s, "0x7fc0 (nan)");
    bw_format_bf16(0x8000, s);
    ck_assert_str_eq(s, "0x8000 (-0)");
    bw_format_bf16(0xc17c, s);
    ck_assert_str_eq(s, "0xc17c (-15.75)");
    bw_format_bf16(0x0001, s);          /* smallest subnormal: 2^-133 */
    ck_assert_str_eq(s, "0x0001 (9.18355e-41)");
    bw_format_bf16(0x7f7f, s);          /* largest finite */
    ck_assert_str_eq(s, "0x7f7f (3.38953e+38)");
}
END_TEST

/* Every element type shows its own bits, as wide as the type, its own
 * poison as "never written", and enough digits to tell neighbours apart.
 * Catches fp32 bits cut to 16, a bf16 poison test applied to every type,
 * and fp16 read as bf16. */
START_TEST(format_values_of_every_type)
{
    char s[BW_VALUE_TEXT], b[16];
    bw_format_value(BW_F32, 0x3f800000u, s);
    ck_assert_str_eq(s, "0x3f800000 (1)");
    bw_format_value(BW_F32, 0x3f800001u, s);    /* 1 + 2^-23 */
    ck_assert_str_eq(s, "0x3f800001 (1.00000012)");
    bw_format_value(BW_F32, bw_type_poison(BW_F32), s);
    ck_assert_str_eq(s, "0x7fd7d7d7 (never written)");
    bw_format_value(BW_F32, 0x00007fd7u, s);    /* bf16's poison bits are an fp32 number */
    ck_assert(strstr(s, "never written") == NULL);
    bw_format_value(BW_F32, 0xff800000u, s);
    ck_assert_str_eq(s, "0xff800000 (-inf)");
    bw_format_value(BW_F32, 0x7fc00000u, s);
    ck_assert_str_eq(s, "0x7fc00000 (nan)");
    bw_format_value(BW_F16, 0x3c00u, s);
    ck_assert_str_eq(s, "0x3c00 (1)");
    bw_format_value(BW_F16, 0xc17cu, s);        /* -2.7421875 in fp16, -15.75 in bf16 */
    ck_assert_str_eq(s, "0xc17c (-2.74219)");
    bw_format_value(BW_F16, bw_type_poison(BW_F16), s);
    ck_assert_str_eq(s, "0x7ed7 (never written)");
    bw_format_value(BW_F16, 0x7c00u, s);
    ck_assert_str_eq(s, "0x7c00 (inf)");
    bw_format_value(BW_BF16, BW_POISON, s);
    ck_assert_str_eq(s, "0x7fd7 (never written)");
    bw_format_bits(BW_F32, 0x3f80u, b);
    ck_assert_str_eq(b, "0x00003f80");
    bw_format_bits(BW_BF16, 0x3f80u, b);
    ck_assert_str_eq(b, "0x3f80");
    bw_format_bits(BW_F16, 0x0001u, b);
    ck_assert_str_eq(b, "0x0001");
}
END_TEST

START_TEST(format_sizes_and_versions)
{
    char s[BW_SIZE_TEXT];
    bw_format_bytes(0, s);
    ck_assert_str_eq(s, "0 bytes");
    bw_format_bytes(1023, s);
    ck_assert_str_eq(s, "1023 bytes");
    bw_format_bytes(1536, s);
    ck_assert_str_eq(s, "1.50 KiB");
    bw_format_bytes((uint64_t)150 << 20, s);
    ck_assert_str_eq(s, "150 MiB");
    bw_format_bytes((uint64_t)8 << 30, s);
    ck_assert_str_eq(s, "8.00 GiB");
    bw_format_bytes(UINT64_MAX, s);
    ck_assert_str_eq(s, "16.0 EiB");

    char v[BW_VERSION_TEXT];
    bw_format_cuda_version(13000, v);
    ck_assert_str_eq(v, "13.0");
    bw_format_cuda_version(12080, v);
    ck_assert_str_eq(v, "12.8");
    bw_format_cuda_version(0, v);
    ck_assert_str_eq(v, "?");
}
END_TEST

START_TEST(peak_bandwidth)
{
    bw_reply d = h100();
    ck_assert_double_eq_tol(bw_peak_gbs(&d), 3352.32, 1e-9);
    d.mem_clock_khz = 0;
    ck_assert(isnan(bw_peak_gbs(&d)));
    ck_assert(isnan(bw_peak_gbs(NULL)));
}
END_TEST

/* ---- test reports -------------------------------------------------------- */

#define N_CASES 6

/* A section with one case of each kind: pass, wrong output, crash,
 * guard damage, and two skipped for the same reason. */
typedef struct {
    bw_case cases[N_CASES];
    bw_case_result results[N_CASES];
    bw_diagnosis diag;
    char diag_text[600];
    bw_test_section sec;
    bw_reply dev;
    bw_test_report rep;
} fixture;

static void result_init(bw_case_result *r, bw_outcome o)
{
    memset(r, 0, sizeof *r);
    r->outcome = o;
    r->guard_array = -1;
    r->input_array = -1;
    r->input_first = -1;
    r->out.first_bad = r->out.last_bad = -1;
}

static void make_fixture(fixture *x)
{
    memset(x, 0, sizeof *x);
    const bw_exercise *ex = bw_exercise_find("haxpy");
    ck_assert_ptr_nonnull(ex);
    for (int i = 0; i < N_CASES; i++) {
        bw_case *c = &x->cases[i];
        c->index = 40 + i;
        c->n = 13 + i;
        c->alpha = 0.37f;
        c->alpha_kind = "random";
        c->values = BW_VALUES_RANDOM;
        c->group = BW_GROUP_SMALL;
        result_init(&x->results[i], BW_OUTCOME_PASS);
    }
    /* 41: three elements wrong, one never written */
    bw_case_result *r = &x->results[1];
    r->outcome = BW_OUTCOME_FAIL;
    r->out.mismatches = 3;
    r->out.unwritten = 1;
    r->out.max_ulps = INFINITY;
    r->out.first_bad = 8;
    r->out.last_bad = 12;
    r->out.n_reported = 3;
    r->out.reported[0] = (bw_mismatch){8, 0x3f80, BW_POISON, INFINITY};
    r->out.reported[1] = (bw_mismatch){9, 0x4000, 0x4001, 1.0};
    r->out.reported[2] = (bw_mismatch){12, 0x7f80, 0x7fc0, INFINITY};
    /* 42: a crash with output */
    r = &x->results[2];
    r->outcome = BW_OUTCOME_CRASH;
    r->detail = strdup("killed by signal SIGSEGV");
    r->student_output =
        strdup("hello from the kernel\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\n");
    /* 43: right output, but a write before the array */
    r = &x->results[3];
    r->outcome = BW_OUTCOME_FAIL;
    r->guard_bad_bytes = 2;
    r->guard_array = 1;
    r->guard_first = -2;
    r->guard_last = -1;
    /* 44, 45: skipped alike */
    for (int i = 4; i < 6; i++) {
        result_init(&x->results[i], BW_OUTCOME_SKIPPED);
        x->results[i].detail = strdup("needs 20 GiB host memory");
    }
    snprintf(x->diag_text, sizeof x->diag_text,
             "Only cases whose n is not a multiple of 8 fail. This sentence goes on long "
             "enough that it has to be wrapped over several lines of the report, which "
             "must keep every line within the width a terminal shows without folding.");
    x->diag.code = BW_DIAG_TAIL;
    x->diag.name = "tail";
    x->diag.text = x->diag_text;

    x->sec.cases = x->cases;
    x->sec.results = x->results;
    x->sec.count = N_CASES;
    x->sec.diags = &x->diag;
    x->sec.n_diags = 1;
    x->sec.passed = 1;
    x->sec.failed = 3;
    x->sec.skipped = 2;
    x->sec.status = "fail";

    x->dev = h100();
    x->rep.ex = ex;
    x->rep.seed = 1;
    x->rep.device = &x->dev;
    x->rep.status = "fail";
    x->rep.sections = &x->sec;
    x->rep.n_sections = 1;
    x->rep.passed = 1;
    x->rep.failed = 3;
    x->rep.skipped = 2;
    x->rep.total = N_CASES;
}

static void free_fixture(fixture *x)
{
    for (int i = 0; i < N_CASES; i++)
        bw_case_result_free(&x->results[i]);
}

START_TEST(text_failing_report)
{
    fixture x;
    make_fixture(&x);
    capture c;
    bw_report_test_text(cap_open(&c), &x.rep, 0);
    char *s = cap_close(&c);
    HAS(s, "haxpy: 1 of 6 cases passed, 3 failed, 2 skipped  (seed 1, NVIDIA H100 80GB HBM3)");
    HAS(s, "  diagnosis: Only cases whose n is not a multiple of 8 fail.");
    HAS(s, "failing cases:");
    HAS(s, "case 41  n=14 offset=0 alpha=0.37 (random)  3 of 14 elements wrong (1 never written)");
    HAS(s, "index 8: expected 0x3f80 (1)  got 0x7fd7 (never written)\n");
    HAS(s, "index 9: expected 0x4000 (2)  got 0x4001 (2.01562)  (1 ulp)");
    HAS(s, "index 12: expected 0x7f80 (inf)  got 0x7fc0 (nan)\n");
    HAS(s, "case 42  n=15 offset=0 alpha=0.37 (random)  crashed\n");
    HAS(s, "killed by signal SIGSEGV");
    HAS(s, "student output:");
    HAS(s, "| hello from the kernel");
    HAS(s, "| line 5\n");
    LACKS(s, "line 6");
    HAS(s, "[... 2 more lines]");
    HAS(s, "case 43  n=16 offset=0 alpha=0.37 (random)  output right, but wrote outside the array");
    HAS(s, "elements -1..-1 (before index 0)");
    HAS(s, "skipped (2):");
    HAS(s, "cases 44..45 (2 cases)  needs 20 GiB host memory");
    HAS(s, "replay one case: python3 run.py test haxpy --seed 1 --case 41\n");
    ck_assert_uint_le(longest_line(s), 100);
    free(s);
    free_fixture(&x);
}
END_TEST

START_TEST(text_wraps_diagnosis)
{
    fixture x;
    make_fixture(&x);
    capture c;
    bw_report_test_text(cap_open(&c), &x.rep, 0);
    char *s = cap_close(&c);
    /* Every line of the diagnosis paragraph fits in WRAP_WIDTH. */
    const char *p = strstr(s, "  diagnosis:");
    ck_assert_ptr_nonnull(p);
    const char *end = strstr(p, "failing cases");
    ck_assert_ptr_nonnull(end);
    size_t cur = 0;
    for (; p < end; p++) {
        if (*p == '\n')
            cur = 0;
        else
            ck_assert_uint_le(++cur, WRAP_WIDTH);
    }
    free(s);
    free_fixture(&x);
}
END_TEST

START_TEST(text_quiet_is_one_line)
{
    fixture x;
    make_fixture(&x);
    capture c;
    bw_report_test_text(cap_open(&c), &x.rep, 1);
    char *s = cap_close(&c);
    ck_assert_int_eq(count_lines(s), 1);
    HAS(s, "haxpy: 1 of 6 cases passed, 3 failed, 2 skipped");
    free(s);
    free_fixture(&x);
}
END_TEST

START_TEST(text_all_passed)
{
    fixture x;
    make_fixture(&x);
    for (int i = 0; i < N_CASES; i++) {
        bw_case_result_free(&x.results[i]);
        result_init(&x.results[i], BW_OUTCOME_PASS);
    }
    x.sec.passed = N_CASES;
    x.sec.failed = x.sec.skipped = 0;
    x.sec.n_diags = 0;
    x.sec.status = x.rep.status = "pass";
    capture c;
    bw_report_test_text(cap_open(&c), &x.rep, 0);
    char *s = cap_close(&c);
    ck_assert_str_eq(s, "haxpy: all 6 cases passed  (seed 1, NVIDIA H100 80GB HBM3)\n");
    free(s);
    /* run.py test --case K: one case, said so ("all 1 cases" before). */
    x.sec.count = x.sec.passed = 1;
    bw_report_test_text(cap_open(&c), &x.rep, 0);
    s = cap_close(&c);
    ck_assert_str_eq(s, "haxpy: the one case passed  (seed 1, NVIDIA H100 80GB HBM3)\n");
    free(s);
    x.sec.count = x.sec.passed = N_CASES;
    free_fixture(&x);
}
END_TEST

START_TEST(text_not_implemented)
{
    fixture x;
    make_fixture(&x);
    x.diag.code = BW_DIAG_NOT_IMPLEMENTED;
    x.diag.name = "not_implemented";
    x.sec.status = x.rep.status = "not_implemented";
    capture c;
    bw_report_test_text(cap_open(&c), &x.rep, 0);
    char *s = cap_close(&c);
    HAS(s, "haxpy: not implemented yet (no case changed the output).\n");
    HAS(s, "Write your kernel in exercises/haxpy/haxpy.cu.");
    HAS(s, "3 of 6 cases failed");
    LACKS(s, "failing cases");   /* nothing to learn from them */
    free(s);
    free_fixture(&x);
}
END_TEST

START_TEST(text_error)
{
    fixture x;
    make_fixture(&x);
    x.rep.status = "error";
    x.rep.error = "no CUDA device: none visible";
    x.rep.n_sections = 0;
    capture c;
    bw_report_test_text(cap_open(&c), &x.rep, 0);
    char *s = cap_close(&c);
    ck_assert_str_eq(s, "haxpy: could not run: no CUDA device: none visible\n");
    free(s);
    free_fixture(&x);
}
END_TEST

START_TEST(text_sanitizer_section)
{
    fixture x;
    make_fixture(&x);
    x.sec.sanitizer = "memcheck";
    x.sec.note = "only some groups run under the sanitizer";
    capture c;
    bw_report_test_text(cap_open(&c), &x.rep, 0);
    char *s = cap_close(&c);
    HAS(s, "haxpy under compute-sanitizer memcheck: 1 of 6 cases passed");
    HAS(s, "  note: only some groups run under the sanitizer\n");
    HAS(s, "--case 41 --sanitize memcheck\n");
    LACKS(s, "CUDA API call return an error");
    free(s);
    /* A CUDA API error the code got back is a note under the passing case. */
    x.results[0].sanitizer_note = strdup("========= Program hit cudaErrorInvalidValue (error 1) "
                                         "on CUDA API call to cudaDeviceSetLimit.\n");
    bw_report_test_text(cap_open(&c), &x.rep, 0);
    s = cap_close(&c);
    HAS(s, "  note: compute-sanitizer saw a CUDA API call return an error in 1 case (it costs "
           "nothing by itself");
    HAS(s, "      ========= Program hit cudaErrorInvalidValue (error 1) on CUDA API call to "
           "cudaDeviceSetLimit.\n");
    free(s);
    ck_assert_int_eq(bw_report_test_json_to(cap_open(&c), &x.rep), 0);
    s = cap_close(&c);
    HAS(s, "\"sanitizer_note\": \"========= Program hit cudaErrorInvalidValue");
    HAS(s, "\"sanitizer_note\": null");
    free(s);
    free_fixture(&x);
}
END_TEST

START_TEST(json_test_report)
{
    fixture x;
    make_fixture(&x);
    capture c;
    ck_assert_int_eq(bw_report_test_json_to(cap_open(&c), &x.rep), 0);
    char *s = cap_close(&c);
    HAS(s, "\"tool\": \"bwgrade\"");
    HAS(s, "\"mode\": \"test\"");
    HAS(s, "\"exercise\": \"haxpy\"");
    HAS(s, "\"seed\": 1,");
    HAS(s, "\"hidden\": false");
    HAS(s, "\"cc\": \"9.0\"");
    HAS(s, "\"peak_gbs\": 3352.32");
    HAS(s, "\"status\": \"fail\"");
    HAS(s, "\"passed\": 1,");
    HAS(s, "\"total\": 6,");
    HAS(s, "{\"code\": \"tail\", \"text\": \"Only cases");
    HAS(s, "\"outcome\": \"fail\"");
    HAS(s, "\"alpha\": 0.37,");
    HAS(s, "\"max_ulps\": \"inf\"");
    HAS(s, "{\"index\": 8, \"expected\": \"0x3f80\", \"got\": \"0x7fd7\", \"expected_value\": 1.0, "
           "\"got_value\": \"nan\", \"ulps\": \"inf\"}");
    HAS(s, "\"detail\": \"killed by signal SIGSEGV\"");
    HAS(s, "\"student_output\": \"hello from the kernel\\nline 2");
    HAS(s, "\"guard_first\": -2");
    HAS(s, "\"nothing_written\": false");
    LACKS(s, "\"sanitize\"");
    /* One case per line: six case lines between the brackets. */
    const char *cases = strstr(s, "\"cases\": [\n");
    ck_assert_ptr_nonnull(cases);
    ck_assert_int_eq(count_lines(cases), 6 + 3);
    free(s);
    free_fixture(&x);
}
END_TEST

START_TEST(json_error_report)
{
    fixture x;
    make_fixture(&x);
    x.rep.status = "error";
    x.rep.error = "no CUDA device";
    x.rep.device = NULL;
    x.rep.n_sections = 0;
    x.rep.passed = x.rep.failed = x.rep.skipped = x.rep.total = 0;
    capture c;
    ck_assert_int_eq(bw_report_test_json_to(cap_open(&c), &x.rep), 0);
    char *s = cap_close(&c);
    HAS(s, "\"device\": null");
    HAS(s, "\"status\": \"error\"");
    HAS(s, "\"error\": \"no CUDA device\"");
    HAS(s, "\"cases\": []");
    free(s);
    free_fixture(&x);
}
END_TEST

START_TEST(json_file_is_replaced_whole)
{
    fixture x;
    make_fixture(&x);
    char dir[] = "/tmp/bwlab_test_report_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/out.json", dir);
    ck_assert_int_eq(bw_report_test_json(path, &x.rep), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char head[2] = {0};
    ck_assert_int_eq((int)fread(head, 1, 1, f), 1);
    ck_assert_int_eq(head[0], '{');
    fclose(f);
    unlink(path);
    rmdir(dir);
    /* A directory that does not exist: an error, not a crash. */
    ck_assert_int_eq(bw_report_test_json("/nonexistent-dir/x.json", &x.rep), -1);
    free_fixture(&x);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *t = tcase_create("format");
    tcase_add_test(t, format_bf16_values);
    tcase_add_test(t, format_values_of_every_type);
    tcase_add_test(t, format_sizes_and_versions);
    tcase_add_test(t, peak_bandwidth);
    suite_add_tcase(s, t);
    t = tcase_create("test_text");
    tcase_add_test(t, text_failing_report);
    tcase_add_test(t, text_wraps_diagnosis);
    tcase_add_test(t, text_quiet_is_one_line);
    tcase_add_test(t, text_all_passed);
    tcase_add_test(t, text_not_implemented);
    tcase_add_test(t, text_error);
    tcase_add_test(t, text_sanitizer_section);
    suite_add_tcase(s, t);
    t = tcase_create("test_json");
    tcase_add_test(t, json_test_report);
    tcase_add_test(t, json_error_report);
    tcase_add_test(t, json_file_is_replaced_whole);
    suite_add_tcase(s, t);
    return bw_run_suite(s);
}
