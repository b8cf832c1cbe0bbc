/* See image_hash.h. */
#include <string.h>
#include "hot_loop.h"
#include "image_hash.h"
#include "mix64.h"
#include "parallel_for.h"

#define MAX_CHUNKS 256

typedef struct {
    const uint8_t *data;
    int array;
    uint64_t key;
    int64_t n, chunk;           /* elements, and elements per slot of sums[] */
    uint64_t sums[MAX_CHUNKS];  /* one per chunk, so threads never share a slot */
} hash_job;

BW_HOT_LOOP uint64_t bw_elems_hash(const uint8_t *data, int array, int64_t first_index,
                                   int64_t count, uint64_t key)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < count; i++) {
        uint16_t v;
        memcpy(&v, data + 2 * i, sizeof v); /* the image need not be aligned */
        s += bw_hash_term(key, array, (uint64_t)(first_index + i), v);
    }
    return s;
}

/* One 32-bit multiply per element, where bw_hash_term takes two 64-bit ones:
 * the check computes it over every output element of every case. Summed mod
 * 2^32, all in 32-bit lanes: one changed element still always shows, as
 * (v' - v) * K_i is never 0 mod 2^32 for an odd K_i and |v' - v| < 2^16. */
BW_HOT_LOOP uint32_t bw_race_hash(const uint8_t *data, int64_t first_index, int64_t count,
                                  uint64_t key)
{
    uint32_t s = 0;
    uint32_t k0 = (uint32_t)key + (uint32_t)first_index * UINT32_C(0x9E3779B9);
    for (int64_t i = 0; i < count; i++) {
        uint16_t v;
        memcpy(&v, data + 2 * i, sizeof v);
        uint32_t k = (k0 + (uint32_t)i * UINT32_C(0x9E3779B9)) | 1u;
        s += v * k;
    }
    return s;
}

static void hash_body(int64_t begin, int64_t end, void *ctx)
{
    hash_job *j = ctx;
    for (int64_t c = begin; c < end; c++) {
        int64_t lo = c * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
        j->sums[c] = bw_elems_hash(j->data + 2 * lo, j->array, lo, hi - lo, j->key);
    }
}

uint64_t bw_array_hash(const uint8_t *data, int array, int64_t units, uint64_t key, int threads)
{
    uint64_t total = 0;
    if (units <= 0)
        return 0;
    hash_job j;
    j.n = units;
    j.chunk = (units + MAX_CHUNKS - 1) / MAX_CHUNKS;
    const int64_t chunks = (units + j.chunk - 1) / j.chunk; /* at most MAX_CHUNKS */
    j.data = data;
    j.array = array;
    j.key = key;
    /* If a thread cannot start, parallel_for finishes the work itself. */
    parallel_for(chunks, threads, 1, hash_body, &j);
    for (int64_t c = 0; c < chunks; c++)
        total += j.sums[c];
    return total;
}
