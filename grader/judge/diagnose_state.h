/* What the diagnosis files share (diagnose.c, diagnose_text.c,
 * diagnose_elementwise.c, diagnose_shapes.c): the state of one diagnosis,
 * the sentence being written, and the questions every detector asks of the
 * results. Private to the judge. */
#ifndef BWLAB_DIAGNOSE_STATE_H
#define BWLAB_DIAGNOSE_STATE_H
#include <stddef.h>
#include <stdint.h>
#include "diagnose.h"

/* ---- a growable sentence: text length is unbounded (details, names) ---- */

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

void sb_printf(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef struct {
    const bw_exercise *ex;
    const bw_case *cases;
    const bw_case_result *res;
    int count;
    int nfail, first_fail;
    int vec;                 /* elements of the output per 16-byte vector: 8 for bf16 */
    bw_diagnosis *out;
    int nout;
    int oom;
} diag_state;

/* Adds the sentence as a diagnosis (or notes that memory ran out). */
void emit(diag_state *d, bw_diag_code code, sbuf *s);

/* ---- how things are named in the text (diagnose_text.c) ---- */

void sb_array(sbuf *s, const bw_exercise *ex, int k);
/* "0x3f80 (1)", "0x0001 (9.184e-41, subnormal)", "0x7fc0 (NaN)": bits of type t. */
void sb_value(sbuf *s, bw_type t, uint32_t bits);
/* "case K (n=..., offset=... elements, ... values, alpha=...)"; capital at a sentence's start. */
void sb_case_at(sbuf *s, const diag_state *d, const bw_case *c, int capital);
void sb_case(sbuf *s, const diag_state *d, const bw_case *c);
/* "at index i it expected E and got G" for a case's first reported mismatch. */
void sb_first_mismatch(sbuf *s, const diag_state *d, const bw_case_result *r);
/* "case K (...) has 3 wrong elements, indices ...; at index ..." or how it ended. */
void describe_failure_at(sbuf *s, const diag_state *d, int i, int capital);
void describe_failure(sbuf *s, const diag_state *d, int i);

/* ---- what the results say (diagnose.c) ---- */

int failed(const bw_case_result *r);
int crashed(const bw_case_result *r);
/* A failure with wrong elements and none of the more specific signs. */
int plain_wrong(const bw_case_result *r);
/* Every failing case satisfies pred. */
int all_failing(const diag_state *d,
                int (*pred)(const diag_state *, const bw_case *, const bw_case_result *));
/* Does some case pass that is like case f in n but has the property? */
int similar_pass(const diag_state *d, int f, int (*prop)(const diag_state *, const bw_case *));
/* How many values key takes over the failing cases (keys are below 256). */
int distinct_failing(const diag_state *d, int (*key)(const diag_state *, const bw_case *));
/* The case to show: the first failing one that reports a mismatch, one long
 * enough (n > 16) to show where in the array it lies if there is one, else
 * the first failing case. */
int evidence_case(const diag_state *d);

/* Where the wrong elements of cases long enough to tell lie. */
typedef struct {
    int located;      /* failing cases with mismatches and n > 16 */
    int all_head;     /* all their wrong elements among the first 8 */
    int all_tail;     /* all among the last 8 */
} locations;

/* ---- the detectors, each adding at most one diagnosis; the ints say
 * whether it did ---- */

int detect_not_implemented(diag_state *d);
void detect_crash(diag_state *d);
void detect_timeout(diag_state *d);
void detect_guard(diag_state *d);
void detect_input_modified(diag_state *d);
int detect_race(diag_state *d);
void detect_none_found(diag_state *d);

/* diagnose_elementwise.c (head and the largest n also serve the others) */
locations locate(const diag_state *d);
int detect_head(diag_state *d, const locations *L);
int detect_tail(diag_state *d, const locations *L);
int detect_large_n(diag_state *d);
int detect_special_values(diag_state *d);
int detect_rounding(diag_state *d);

/* diagnose_shapes.c */
int detect_sum_patterns(diag_state *d);
int detect_matrix_patterns(diag_state *d);

#endif
