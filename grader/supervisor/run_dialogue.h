/* The grader's side of a RUN dialogue (protocol.h): the images go to the
 * worker chunk by chunk through the ring, and come back the same way, each
 * chunk handed to the caller as it lands. */
#ifndef BWLAB_RUN_DIALOGUE_H
#define BWLAB_RUN_DIALOGUE_H
#include <stdint.h>
#include "protocol.h"
#include "supervisor.h"

/* Where a dialogue's time went (BWLAB_TIMING), seconds. */
typedef struct {
    double upload, fill;       /* from the RUN to the last chunk's acknowledgement; in fill */
    double call;               /* from there to the first chunk back */
    double download, take;     /* from there to the end; in take */
} bw_dialogue_times;

typedef struct {
    /* Write chunk c of every array into its slot (bw_slot_part). */
    void (*fill)(void *ctx, const bw_request *run, uint8_t *ring, int64_t c);
    /* Chunk c of every array, back from the device, is in its slot. */
    void (*take)(void *ctx, const bw_request *run, const uint8_t *ring, int64_t c);
    void *ctx;
    bw_dialogue_times *times;  /* NULL, or filled in */
} bw_chunk_ops;

/* Runs the dialogue for run (a RUN request with its plan, stream_plan.h)
 * within timeout_s in all. BW_CALL_OK means the final RUN reply is in *rep
 * (check its status: an error may come at any step, and then not every
 * chunk was taken). Other results as for bw_worker_call. */
bw_call_status bw_run_dialogue(bw_worker *w, const bw_request *run, uint8_t *ring,
                               const bw_chunk_ops *ops, bw_reply *rep, double timeout_s,
                               char **why);

#endif
