/* The worker: the process that owns the GPU and runs student code.
 *
 * Started by the supervisor (grader/supervisor/worker_start.c) with the channel and the
 * shared-memory segments on the descriptors named by BWLAB_CHANNEL_FD and
 * BWLAB_SHM_FD. It answers one fixed-size bw_reply per bw_request (QUIT has
 * no answer). After a reply with status BW_REP_CUDA_ERROR it exits: the
 * context may be broken for good, and the supervisor starts a fresh worker.
 * stdout and stderr belong to the student; the worker itself only writes
 * there when it cannot talk to the supervisor at all. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "bench_timing.h"
#include "channel_io.h"
#include "device_arrays.h"
#include "mono_clock.h"
#include "protocol.h"
#include "run_chunks.h"
#include "shm_view.h"
#include "stream_plan.h"

static int g_chan = -1;
static int g_shm[BW_SHM_SEGMENTS];  /* the segments' descriptors */
static uint8_t *g_map = NULL;       /* the segments, back to back (shm_view.h) */
static int g_device_ready = 0;

/* ------------------------------------------------------------ plumbing */

static int env_fd(const char *name)
{
    const char *s = getenv(name);
    if (s == NULL || s[0] == '\0')
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > INT_MAX)
        return -1;
    if (fcntl((int)v, F_GETFD) < 0)
        return -1;
    return (int)v;
}

static void bad_request(bw_reply *r, const char *what)
{
    r->status = BW_REP_BAD_REQUEST;
    snprintf(r->message, sizeof r->message, "%s", what);
}

static void unmap_shm(void)
{
    if (g_map == NULL)
        return;
    bw_shm_view_unmap(g_map);
    g_map = NULL;
}

/* The shared memory, mapped once: its address never changes, the grader
 * only grows the segments. Not page-locked: large copies are staged
 * instead (staged_copy.h says why). */
static uint8_t *map_shm(uint64_t need, bw_reply *r)
{
    uint64_t size = bw_shm_view_bytes(g_shm);
    if (size < need || need == 0 || size > (uint64_t)SIZE_MAX) {
        r->status = BW_REP_BAD_REQUEST;
        snprintf(r->message, sizeof r->message,
                 "the shared memory holds %llu bytes, the request needs %llu",
                 (unsigned long long)size, (unsigned long long)need);
        return NULL;
    }
    if (g_map == NULL) {
        g_map = bw_shm_view_map(g_shm);
        if (g_map == NULL) {
            r->status = BW_REP_BAD_REQUEST;
            snprintf(r->message, sizeof r->message, "mapping the shared memory: %s",
                     strerror(errno));
            return NULL;
        }
    }
    return g_map;
}

/* Checks the image layout of a RUN / BENCH request; 0 if usable. whole:
 * the images lie whole in the shared memory (BENCH; a RUN has a ring). */
static int check_layout(const bw_request *q, bw_reply *r, int whole)
{
    if (q->n_arrays < 1 || q->n_arrays > BW_MAX_ARRAYS) {
        bad_request(r, "n_arrays out of range");
        return -1;
    }
    if (q->n < 0 || q->n > INT32_MAX || q->n_scalars < 0 || q->n_scalars > BW_MAX_CALL_SCALARS) {
        bad_request(r, "n or n_scalars out of range");
        return -1;
    }
    for (int k = 0; k < q->n_arrays; k++) {
        const bw_array_geom *g = &q->arrays[k];
        if (!bw_geom_ok(g, q->n) || g->image_bytes == 0 || g->image_bytes > (uint64_t)SIZE_MAX) {
            bad_request(r, "inconsistent image layout");
            return -1;
        }
        if (whole && (g->place > q->shm_bytes || g->image_bytes > q->shm_bytes - g->place)) {
            bad_request(r, "an image lies past shm_bytes");
            return -1;
        }
    }
    return 0;
}

/* Errors that mean this machine has no usable GPU. Others, out of memory
 * above all (cudaErrorMemoryAllocation where another process holds all of
 * it, H200), mean the GPU is there and busy: bwgrade must not stop a whole
 * batch as "no CUDA device" for them. */
static int means_no_device(cudaError_t e)
{
    return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
           e == cudaErrorInvalidDevice || e == cudaErrorSystemDriverMismatch ||
           e == cudaErrorCompatNotSupportedOnDevice;
}

/* Context on device 0; 0 on success, else a NO_DEVICE or CUDA_ERROR reply. */
static int ensure_device(bw_reply *r)
{
    if (g_device_ready)
        return 0;
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess)
        e = cudaFree(0); /* creates the context now, not inside the first timed call */
    if (e != cudaSuccess) {
        int none = means_no_device(e);
        r->status = none ? BW_REP_NO_DEVICE : BW_REP_CUDA_ERROR;
        r->cuda_error = (int32_t)e;
        snprintf(r->message, sizeof r->message, "cannot use CUDA device 0: %s: %s%s",
                 cudaGetErrorName(e), cudaGetErrorString(e),
                 e == cudaErrorMemoryAllocation
                     ? " (no memory left for a context: another process holds the GPU's memory)"
                     : "");
        (void)cudaGetLastError();
        return -1;
    }
    g_device_ready = 1;
    return 0;
}

/* ------------------------------------------------------------ requests */

