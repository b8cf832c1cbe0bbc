/* Streaming JSON writer; see json_writer.h for the output rules. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json_writer.h"

#define BIT(d) (UINT64_C(1) << (d))

void bw_json_init(bw_json *w, FILE *f, int pretty_depth)
{
    memset(w, 0, sizeof *w);
    w->f = f;
    w->pretty_depth = pretty_depth;
}

static void indent(bw_json *w, int level)
{
    fputc('\n', w->f);
    for (int i = 0; i < level; i++)
        fputs("  ", w->f);
}

/* Everything a value (or a key) needs written before it: the separator from
 * the previous member and the line break in pretty containers. Returns 0 if
 * the value may be written here. */
static int before_item(bw_json *w, int is_key)
{
    if (w->error)
        return -1;
    if (w->depth == 0) {
        if (is_key || w->top_done) {
            w->error = 1;
            return -1;
        }
        return 0;
    }
    int level = w->depth - 1;
    int in_object = (w->is_object & BIT(level)) != 0;
    if (w->after_key) {
        /* The key already placed us: only a value may follow it. */
        if (is_key) {
            w->error = 1;
            return -1;
        }
        w->after_key = 0;
        return 0;
    }
    if (in_object != is_key) {   /* objects take key, value; arrays values only */
        w->error = 1;
        return -1;
    }
    int first = (w->has_member & BIT(level)) == 0;
    if (!first)
        fputc(',', w->f);
    if (w->is_pretty & BIT(level))
        indent(w, w->depth);
    else if (!first)
        fputc(' ', w->f);
    w->has_member |= BIT(level);
    return 0;
}

static void after_value(bw_json *w)
{
    if (w->depth == 0)
        w->top_done = 1;
}

static void begin(bw_json *w, int object)
{
    if (before_item(w, 0) != 0)
        return;
    if (w->depth >= BW_JSON_MAX_DEPTH) {
        w->error = 1;
        return;
    }
    int level = w->depth++;
    uint64_t b = BIT(level);
    w->is_object = object ? (w->is_object | b) : (w->is_object & ~b);
    w->has_member &= ~b;
    w->is_pretty = level < w->pretty_depth ? (w->is_pretty | b) : (w->is_pretty & ~b);
    fputc(object ? '{' : '[', w->f);
}

static void end(bw_json *w, int object)
{
    if (w->error)
        return;
    if (w->depth == 0 || w->after_key) {
        w->error = 1;
        return;
    }
    int level = w->depth - 1;
    if (((w->is_object & BIT(level)) != 0) != object) {
        w->error = 1;
        return;
    }
    w->depth--;
    if ((w->is_pretty & BIT(level)) && (w->has_member & BIT(level)))
        indent(w, w->depth);
    fputc(object ? '}' : ']', w->f);
    after_value(w);
}

void bw_json_begin_object(bw_json *w) { begin(w, 1); }
void bw_json_end_object(bw_json *w) { end(w, 1); }
void bw_json_begin_array(bw_json *w) { begin(w, 0); }
void bw_json_end_array(bw_json *w) { end(w, 0); }

/* Length of the valid UTF-8 sequence starting at s (a non-ASCII lead byte),
 * or 0 if it is not one. Rejects overlong forms, surrogates and code points
 * above U+10FFFF, as RFC 3629 requires. */
static int utf8_sequence(const unsigned char *s)
{
    unsigned char b = s[0];
    unsigned char lo = 0x80, hi = 0xBF;
    int len;
    if (b >= 0xC2 && b <= 0xDF)
        len = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    /* The NUL terminator fails the range test, so this never reads past it. */
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

void bw_json_write_string(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        unsigned char c = *s;
        if (c >= 0x80) {
            int len = utf8_sequence(s);
            if (len == 0) {
                fputs("\\ufffd", f);
                s++;
            } else {
                fwrite(s, 1, (size_t)len, f);
                s += len;
            }
            continue;
        }
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (c < 0x20 || c == 0x7F)
                fprintf(f, "\\u%04x", (unsigned)c);
            else
                fputc(c, f);
        }
        s++;
    }
    fputc('"', f);
}

