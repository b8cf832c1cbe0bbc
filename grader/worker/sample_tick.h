/* The worker's side of the TICK exchange (protocol.h): the grader's own
 * clock sees when each timed sample starts and ends. */
#ifndef BWLAB_SAMPLE_TICK_H
#define BWLAB_SAMPLE_TICK_H
#include <stdint.h>

/* Sends READY for sample k and waits for the grader's go. */
void bw_tick_ready(int chan, uint64_t nonce, int64_t k);
/* Sends DONE for sample k. */
void bw_tick_done(int chan, uint64_t nonce, int64_t k);

#endif
