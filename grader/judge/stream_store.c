/* See stream_store.h. On the nvidia-h200-x2 host (32 cores), 32 threads
 * wrote 77-82 GB/s with plain stores and 153-159 GB/s with non-temporal
 * ones; with a second process doing the same at once, 47-48 against
 * 111-145 GB/s each (tests/gpu/probe_lanes.sh, docs/SPEED.md). Plain stores
 * read each line before writing it, so filling the images took twice the
 * memory traffic, traffic the other grading lane's copies needed. */
#include <stdint.h>
#include <string.h>
#include "stream_store.h"

#if defined(__SSE2__)
#include <emmintrin.h>

void bw_stream_copy(void *dst, const void *src, size_t bytes)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    size_t head = (16u - ((uintptr_t)d & 15u)) & 15u;   /* to the first 16-byte boundary */
    if (head > bytes)
        head = bytes;
    memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    for (; bytes >= 16; bytes -= 16, d += 16, s += 16)
        _mm_stream_si128((__m128i *)(void *)d, _mm_loadu_si128((const __m128i *)(const void *)s));
    memcpy(d, s, bytes);
}

void bw_stream_fence(void) { _mm_sfence(); }

#else

void bw_stream_copy(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }

void bw_stream_fence(void) {}

#endif
