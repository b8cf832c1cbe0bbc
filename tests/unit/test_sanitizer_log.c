/* Sorting compute-sanitizer's log (grader/supervisor/sanitizer_log.c): which findings
 * cost a case, which are only shown. Each log is written in the format
 * compute-sanitizer documents: a finding is a headline after the mark and one
 * blank, its details indented further, a bare mark after it, and an
 * "ERROR SUMMARY" at the end. */
#include <stdlib.h>
#include <string.h>
#include "check_support.h"
#include "sanitizer_log.h"

#define HAS(text, needle) ck_assert_msg((text) != NULL && strstr((text), (needle)) != NULL, \
                                        "missing \"%s\" in:\n%s", (needle), (text) ? (text) : "(null)")

#define CAP 4000

/* An API error the student's code got back (the corpus entry api_error_ignored). */
static const char api_error[] =
    "========= COMPUTE-SANITIZER\n"
    "========= Program hit cudaErrorInvalidValue (error 1) due to \"invalid argument\" on CUDA API "
    "call to cudaDeviceSetLimit.\n"
    "=========     Saved host backtrace up to driver entry point at error\n"
    "=========         Host Frame: cudaDeviceSetLimit [0x4a3c1] in libcudart.so.13\n"
    "=========         Host Frame: haxpy(long long, float, __nv_bfloat16 const*, __nv_bfloat16*) "
    "[0x1b2d] in bw_worker_haxpy\n"
    "=========\n"
    "========= ERROR SUMMARY: 1 error\n";

/* A write past the end, memcheck's precise report. */
static const char invalid_write[] =
    "========= Invalid __global__ write of size 2 bytes\n"
    "=========     at haxpy_kernel(long long, float, const __nv_bfloat16 *, __nv_bfloat16 *)+0x1c0 "
    "in haxpy.cu:11\n"
    "=========     by thread (64,0,0) in block (0,0,0)\n"
    "=========     Access to 0x7f3a52000080 is out of bounds\n"
    "=========     and is 1 bytes after the nearest allocation at 0x7f3a52000000 of size 128 bytes\n"
    "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
    "=========         Host Frame: cudaLaunchKernel [0x7e2f1] in libcudart.so.13\n"
    "=========\n";

static const char race[] =
    "========= Error: Race reported between Write access at tile_sum(const float *, float *)+0x90 "
    "in sum.cu:21\n"
    "=========     and Read access at tile_sum(const float *, float *)+0xd0 in sum.cu:25 "
    "[248 hazards]\n"
    "=========\n"
    "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n";

static const char leak[] =
    "========= Leaked 1048576 bytes at 0x7f3a54000000\n"
    "=========     Saved host backtrace up to driver entry point at allocation time\n"
    "=========         Host Frame: cudaMalloc [0x51c20] in libcudart.so.13\n"
    "=========\n"
    "========= LEAK SUMMARY: 1048576 bytes leaked in 1 allocations\n"
    "========= ERROR SUMMARY: 1 error\n";

static const char uninit[] =
    "========= Uninitialized __global__ memory read of size 2 bytes\n"
    "=========     at vector_sum_kernel(...)+0x110 in vector_sum.cu:9\n"
    "=========     by thread (3,0,0) in block (0,0,0)\n"
    "=========\n";

static const char unknown[] =
    "========= Barrier error detected. Divergent thread(s) in warp\n"
    "=========     at k()+0x40 in k.cu:3\n"
    "=========\n";

static bw_sanitizer_findings sort(const char *log, int carry)
{
    bw_sanitizer_findings f;
    bw_sanitizer_sort(log, CAP, carry, &f);
    return f;
}

START_TEST(api_error_alone_costs_nothing_and_is_kept)
{
    bw_sanitizer_findings f = sort(api_error, -1);
    ck_assert_int_eq(f.costly, 0);
    ck_assert_int_eq(f.count[BW_SAN_API_ERROR], 1);
    ck_assert_ptr_null(f.costly_text);
    HAS(f.note_text, "========= Program hit cudaErrorInvalidValue (error 1) due to \"invalid argument\" "
                     "on CUDA API call to cudaDeviceSetLimit.\n");
    HAS(f.note_text, "Host Frame: haxpy(long long");
    ck_assert_ptr_null(strstr(f.note_text, "ERROR SUMMARY"));
    ck_assert_ptr_null(strstr(f.note_text, "COMPUTE-SANITIZER"));
    ck_assert_int_eq(f.open_kind, -1);
    bw_sanitizer_findings_free(&f);
}
END_TEST

