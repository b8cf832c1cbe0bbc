/* Probe: the host's memory bandwidth as bwgrade's threads see it, for plain
 * stores, non-temporal stores and reads over 2 GiB, the best of repeated
 * passes for 1.5 s each. Run two at once to see what two grading lanes
 * share: given the same START (seconds since the epoch, a little ahead),
 * both measure each kind of access in the same 2 s window. Prints
 * "TAG T=threads: store .. GB/s  nt-store .. GB/s  read .. GB/s".
 * Not part of the kit's build; tests/gpu/probe_lanes.sh builds and runs it.
 *   host_bandwidth THREADS TAG [START] */
#define _GNU_SOURCE
#include <emmintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define BYTES ((size_t)2 << 30)
#define MAX_THREADS 256

enum { STORE, NT_STORE, READ, MODES };
static const char *const names[MODES] = {"store", "nt-store", "read"};

static uint8_t *buf;
static int threads, mode;
static volatile uint64_t sink;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *pass(void *arg)
{
    long i = (long)arg;
    size_t per = BYTES / (size_t)threads / 16 * 16;
    uint8_t *p = buf + per * (size_t)i;
    uint64_t v = 0x9E3779B97F4A7C15u + (uint64_t)i;
    if (mode == STORE) {
        uint64_t *q = (uint64_t *)(void *)p;
        for (size_t k = 0; k < per / 8; k++)
            q[k] = v + k;
    } else if (mode == NT_STORE) {
        __m128i x = _mm_set1_epi64x((long long)v);
        for (size_t k = 0; k < per / 16; k++)
            _mm_stream_si128((__m128i *)(void *)(p + 16 * k), x);
        _mm_sfence();
    } else {
        const uint64_t *q = (const uint64_t *)(const void *)p;
        uint64_t s = 0;
        for (size_t k = 0; k < per / 8; k++)
            s += q[k];
        sink += s;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    threads = argc > 1 ? atoi(argv[1]) : 0;
    const char *tag = argc > 2 ? argv[2] : "";
    if (threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "usage: host_bandwidth THREADS(1-%d) TAG\n", MAX_THREADS);
        return 2;
    }
    buf = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
               -1, 0);
    if (buf == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(buf, 1, BYTES);
    double start = argc > 3 ? atof(argv[3]) : now();
    printf("%s T=%d:", tag, threads);
    for (mode = 0; mode < MODES; mode++) {
        double best = 1e9, window = start + 2.0 * mode;
        while (now() < window)
            ;   /* the other process's window opens at the same moment */
        do {   /* at least one pass, even when the window has gone by */
            pthread_t th[MAX_THREADS];
            double t = now();
            for (long i = 0; i < threads; i++)
                pthread_create(&th[i], NULL, pass, (void *)i);
            for (long i = 0; i < threads; i++)
                pthread_join(th[i], NULL);
            if (now() - t < best)
                best = now() - t;
        } while (now() - window < 1.5);
        printf("  %s %.0f GB/s", names[mode], (double)BYTES / best / 1e9);
    }
    printf("\n");
    return 0;
}
