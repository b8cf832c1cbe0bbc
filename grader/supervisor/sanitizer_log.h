/* compute-sanitizer's log of one case, sorted into findings that cost the
 * case (memory errors, hazards, anything not recognised) and notes that do
 * not (a CUDA API error the student's code got back). */
#ifndef BWLAB_SANITIZER_LOG_H
#define BWLAB_SANITIZER_LOG_H
#include <stddef.h>

typedef enum {
    BW_SAN_API_ERROR = 0, /* "Program hit ... on CUDA API call to ...": costs nothing */
    BW_SAN_ACCESS,        /* memcheck: "Invalid __global__ read ...", device heap misuse */
    BW_SAN_HARDWARE,      /* a hardware exception: misaligned or out-of-range address, ... */
    BW_SAN_LEAK,          /* "Leaked N bytes at ..." (only with --leak-check full) */
    BW_SAN_RACE,          /* racecheck: "Race reported between ...", "... hazard detected" */
    BW_SAN_UNINIT,        /* initcheck: "Uninitialized __global__ memory read ..." */
    BW_SAN_CUT,           /* the log was cut before bwgrade read all of it */
    BW_SAN_UNKNOWN,       /* any other finding: counted, to be safe */
    BW_SAN_KINDS
} bw_san_kind;

typedef struct {
    int count[BW_SAN_KINDS]; /* findings of each kind */
    int costly;              /* findings of every kind but BW_SAN_API_ERROR */
    char *costly_text;       /* malloc'd or NULL: the costly findings' log lines, each an
                              * explaining line first where the kind is unknown or cut */
    char *note_text;         /* malloc'd or NULL: the API errors' log lines */
    int open_kind;           /* the kind of a block the log ended in without its closing
                              * mark, else -1: pass it as carry with the next log */
} bw_sanitizer_findings;

/* The kind of the finding whose first line is headline (the text after
 * compute-sanitizer's "=========" mark, leading blanks removed). */
bw_san_kind bw_sanitizer_kind(const char *headline, size_t len);
const char *bw_san_kind_name(bw_san_kind k); /* "api_error", "access", ... */

/* Sorts log (NUL-terminated, may be NULL) into f. Each text keeps the exact
 * lines of its findings, less the banner and summaries, and is cut to about
 * cap bytes. carry: the open_kind of the log read before from the same
 * worker (a block can be split between two cases' logs: details at the
 * start then belong to it and are shown, not counted again), or -1. */
void bw_sanitizer_sort(const char *log, size_t cap, int carry, bw_sanitizer_findings *f);
void bw_sanitizer_findings_free(bw_sanitizer_findings *f);

#endif