/* Each memory finding costs, with its exact lines. */
START_TEST(memory_findings_cost)
{
    static const struct {
        const char *log;
        bw_san_kind kind;
        const char *line;
    } cases[] = {
        {invalid_write, BW_SAN_ACCESS, "========= Invalid __global__ write of size 2 bytes\n"},
        {race, BW_SAN_RACE, "and Read access at tile_sum"},
        {leak, BW_SAN_LEAK, "========= Leaked 1048576 bytes at 0x7f3a54000000\n"},
        {uninit, BW_SAN_UNINIT, "Uninitialized __global__ memory read of size 2 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bw_sanitizer_findings f = sort(cases[i].log, -1);
        ck_assert_msg(f.costly == 1, "case %zu: %d costly", i, f.costly);
        ck_assert_int_eq(f.count[cases[i].kind], 1);
        ck_assert_int_eq(f.count[BW_SAN_UNKNOWN], 0);
        HAS(f.costly_text, cases[i].line);
        ck_assert_ptr_null(f.note_text);
        bw_sanitizer_findings_free(&f);
    }
}
END_TEST

START_TEST(an_unknown_finding_counts_and_says_so)
{
    bw_sanitizer_findings f = sort(unknown, -1);
    ck_assert_int_eq(f.costly, 1);
    ck_assert_int_eq(f.count[BW_SAN_UNKNOWN], 1);
    HAS(f.costly_text, "bwgrade does not know this compute-sanitizer finding, so it counts");
    HAS(f.costly_text, "========= Barrier error detected. Divergent thread(s) in warp\n"
                       "=========     at k()+0x40 in k.cu:3\n");
    bw_sanitizer_findings_free(&f);
    /* a line without the mark is not compute-sanitizer's own either */
    f = sort("Segmentation fault in the sanitizer\n", -1);
    ck_assert_int_eq(f.count[BW_SAN_UNKNOWN], 1);
    bw_sanitizer_findings_free(&f);
    /* and a log the supervisor had to cut hides what was cut */
    f = sort("========= Program hit cudaErrorInvalidValue (error 1) on CUDA API call to x.\n"
             "[... 9000 more bytes cut]\n", -1);
    ck_assert_int_eq(f.costly, 1);
    ck_assert_int_eq(f.count[BW_SAN_CUT], 1);
    HAS(f.costly_text, "what was cut could not be checked");
    bw_sanitizer_findings_free(&f);
}
END_TEST

/* A whole log as compute-sanitizer writes it for a kernel that writes past
 * the end and code that ignores a failed call: one finding costs, the API
 * error is kept apart, costly lines first. */
START_TEST(a_real_log_sorts_into_both)
{
    char log[4096];
    strcpy(log, "========= COMPUTE-SANITIZER\n");
    strcat(log, api_error + strlen("========= COMPUTE-SANITIZER\n"));
    strcat(log, invalid_write);
    strcat(log, "========= Program hit cudaErrorLaunchFailure (error 719) due to \"unspecified launch "
                "failure\" on CUDA API call to cudaDeviceSynchronize.\n"
                "=========     Saved host backtrace up to driver entry point at error\n"
                "=========\n"
                "========= ERROR SUMMARY: 3 errors\n"
                "========= Target application returned an error\n");
    bw_sanitizer_findings f = sort(log, -1);
    ck_assert_int_eq(f.costly, 1);
    ck_assert_int_eq(f.count[BW_SAN_ACCESS], 1);
    ck_assert_int_eq(f.count[BW_SAN_API_ERROR], 3 - 1);
    ck_assert_int_eq(f.count[BW_SAN_UNKNOWN], 0);
    ck_assert(strncmp(f.costly_text, "========= Invalid __global__ write", 34) == 0);
    HAS(f.note_text, "cudaDeviceSetLimit");
    HAS(f.note_text, "cudaDeviceSynchronize");
    ck_assert_ptr_null(strstr(f.costly_text, "Program hit"));
    bw_sanitizer_findings_free(&f);
}
END_TEST

/* Releases before compute-sanitizer put details after one blank too. */
START_TEST(details_after_one_blank_stay_with_their_finding)
{
    bw_sanitizer_findings f = sort("========= Invalid __global__ read of size 8\n"
                                   "========= at 0x000000c8 in helper.cu:75:project(double*, int)\n"
                                   "========= by thread (9,0,0) in block (0,0,0)\n"
                                   "========= Address 0x000370e8 is out of bounds\n"
                                   "=========\n", -1);
    ck_assert_int_eq(f.costly, 1);
    ck_assert_int_eq(f.count[BW_SAN_ACCESS], 1);
    ck_assert_int_eq(f.count[BW_SAN_UNKNOWN], 0);
    bw_sanitizer_findings_free(&f);
}
END_TEST

/* A finding split between two cases' logs: its rest is shown with the
 * second case and not counted again. */
START_TEST(a_split_finding_goes_on_in_the_next_log)
{
    bw_sanitizer_findings f = sort("========= Program hit cudaErrorInvalidValue (error 1) due to "
                                   "\"invalid argument\" on CUDA API call to cudaDeviceSetLimit.\n"
                                   "=========     Saved host backtrace up to driver entry point\n", -1);
    ck_assert_int_eq(f.open_kind, BW_SAN_API_ERROR);
    int carry = f.open_kind;
    bw_sanitizer_findings_free(&f);
    f = sort("=========         Host Frame: cudaDeviceSetLimit [0x4a3c1] in libcudart.so.13\n"
             "=========\n", carry);
    ck_assert_int_eq(f.costly, 0);
    HAS(f.note_text, "Host Frame: cudaDeviceSetLimit");
    ck_assert_int_eq(f.open_kind, -1);
    bw_sanitizer_findings_free(&f);
    /* the same lines with nothing carried are details of nothing known */
    f = sort("=========         Host Frame: cudaDeviceSetLimit [0x4a3c1] in libcudart.so.13\n", -1);
    ck_assert_int_eq(f.costly, 1);
    bw_sanitizer_findings_free(&f);
    /* a costly finding's rest costs nothing more */
    f = sort("=========     by thread (64,0,0) in block (0,0,0)\n=========\n", BW_SAN_ACCESS);
    ck_assert_int_eq(f.costly, 0);
    HAS(f.note_text, "the rest of a finding reported with the case before");
    bw_sanitizer_findings_free(&f);
}
END_TEST

START_TEST(nothing_but_banner_and_summaries_is_nothing)
{
    bw_sanitizer_findings f = sort("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
                                   "=========\n\n", -1);
    ck_assert_int_eq(f.costly, 0);
    ck_assert_ptr_null(f.costly_text);
    ck_assert_ptr_null(f.note_text);
    bw_sanitizer_findings_free(&f);
    f = sort(NULL, -1);
    ck_assert_int_eq(f.costly, 0);
    bw_sanitizer_findings_free(&f);
}
END_TEST

START_TEST(texts_are_cut_to_the_cap)
{
    size_t n = 200 * sizeof invalid_write;
    char *log = malloc(n);
    ck_assert_ptr_nonnull(log);
    log[0] = '\0';
    for (int i = 0; i < 150; i++)
        strcat(log, invalid_write);
    bw_sanitizer_findings f;
    bw_sanitizer_sort(log, 1000, -1, &f);
    ck_assert_int_eq(f.costly, 150);   /* all counted, ... */
    ck_assert(strlen(f.costly_text) < 1100);   /* ... few shown */
    HAS(f.costly_text, "[... sanitizer log cut]\n");
    bw_sanitizer_findings_free(&f);
    free(log);
}
END_TEST

START_TEST(kinds_have_names)
{
    ck_assert_str_eq(bw_san_kind_name(BW_SAN_API_ERROR), "api_error");
    ck_assert_str_eq(bw_san_kind_name(BW_SAN_UNKNOWN), "unknown");
    const char *h = "Warp Misaligned Address";
    ck_assert_int_eq(bw_sanitizer_kind(h, strlen(h)), BW_SAN_HARDWARE);
    h = "Program hit cudaErrorInvalidValue (error 1)";   /* no "on CUDA API call to" */
    ck_assert_int_eq(bw_sanitizer_kind(h, strlen(h)), BW_SAN_UNKNOWN);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sanitizer_log");
    TCase *t = tcase_create("sort");
    tcase_add_test(t, api_error_alone_costs_nothing_and_is_kept);
    tcase_add_test(t, memory_findings_cost);
    tcase_add_test(t, an_unknown_finding_counts_and_says_so);
    tcase_add_test(t, a_real_log_sorts_into_both);
    tcase_add_test(t, details_after_one_blank_stay_with_their_finding);
    tcase_add_test(t, a_split_finding_goes_on_in_the_next_log);
    tcase_add_test(t, nothing_but_banner_and_summaries_is_nothing);
    tcase_add_test(t, texts_are_cut_to_the_cap);
    tcase_add_test(t, kinds_have_names);
    suite_add_tcase(s, t);
    return bw_run_suite(s);
}
