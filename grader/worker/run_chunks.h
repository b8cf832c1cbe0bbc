/* The worker's side of a RUN dialogue (protocol.h): chunks in through the
 * ring, the student's call, chunks back out. */
#ifndef BWLAB_RUN_CHUNKS_H
#define BWLAB_RUN_CHUNKS_H
#include <stdint.h>
#include "protocol.h"

/* Runs the dialogue of RUN request q on channel chan, with the ring at ring
 * (mapped, at least q->shm_bytes). *r, prepared as the RUN reply, gets its
 * status and call_ms; the caller sends it, and exits unless it is OK (the
 * grader may have CHUNK messages on their way). Returns -1 when the channel
 * broke (nothing to send), else 0. */
int bw_run_chunks(int chan, uint8_t *ring, const bw_request *q, bw_reply *r);

#endif
