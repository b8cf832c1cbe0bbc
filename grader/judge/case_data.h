/* One case's data: the images built straight from the case's seed, and
 * checked after the call by regenerating the inputs and what the output
 * must be, block by block. No copy of any array is kept. A RUN moves the
 * images through the worker chunk by chunk (protocol.h): each chunk is
 * generated into its slot and checked as it comes back, so even the largest
 * case (2^31 elements, 13 GB of images) needs only the ring in host memory
 * (issue 12). BENCH keeps whole images in shared memory.
 *
 * Every array has its own layout (element type, count, guards). What "the
 * output is right" means depends on the exercise's shape: check_elementwise.c,
 * check_reduction.c and check_matrix.c. */
#ifndef BWLAB_CASE_DATA_H
#define BWLAB_CASE_DATA_H
#include <stdint.h>
#include "case_result.h"
#include "cases.h"
#include "exercise.h"
#include "image.h"
#include "protocol.h"
#include "run_dialogue.h"
#include "shm.h"
#include "validate.h"

/* The ring a RUN streams through: 4 slots of 64 MiB. */
#define BW_RING_SLOTS 4
#define BW_SLOT_BYTES ((uint64_t)64 << 20)

/* A reduction's result starts as this finite value, not a NaN: a kernel that
 * adds onto it without setting it first is then off by exactly this much,
 * which the diagnosis names (NaN + x would look like "never written"). */
#define BW_SUM_FILL 1234567.875f

typedef struct {
    const bw_exercise *ex;
    bw_case c;
    float scalars[BW_MAX_SCALARS];
    bw_image_layout layout[BW_MAX_ARRAYS];
    uint64_t images_bytes;             /* BENCH: every image, back to back */
    int threads;
} bw_case_data;

void bw_case_data_init(bw_case_data *d, const bw_exercise *ex, const bw_case *c, int sanitize,
                       int threads);

/* Where image k lies among whole images back to back (BENCH). */
uint64_t bw_case_data_place(const bw_case_data *d, int k);

/* A request of the given kind for these images; a RUN gets its chunk plan. */
void bw_case_data_request(const bw_case_data *d, bw_req_kind kind, bw_request *req);

/* ---- RUN: chunk by chunk ---- */

/* What the chunks taken so far add up to. */
typedef struct {
    const bw_case_data *d;
    int hash_only;                     /* a race re-run: only the output's hash */
    bw_compare_result out;
    int64_t changed[BW_MAX_ARRAYS];    /* input elements the call changed */
    int64_t first[BW_MAX_ARRAYS];      /* ... the first of them, -1 if none */
    int output_moved;                  /* in place: some output element unlike its input */
    bw_guard_scan guards[BW_MAX_ARRAYS];
    uint32_t out_hash;                 /* bw_race_hash of the output: tells two runs apart */
    int64_t chunks_taken;
    bw_sum_facts facts;                /* a reduction: its terms, summed so far */
    int got_seen;                      /* ... and its result, once read */
    uint32_t got;
    bw_shape_findings shape;           /* a matrix: where its wrong elements came from */
} bw_case_check;

/* ops that fill each chunk with the case's images and check (or, with
 * hash_only, hash) each chunk that comes back into *k. */
bw_chunk_ops bw_case_data_chunk_ops(const bw_case_data *d, bw_case_check *k, int hash_only);

/* The verdict of a check whose every chunk was taken: guards, inputs
 * unchanged, output right, nothing written. Sets the outcome to PASS or
 * FAIL. */
void bw_case_check_finish(const bw_case_check *k, bw_case_result *r);

/* Do two runs of one case differ more than a correct kernel's runs may?
 * Any bit of the output, except for a reduction's result: float atomics add
 * in a different order every run, so two results within twice the rule's
 * bound (and their rounding) of each other count as the same. r: the first
 * run's verdict. */
int bw_case_check_differs(const bw_case_check *first, const bw_case_check *again,
                          const bw_case_result *r);

/* How far two correct results of a reduction may lie apart: each within
 * the rule's bound of the exact sum and rounded once to type t at
 * magnitude at, so twice both. (Where the bound is 0 a correct kernel
 * gives the exact sum every time; the rounding stays allowed, so that a
 * wrong kernel whose atomics round differently each run, one that adds to
 * *sum without zeroing it, is diagnosed for that, not as a race.) */
double bw_sum_spread(bw_type t, double bound, double at);

/* ---- BENCH: whole images in shared memory ---- */

/* Lays out the images in shared memory: guards, inputs, the poison (a
 * reduction's result: the fill) in an output that is not read. Returns the
 * first image, or NULL with *why set. */
uint8_t *bw_case_data_build(const bw_case_data *d, bw_shm *shm, char **why);

/* Checks whole images as bw_case_check_finish does the chunks. */
void bw_case_data_check(const bw_case_data *d, const uint8_t *images, bw_case_result *r);

#endif
