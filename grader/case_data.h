/* One case's images in shared memory: built straight from the case's seed,
 * and checked after the call by regenerating the inputs and the expected
 * output block by block. No copy of any array is kept, so the largest case
 * (2^31 elements) costs its images and nothing more: ~13 GB of host memory
 * traffic less than keeping copies (issue 12). */
#ifndef BWLAB_CASE_DATA_H
#define BWLAB_CASE_DATA_H
#include <stdint.h>
#include "case_result.h"
#include "cases.h"
#include "exercise.h"
#include "image.h"
#include "protocol.h"
#include "shm.h"

typedef struct {
    const bw_exercise *ex;
    bw_case c;
    bw_image_layout layout;
    int threads;
} bw_case_data;

void bw_case_data_init(bw_case_data *d, const bw_exercise *ex, const bw_case *c, int sanitize,
                       int threads);

/* Lays out the images in shared memory: guards, inputs, BW_POISON in an
 * output that is not read. Returns the first image, or NULL with *why set. */
uint8_t *bw_case_data_build(const bw_case_data *d, bw_shm *shm, char **why);

/* A request of the given kind for these images. */
void bw_case_data_request(const bw_case_data *d, bw_req_kind kind, bw_request *req);

/* Checks the images the worker sent back: guards, inputs unchanged, output
 * against the reference, nothing written. Sets outcome to PASS or FAIL. */
void bw_case_data_check(const bw_case_data *d, const uint8_t *images, bw_case_result *r);

/* A hash of the output's bits, to tell two runs apart (race detection). */
uint64_t bw_case_data_output_hash(const bw_case_data *d, const uint8_t *images);

#endif