static void do_hello(bw_reply *r)
{
    int v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess)
        r->driver_version = v;
    v = 0;
    if (cudaRuntimeGetVersion(&v) == cudaSuccess)
        r->runtime_version = v;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count <= 0) {
        r->status = BW_REP_NO_DEVICE;
        r->cuda_error = (int32_t)e;
        /* Without libcuda the runtime says "driver version is insufficient",
         * which sends a student to upgrade a driver they do not have; a
         * driver version of 0 means there is none at all. */
        if (e == cudaErrorInsufficientDriver && r->driver_version == 0)
            snprintf(r->message, sizeof r->message,
                     "no NVIDIA driver was found (libcuda is not installed): this machine has "
                     "no usable NVIDIA GPU");
        else if (e != cudaSuccess)
            snprintf(r->message, sizeof r->message, "%s: %s", cudaGetErrorName(e),
                     cudaGetErrorString(e));
        else
            snprintf(r->message, sizeof r->message, "no CUDA device is visible");
        (void)cudaGetLastError();
        return;
    }
    r->device_count = count;
    r->device_index = 0;
    if (ensure_device(r) != 0)
        return;

    struct cudaDeviceProp p;
    memset(&p, 0, sizeof p);
    e = cudaGetDeviceProperties(&p, 0);
    if (e != cudaSuccess) {
        bw_reply_cuda_error(r, e, "cudaGetDeviceProperties");
        return;
    }
    p.name[sizeof p.name - 1] = '\0';
    snprintf(r->device_name, sizeof r->device_name, "%s", p.name);
    const unsigned char *u = (const unsigned char *)p.uuid.bytes;
    snprintf(r->gpu_uuid, sizeof r->gpu_uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
    r->cc_major = p.major;
    r->cc_minor = p.minor;
    r->sm_count = p.multiProcessorCount;
    r->l2_bytes = p.l2CacheSize;
    v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, 0) == cudaSuccess)
        r->mem_clock_khz = v;
    v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, 0) == cudaSuccess)
        r->bus_width_bits = v;
    size_t mem_free = 0, mem_total = 0;
    if (cudaMemGetInfo(&mem_free, &mem_total) == cudaSuccess) {
        r->mem_free = mem_free;
        r->mem_total = mem_total;
    }
    (void)cudaGetLastError();
    r->status = BW_REP_OK;
    snprintf(r->message, sizeof r->message, "ok");
}

/* -1 when the channel broke mid-dialogue. */
static int do_run(const bw_request *q, bw_reply *r)
{
    if (check_layout(q, r, 0) != 0 || ensure_device(r) != 0)
        return 0;
    uint8_t *ring = map_shm(q->shm_bytes, r);
    if (ring == NULL)
        return 0;
    return bw_run_chunks(g_chan, ring, q, r);
}

static void do_bench(const bw_request *q, bw_reply *r)
{
    if (check_layout(q, r, 1) != 0 || ensure_device(r) != 0)
        return;
    if (q->rotate_seed == 0) {
        bad_request(r, "BENCH needs a non-zero rotate_seed");
        return;
    }
    uint8_t *images = map_shm(q->shm_bytes, r);
    if (images == NULL)
        return;
    bw_bench_student(q, images, r, g_chan);
}

int main(void)
{
    /* Student output survives a crash line by line. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_chan = env_fd(BW_ENV_CHANNEL_FD);
    int first_shm = env_fd(BW_ENV_SHM_FD);
    for (int k = 0; k < BW_SHM_SEGMENTS; k++)
        g_shm[k] = first_shm < 0 ? -1 : first_shm + k;
    if (g_chan < 0 || first_shm < 0) {
        fprintf(stderr,
                "bw_worker: %s and %s must name open descriptors; "
                "this program is started by bwgrade, not by hand\n",
                BW_ENV_CHANNEL_FD, BW_ENV_SHM_FD);
        return 2;
    }
    for (;;) {
        bw_request q;
        int rr = bw_read_all(g_chan, &q, sizeof q);
        if (rr != 0)
            return rr > 0 ? 0 : 1; /* the supervisor is gone */
        if (q.magic != BW_PROTO_MAGIC) {
            fprintf(stderr, "bw_worker: garbage on the channel\n");
            return 2;
        }
        bw_reply r;
        memset(&r, 0, sizeof r);
        r.magic = BW_PROTO_MAGIC;
        r.kind = q.kind;
        r.nonce = q.nonce;
        r.status = BW_REP_OK;
        switch (q.kind) {
        case BW_REQ_HELLO:
            do_hello(&r);
            break;
        case BW_REQ_RUN:
            if (do_run(&q, &r) != 0)
                return 1; /* the supervisor is gone */
            break;
        case BW_REQ_BENCH:
            do_bench(&q, &r);
            break;
        case BW_REQ_COPY_BENCH:
            if (ensure_device(&r) == 0)
                bw_bench_copy(&q, &r, g_chan);
            break;
        case BW_REQ_QUIT:
            unmap_shm();
            fflush(stdout);
            fflush(stderr);
            return 0;
        default:
            bad_request(&r, "unknown request kind");
            break;
        }
        fflush(stdout);
        fflush(stderr);
        r.message[sizeof r.message - 1] = '\0';
        if (bw_send_all(g_chan, &r, sizeof r) != 0)
            return 1;
        /* After a CUDA error the context may be unusable; after a failed RUN
         * the grader may still be sending CHUNK messages. Either way the
         * supervisor starts a new worker. */
        if (r.status == BW_REP_CUDA_ERROR || (q.kind == BW_REQ_RUN && r.status != BW_REP_OK))
            return 0;
    }
}
