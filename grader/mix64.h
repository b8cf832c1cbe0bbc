/* splitmix64's output function: a strong 64-bit mixer. Cases, input values
 * and benchmark inputs are all derived from a seed through it. */
#ifndef BWLAB_MIX64_H
#define BWLAB_MIX64_H
#include <stdint.h>

static inline uint64_t bw_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

#endif
