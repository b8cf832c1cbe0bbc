/* The JSON writer: escaping, separators, layout, numbers, misuse. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "check_support.h"
#include "json_writer.h"

/* Output goes to a memory stream so each test can compare whole documents. */
typedef struct {
    char *buf;
    size_t len;
    FILE *f;
    bw_json w;
} capture;

static void cap_open(capture *c, int pretty_depth)
{
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    ck_assert_ptr_nonnull(c->f);
    bw_json_init(&c->w, c->f, pretty_depth);
}

/* Finishes the document; returns the text (owned by c) and the finish status. */
static const char *cap_close(capture *c, int *status)
{
    int st = bw_json_finish(&c->w);
    if (status)
        *status = st;
    fclose(c->f);
    return c->buf;
}

static char *string_json(const char *s)
{
    capture c;
    cap_open(&c, 0);
    bw_json_string(&c.w, s);
    int st;
    cap_close(&c, &st);
    ck_assert_int_eq(st, 0);
    return c.buf;
}

#define CHECK_STRING(in, want)                      \
    do {                                            \
        char *got_ = string_json(in);               \
        ck_assert_str_eq(got_, want "\n");          \
        free(got_);                                 \
    } while (0)

START_TEST(escapes_quote_and_backslash)
{
    CHECK_STRING("say \"hi\"", "\"say \\\"hi\\\"\"");
    CHECK_STRING("C:\\path\\", "\"C:\\\\path\\\\\"");
    CHECK_STRING("a/b", "\"a/b\"");   /* a slash needs no escape */
    CHECK_STRING("", "\"\"");
}
END_TEST

START_TEST(escapes_control_characters)
{
    CHECK_STRING("a\nb\tc\rd\be\ff", "\"a\\nb\\tc\\rd\\be\\ff\"");
    CHECK_STRING("\x01\x1f", "\"\\u0001\\u001f\"");
    CHECK_STRING("\x1b[31mred\x1b[0m", "\"\\u001b[31mred\\u001b[0m\"");
    CHECK_STRING("del\x7f", "\"del\\u007f\"");
}
END_TEST

START_TEST(utf8_passes_through)
{
    CHECK_STRING("caf\xc3\xa9", "\"caf\xc3\xa9\"");                   /* 2 bytes */
    CHECK_STRING("\xe2\x80\x94 dash", "\"\xe2\x80\x94 dash\"");       /* 3 bytes */
    CHECK_STRING("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");         /* 4 bytes */
}
END_TEST

