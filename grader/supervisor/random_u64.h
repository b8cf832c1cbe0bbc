/* Unpredictable 64-bit values for what student code must not guess: the
 * channel's reply tokens and the benchmark's rotations and hash keys. */
#ifndef BWLAB_RANDOM_U64_H
#define BWLAB_RANDOM_U64_H
#include <stdint.h>

/* From /dev/urandom, mixed with the clock, the pid and a counter (so two
 * calls differ even without /dev/urandom). Never 0: callers use 0 as "none". */
uint64_t bw_random_u64(void);

#endif
