/* Patterns across failing cases, turned into hints a student can act on. */
#ifndef BWLAB_DIAGNOSE_H
#define BWLAB_DIAGNOSE_H
#include "cases.h"
#include "case_result.h"

typedef enum {
    BW_DIAG_NOT_IMPLEMENTED = 0, /* nothing written in any case */
    BW_DIAG_CRASH,               /* some cases crashed or hit a CUDA error */
    BW_DIAG_TIMEOUT,             /* some cases hung */
    BW_DIAG_GUARD,               /* writes outside [0, n) */
    BW_DIAG_INPUT_MODIFIED,      /* an input array changed */
    BW_DIAG_RACE,                /* output differs between runs on the same inputs */
    BW_DIAG_HEAD,                /* fails only with offset != 0: the misaligned head */
    BW_DIAG_TAIL,                /* fails only when n is not a multiple of the vector width */
    BW_DIAG_LARGE_N,             /* fails only for the largest n: int overflow, grid limits */
    BW_DIAG_SPECIAL_VALUES,      /* fails only on NaN/Inf/subnormal/huge inputs */
    BW_DIAG_ROUNDING,            /* every error is small (a few ulps): rounding, not indexing */
    /* a reduction */
    BW_DIAG_NOT_ZEROED,          /* the result is the sum plus what the output held before */
    BW_DIAG_LOST_ELEMENTS,       /* the result lacks elements the spikes name */
    BW_DIAG_COUNTED_TWICE,       /* ... has elements the spikes name twice */
    BW_DIAG_PRECISION,           /* close to the sum, but farther than any float summation */
    /* a matrix */
    BW_DIAG_COPIED,              /* the output holds the input as it lies: copied, not transposed */
    BW_DIAG_DIMS_SWAPPED,        /* right for square shapes only: rows and cols swapped */
    BW_DIAG_EDGE_TILES,          /* only elements from the ragged edge tiles are wrong */
    BW_DIAG_NONE_FOUND           /* failures with no pattern named above */
} bw_diag_code;

typedef struct {
    bw_diag_code code;
    const char *name;   /* short stable key for JSON: "not_implemented", "tail", ... */
    char *text;         /* malloc'd sentence for the student: what, where, what to look at */
} bw_diagnosis;

/* Returns how many diagnoses were found (0 when everything passed), most
 * telling first, in *out (malloc'd; free with bw_diagnoses_free), or -1 when
 * memory ran out (*out is then NULL). */
int bw_diagnose(const bw_exercise *ex, const bw_case *cases, const bw_case_result *results,
                int count, bw_diagnosis **out);
void bw_diagnoses_free(bw_diagnosis *d, int count);

#endif