START_TEST(invalid_utf8_is_replaced)
{
    CHECK_STRING("a\xff" "b", "\"a\\ufffdb\"");
    CHECK_STRING("\xc3", "\"\\ufffd\"");                 /* truncated at the end */
    CHECK_STRING("\xc0\xaf", "\"\\ufffd\\ufffd\"");       /* overlong '/' */
    CHECK_STRING("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");   /* a surrogate */
    CHECK_STRING("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
    CHECK_STRING("\xe2\x80" "x", "\"\\ufffd\\ufffdx\"");  /* cut short by ASCII */
}
END_TEST

START_TEST(null_string_is_null)
{
    CHECK_STRING(NULL, "null");
}
END_TEST

START_TEST(nested_compact)
{
    capture c;
    cap_open(&c, 0);
    bw_json_begin_object(&c.w);
    bw_json_kint(&c.w, "a", 1);
    bw_json_key(&c.w, "b");
    bw_json_begin_array(&c.w);
    bw_json_int(&c.w, -2);
    bw_json_begin_object(&c.w);
    bw_json_end_object(&c.w);
    bw_json_begin_array(&c.w);
    bw_json_end_array(&c.w);
    bw_json_bool(&c.w, 1);
    bw_json_null(&c.w);
    bw_json_end_array(&c.w);
    bw_json_kstring(&c.w, "c", "x");
    bw_json_kbool(&c.w, "d", 0);
    bw_json_end_object(&c.w);
    int st;
    const char *s = cap_close(&c, &st);
    ck_assert_int_eq(st, 0);
    ck_assert_str_eq(s, "{\"a\": 1, \"b\": [-2, {}, [], true, null], \"c\": \"x\", "
                        "\"d\": false}\n");
    free(c.buf);
}
END_TEST

START_TEST(nested_pretty_to_depth)
{
    capture c;
    cap_open(&c, 2);
    bw_json_begin_object(&c.w);
    bw_json_kstring(&c.w, "tool", "bwgrade");
    bw_json_key(&c.w, "empty");
    bw_json_begin_array(&c.w);
    bw_json_end_array(&c.w);
    bw_json_key(&c.w, "cases");
    bw_json_begin_array(&c.w);
    for (int i = 0; i < 2; i++) {
        bw_json_begin_object(&c.w);
        bw_json_kint(&c.w, "index", i);
        bw_json_key(&c.w, "m");
        bw_json_begin_array(&c.w);
        bw_json_int(&c.w, i);
        bw_json_end_array(&c.w);
        bw_json_end_object(&c.w);
    }
    bw_json_end_array(&c.w);
    bw_json_end_object(&c.w);
    int st;
    const char *s = cap_close(&c, &st);
    ck_assert_int_eq(st, 0);
    ck_assert_str_eq(s,
                     "{\n"
                     "  \"tool\": \"bwgrade\",\n"
                     "  \"empty\": [],\n"
                     "  \"cases\": [\n"
                     "    {\"index\": 0, \"m\": [0]},\n"
                     "    {\"index\": 1, \"m\": [1]}\n"
                     "  ]\n"
                     "}\n");
    free(c.buf);
}
END_TEST

START_TEST(numbers)
{
    capture c;
    cap_open(&c, 0);
    bw_json_begin_array(&c.w);
    bw_json_double(&c.w, 1.0);
    bw_json_double(&c.w, 0.1);
    bw_json_double(&c.w, -2.5e-300);
    bw_json_double(&c.w, 3352.32);
    bw_json_double(&c.w, 1e20);
    bw_json_double(&c.w, -0.0);
    bw_json_float(&c.w, 0.37f);
    bw_json_float(&c.w, 0.0f);
    bw_json_int(&c.w, INT64_MIN);
    bw_json_uint(&c.w, UINT64_MAX);
    bw_json_end_array(&c.w);
    int st;
    const char *s = cap_close(&c, &st);
    ck_assert_int_eq(st, 0);
    ck_assert_str_eq(s, "[1.0, 0.1, -2.5e-300, 3352.32, 1e+20, -0.0, 0.37, 0.0, "
                        "-9223372036854775808, 18446744073709551615]\n");
    free(c.buf);
}
END_TEST

START_TEST(doubles_round_trip)
{
    /* Whatever digits are chosen, they must read back exactly. */
    const double v[] = {1.0 / 3.0, 2.0 / 3.0, 0.1 + 0.2, 5e-324, 1.7976931348623157e308,
                        123456789.123456789};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        capture c;
        cap_open(&c, 0);
        bw_json_double(&c.w, v[i]);
        int st;
        const char *s = cap_close(&c, &st);
        ck_assert_int_eq(st, 0);
        ck_assert(strtod(s, NULL) == v[i]);
        free(c.buf);
    }
}
END_TEST

START_TEST(non_finite_numbers)
{
    capture c;
    cap_open(&c, 0);
    bw_json_begin_array(&c.w);
    bw_json_double(&c.w, INFINITY);
    bw_json_double(&c.w, -INFINITY);
    bw_json_double(&c.w, NAN);
    bw_json_float(&c.w, (float)INFINITY);
    bw_json_number_or_null(&c.w, NAN);
    bw_json_number_or_null(&c.w, INFINITY);
    bw_json_number_or_null(&c.w, 2.0);
    bw_json_end_array(&c.w);
    int st;
    const char *s = cap_close(&c, &st);
    ck_assert_int_eq(st, 0);
    ck_assert_str_eq(s, "[\"inf\", \"-inf\", \"nan\", \"inf\", null, null, 2.0]\n");
    free(c.buf);
}
END_TEST

