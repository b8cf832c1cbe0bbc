/* A small streaming JSON writer: values go straight to a FILE *, with commas,
 * indentation and string escaping handled here so callers cannot get them
 * wrong.
 *
 * Strings: ", \ and control characters are escaped (\n \t \r \b \f, else
 * \u00XX; DEL too). Valid UTF-8 passes through unchanged; each byte that is
 * not part of a valid UTF-8 sequence becomes \ufffd, so the document stays
 * valid UTF-8 even when it quotes raw student output. NULL writes null.
 *
 * Numbers: finite doubles use the fewest significant digits that read back
 * as the same value, with ".0" added to integral values so readers keep them
 * as floating point. Non-finite doubles are written as the strings "inf",
 * "-inf" and "nan" (JSON has no literal for them); use
 * bw_json_number_or_null where "no value" should read as null instead.
 *
 * Layout: containers opened at nesting level < pretty_depth put each member on
 * its own line (two-space indent); deeper ones stay on one line, so e.g. a
 * list of records prints one record per line. pretty_depth 0: all one line.
 *
 * Misuse (a value where a key is due, unbalanced ends, nesting deeper than
 * BW_JSON_MAX_DEPTH) sets w->error; later calls then write nothing. */
#ifndef BWLAB_JSON_WRITER_H
#define BWLAB_JSON_WRITER_H
#include <stdint.h>
#include <stdio.h>

#define BW_JSON_MAX_DEPTH 64   /* one bit per level in the masks below */

typedef struct {
    FILE *f;
    int depth;            /* open containers */
    int pretty_depth;
    int after_key;        /* a key was written; its value comes next */
    int top_done;         /* the one top-level value is complete */
    int error;
    uint64_t is_object;   /* bit d: the container at level d is an object */
    uint64_t has_member;  /* bit d: it already holds a member */
    uint64_t is_pretty;   /* bit d: one member per line */
} bw_json;

void bw_json_init(bw_json *w, FILE *f, int pretty_depth);

void bw_json_begin_object(bw_json *w);
void bw_json_end_object(bw_json *w);
void bw_json_begin_array(bw_json *w);
void bw_json_end_array(bw_json *w);

/* Inside an object: the next member's name; a value must follow. */
void bw_json_key(bw_json *w, const char *key);

void bw_json_string(bw_json *w, const char *s);
void bw_json_int(bw_json *w, int64_t v);
void bw_json_uint(bw_json *w, uint64_t v);
void bw_json_double(bw_json *w, double v);
/* Shortest digits that read back as the same float (0.37f prints 0.37). */
void bw_json_float(bw_json *w, float v);
void bw_json_number_or_null(bw_json *w, double v); /* null when not finite */
void bw_json_bool(bw_json *w, int v);
void bw_json_null(bw_json *w);

/* Key plus value in one call. */
void bw_json_kstring(bw_json *w, const char *key, const char *s);
void bw_json_kint(bw_json *w, const char *key, int64_t v);
void bw_json_kuint(bw_json *w, const char *key, uint64_t v);
void bw_json_kdouble(bw_json *w, const char *key, double v);
void bw_json_kfloat(bw_json *w, const char *key, float v);
void bw_json_knumber_or_null(bw_json *w, const char *key, double v);
void bw_json_kbool(bw_json *w, const char *key, int v);

/* Ends the document with a newline and flushes. Returns 0 when exactly one
 * complete value was written without misuse or I/O error, else -1. */
int bw_json_finish(bw_json *w);

/* The escaped form of s, quotes included, as the writer would emit it. */
void bw_json_write_string(FILE *f, const char *s);

#endif