void bw_json_key(bw_json *w, const char *key)
{
    if (!key) {
        w->error = 1;
        return;
    }
    if (before_item(w, 1) != 0)
        return;
    bw_json_write_string(w->f, key);
    fputs(": ", w->f);
    w->after_key = 1;
}

void bw_json_string(bw_json *w, const char *s)
{
    if (before_item(w, 0) != 0)
        return;
    if (s)
        bw_json_write_string(w->f, s);
    else
        fputs("null", w->f);
    after_value(w);
}

void bw_json_int(bw_json *w, int64_t v)
{
    if (before_item(w, 0) != 0)
        return;
    fprintf(w->f, "%lld", (long long)v);
    after_value(w);
}

void bw_json_uint(bw_json *w, uint64_t v)
{
    if (before_item(w, 0) != 0)
        return;
    fprintf(w->f, "%llu", (unsigned long long)v);
    after_value(w);
}

static const char *non_finite_name(double v)
{
    if (isnan(v))
        return "nan";
    return v > 0 ? "inf" : "-inf";
}

/* A "%g" result that reads back as an integer gets ".0", so it stays a float. */
static void put_number(FILE *f, const char *digits)
{
    fputs(digits, f);
    if (!strpbrk(digits, ".eE"))
        fputs(".0", f);
}

void bw_json_double(bw_json *w, double v)
{
    if (before_item(w, 0) != 0)
        return;
    if (!isfinite(v)) {
        bw_json_write_string(w->f, non_finite_name(v));
    } else {
        /* 32 bytes hold any "%.17g" of a double (at most 24 characters). */
        char buf[32];
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
        put_number(w->f, buf);
    }
    after_value(w);
}

void bw_json_float(bw_json *w, float v)
{
    if (before_item(w, 0) != 0)
        return;
    if (!isfinite(v)) {
        bw_json_write_string(w->f, non_finite_name(v));
    } else {
        char buf[32];
        for (int prec = 1; prec <= 9; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, (double)v);
            if (strtof(buf, NULL) == v)
                break;
        }
        put_number(w->f, buf);
    }
    after_value(w);
}

void bw_json_number_or_null(bw_json *w, double v)
{
    if (isfinite(v))
        bw_json_double(w, v);
    else
        bw_json_null(w);
}

void bw_json_bool(bw_json *w, int v)
{
    if (before_item(w, 0) != 0)
        return;
    fputs(v ? "true" : "false", w->f);
    after_value(w);
}

void bw_json_null(bw_json *w)
{
    if (before_item(w, 0) != 0)
        return;
    fputs("null", w->f);
    after_value(w);
}

void bw_json_kstring(bw_json *w, const char *k, const char *s)
{
    bw_json_key(w, k);
    bw_json_string(w, s);
}

void bw_json_kint(bw_json *w, const char *k, int64_t v)
{
    bw_json_key(w, k);
    bw_json_int(w, v);
}

void bw_json_kuint(bw_json *w, const char *k, uint64_t v)
{
    bw_json_key(w, k);
    bw_json_uint(w, v);
}

void bw_json_kdouble(bw_json *w, const char *k, double v)
{
    bw_json_key(w, k);
    bw_json_double(w, v);
}

void bw_json_kfloat(bw_json *w, const char *k, float v)
{
    bw_json_key(w, k);
    bw_json_float(w, v);
}

void bw_json_knumber_or_null(bw_json *w, const char *k, double v)
{
    bw_json_key(w, k);
    bw_json_number_or_null(w, v);
}

void bw_json_kbool(bw_json *w, const char *k, int v)
{
    bw_json_key(w, k);
    bw_json_bool(w, v);
}

int bw_json_finish(bw_json *w)
{
    if (!w->error && (w->depth != 0 || !w->top_done))
        w->error = 1;
    fputc('\n', w->f);
    if (fflush(w->f) != 0 || ferror(w->f))
        w->error = 1;
    return w->error ? -1 : 0;
}