START_TEST(keys_are_escaped)
{
    capture c;
    cap_open(&c, 0);
    bw_json_begin_object(&c.w);
    bw_json_kint(&c.w, "a\"b\n", 1);
    bw_json_end_object(&c.w);
    int st;
    const char *s = cap_close(&c, &st);
    ck_assert_int_eq(st, 0);
    ck_assert_str_eq(s, "{\"a\\\"b\\n\": 1}\n");
    free(c.buf);
}
END_TEST

/* Each misuse must be caught by bw_json_finish. */
START_TEST(misuse_is_reported)
{
    for (int which = 0; which < 7; which++) {
        capture c;
        cap_open(&c, 0);
        switch (which) {
        case 0: /* value without a key in an object */
            bw_json_begin_object(&c.w);
            bw_json_int(&c.w, 1);
            bw_json_end_object(&c.w);
            break;
        case 1: /* key in an array */
            bw_json_begin_array(&c.w);
            bw_json_key(&c.w, "k");
            bw_json_int(&c.w, 1);
            bw_json_end_array(&c.w);
            break;
        case 2: /* unclosed */
            bw_json_begin_array(&c.w);
            break;
        case 3: /* mismatched end */
            bw_json_begin_array(&c.w);
            bw_json_end_object(&c.w);
            break;
        case 4: /* two top-level values */
            bw_json_int(&c.w, 1);
            bw_json_int(&c.w, 2);
            break;
        case 5: /* a key with no value */
            bw_json_begin_object(&c.w);
            bw_json_key(&c.w, "k");
            bw_json_end_object(&c.w);
            break;
        case 6: /* nothing at all */
            break;
        }
        int st;
        cap_close(&c, &st);
        ck_assert_msg(st == -1, "misuse %d not reported", which);
        free(c.buf);
    }
}
END_TEST

START_TEST(too_deep_is_reported)
{
    capture c;
    cap_open(&c, 0);
    for (int i = 0; i < BW_JSON_MAX_DEPTH + 1; i++)
        bw_json_begin_array(&c.w);
    for (int i = 0; i < BW_JSON_MAX_DEPTH + 1; i++)
        bw_json_end_array(&c.w);
    int st;
    cap_close(&c, &st);
    ck_assert_int_eq(st, -1);
    free(c.buf);
}
END_TEST

START_TEST(long_string)
{
    /* No internal buffer limits the length of a string. */
    size_t n = 1 << 20;
    char *big = malloc(n + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, 'q', n);
    big[n] = '\0';
    big[n / 2] = '"';
    char *s = string_json(big);
    ck_assert_uint_eq(strlen(s), n + 2 + 1 + 1);   /* quotes, one backslash, newline */
    ck_assert(strncmp(s + 1 + n / 2, "\\\"", 2) == 0);
    free(s);
    free(big);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("json_writer");
    TCase *t = tcase_create("core");
    tcase_add_test(t, escapes_quote_and_backslash);
    tcase_add_test(t, escapes_control_characters);
    tcase_add_test(t, utf8_passes_through);
    tcase_add_test(t, invalid_utf8_is_replaced);
    tcase_add_test(t, null_string_is_null);
    tcase_add_test(t, nested_compact);
    tcase_add_test(t, nested_pretty_to_depth);
    tcase_add_test(t, numbers);
    tcase_add_test(t, doubles_round_trip);
    tcase_add_test(t, non_finite_numbers);
    tcase_add_test(t, keys_are_escaped);
    tcase_add_test(t, misuse_is_reported);
    tcase_add_test(t, too_deep_is_reported);
    tcase_add_test(t, long_string);
    suite_add_tcase(s, t);
    return bw_run_suite(s);
}
