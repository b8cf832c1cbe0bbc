/* A CPU stand-in for bw_worker_*: speaks the worker's side of the protocol
 * (HELLO, and RUN as the chunk dialogue of protocol.h) and runs a kernel
 * written in C (cpu_kernels.h) where the real worker calls the student's
 * function. "Device memory" is a malloc'd copy of each whole image, filled
 * and emptied chunk by chunk as the real worker fills its cudaMalloc'd ones.
 *
 * The kernel is named by the environment variable CUDA_FAKE_KERNEL
 * ("haxpy.right", "vector_sum.no_tail", "transpose.copy", ...; CUDA_ is a
 * prefix bwgrade passes on to its workers). A kernel that reports a fault gets the reply
 * a faulting worker sends: a CUDA error, then exit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel_io.h"
#include "cpu_kernels.h"
#include "exercise.h"
#include "protocol.h"
#include "shm_view.h"
#include "stream_plan.h"

static int g_chan = -1;
static const bw_exercise *g_ex;
static int g_shm[BW_SHM_SEGMENTS];
static uint8_t *g_map;
static unsigned g_runs;
/* Started as a file whose name has "hog" in it, it reports 100 MiB free, as a
 * student's worker does whose static constructors took the rest of the
 * GPU's memory (tests/python/test_trusted_device.py). */
static int g_hog;
/* Three more names play workers that will not start: with "dies" in it, it
 * prints a no-device message and exits before HELLO (corpus entry
 * fakes_no_device); with "sanquit", it does so where compute-sanitizer has
 * set its variables (corpus entry quits_under_sanitizer); both are
 * the student's fault where the baseline worker starts. With "nodev", it
 * answers HELLO as a worker on a machine without a GPU does
 * (tests/python/test_blame_start.py, as all below). Two more start well and
 * then answer every RUN as code that writes its own replies can: "liar" with
 * NO_DEVICE, "refuser" with BAD_REQUEST (corpus entry forges_skip). And two
 * play a GPU that another process takes meanwhile: "takesgpu" creates the
 * file CUDA_FAKE_BUSY names and exits before HELLO; "busy", while that file
 * exists, answers HELLO as the real worker does on a GPU with no memory left. */
static int g_nodev, g_liar, g_refuser, g_busy;

static int env_int(const char *name)
{
    const char *s = getenv(name);
    return s != NULL ? atoi(s) : -1;
}

static uint8_t *map_shm(uint64_t bytes)
{
    if (bw_shm_view_bytes(g_shm) < bytes)
        return NULL;
    if (g_map == NULL)
        g_map = bw_shm_view_map(g_shm);
    return g_map;
}

static void refuse(bw_reply *r, const char *why)
{
    r->status = BW_REP_BAD_REQUEST;
    snprintf(r->message, sizeof r->message, "cpu stand-in: %s", why);
}

static int send_chunk(const bw_reply *r, int64_t c)
{
    bw_reply m = *r;
    m.kind = BW_REQ_CHUNK;
    m.chunk = c;
    return bw_send_all(g_chan, &m, sizeof m);
}

static int expect_chunk(const bw_request *q, int64_t c)
{
    bw_request m;
    if (bw_read_all(g_chan, &m, sizeof m) != 0)
        return -1;
    return m.magic == BW_PROTO_MAGIC && m.kind == BW_REQ_CHUNK && m.nonce == q->nonce &&
                   m.chunk == c
               ? 0
               : -1;
}

/* The images' chunk c between the ring and "device memory". */
static void move_chunk(uint8_t *ring, const bw_request *q, uint8_t *const *dev, int64_t c, int in)
{
    for (int k = 0; k < q->n_arrays; k++) {
        bw_chunk_span_t s = bw_chunk_span(q, c, k);
        uint8_t *slot = bw_slot_part(ring, q, c, k);
        uint8_t *d = dev[k] + s.begin;
        if (in)
            memcpy(d, slot, s.end - s.begin);
        else
            memcpy(slot, d, s.end - s.begin);
    }
}

static void free_all(uint8_t **dev)
{
    for (int k = 0; k < BW_MAX_ARRAYS; k++)
        free(dev[k]);
}

/* -1: the channel broke (exit); 1: the reply is a CUDA error (exit after it). */
static int run(const bw_request *q, bw_reply *r, cpu_kernel_fn kernel)
{
    uint8_t *ring = map_shm(q->shm_bytes);
    if (ring == NULL || !bw_stream_plan_ok(q)) {
        refuse(r, "no shared memory or an inconsistent plan");
        return 0;
    }
    uint8_t *dev[BW_MAX_ARRAYS] = {0};
    for (int k = 0; k < q->n_arrays; k++)
        if ((dev[k] = malloc((size_t)q->arrays[k].image_bytes)) == NULL) {
            free_all(dev);
            refuse(r, "out of host memory");
            return 0;
        }
    for (int64_t c = 0; c < q->chunks; c++) {
        if (expect_chunk(q, c) != 0)
            return -1;
        move_chunk(ring, q, dev, c, 1);
        if (send_chunk(r, c) != 0)
            return -1;
    }
    cpu_call call;
    memset(&call, 0, sizeof call);
    call.ex = g_ex;
    call.n = q->n;
    call.rows = q->rows;
    call.cols = q->cols;
    call.alpha = q->scalars[0];
    call.offset_elems = (int)((q->arrays[0].front_bytes % 256u) / q->arrays[0].elem_bytes);
    call.n_arrays = q->n_arrays;
    for (int k = 0; k < q->n_arrays; k++)
        call.arrays[k] = dev[k] + q->arrays[k].front_bytes;
    call.run = g_runs++;
    const char *why = NULL;
    if (kernel(&call, &why) != 0) {
        free_all(dev);
        r->status = BW_REP_CUDA_ERROR;
        r->cuda_error = 716;
        snprintf(r->message, sizeof r->message, "%s", why ? why : "cpu stand-in fault");
        return 1;
    }
    r->call_ms = 0.001;
    for (int64_t c = 0; c < q->chunks; c++) {
        if (c >= q->ring_slots && expect_chunk(q, c - q->ring_slots) != 0)
            return -1;
        move_chunk(ring, q, dev, c, 0);
        if (send_chunk(r, c) != 0)
            return -1;
    }
    free_all(dev);
    return 0;
}

static void hello(bw_reply *r)
{
    if (g_busy) {
        r->status = BW_REP_CUDA_ERROR;
        r->cuda_error = 2;
        snprintf(r->message, sizeof r->message, "cannot use CUDA device 0: "
                 "cudaErrorMemoryAllocation: out of memory (no memory left for a context: "
                 "another process holds the GPU's memory)");
        return;
    }
    if (g_nodev) {
        r->status = BW_REP_NO_DEVICE;
        snprintf(r->message, sizeof r->message, "cpu stand-in: this machine has no GPU");
        return;
    }
    snprintf(r->device_name, sizeof r->device_name, "CPU stand-in (tests/unit/cpu_worker.c)");
    r->device_count = 1;
    r->cc_major = 9;
    r->sm_count = 1;
    r->l2_bytes = 1 << 20;
    r->mem_free = g_hog ? (uint64_t)100 << 20 : (uint64_t)64 << 30;
    r->mem_total = (uint64_t)64 << 30;
}

int main(int argc, char **argv)
{
    const char *base = argc > 0 ? strrchr(argv[0], '/') : NULL;
    const char *file = argc > 0 ? (base ? base + 1 : argv[0]) : "";
    g_hog = strstr(file, "hog") != NULL;
    g_nodev = strstr(file, "nodev") != NULL;
    g_liar = strstr(file, "liar") != NULL;
    const char *flag = getenv("CUDA_FAKE_BUSY");
    FILE *taken = flag && strstr(file, "busy") ? fopen(flag, "r") : NULL;
    g_busy = taken != NULL;
    if (taken)
        fclose(taken);
    if (flag && strstr(file, "takesgpu")) {
        FILE *f = fopen(flag, "w");
        if (f)
            fclose(f);
        return 1;
    }
    g_refuser = strstr(file, "refuser") != NULL;
    int dies = strstr(file, "dies") != NULL, sanquit = strstr(file, "sanquit") != NULL;
    if (dies || (sanquit && getenv("NV_SANITIZER_INJECTION_PORT_BASE"))) {
        fprintf(stderr, "no CUDA device: cudaGetDeviceCount returned 100 (no CUDA-capable "
                        "device is detected; check the driver)\n");
        return 1;
    }
    g_chan = env_int(BW_ENV_CHANNEL_FD);
    int shm = env_int(BW_ENV_SHM_FD);
    const char *name = getenv("CUDA_FAKE_KERNEL");
    cpu_kernel_fn kernel = name ? cpu_kernel_find(name) : NULL;
    if (name) {
        char exercise[64];
        snprintf(exercise, sizeof exercise, "%.*s", (int)strcspn(name, "."), name);
        g_ex = bw_exercise_find(exercise);
    }
    if (g_chan < 0 || shm < 0 || kernel == NULL) {
        fprintf(stderr, "cpu_worker: started by bwgrade, with CUDA_FAKE_KERNEL naming a kernel "
                        "of tests/unit/cpu_kernels.c (got %s)\n", name ? name : "none");
        return 2;
    }
    for (int k = 0; k < BW_SHM_SEGMENTS; k++)
        g_shm[k] = shm + k;
    for (;;) {
        bw_request q;
        if (bw_read_all(g_chan, &q, sizeof q) != 0 || q.magic != BW_PROTO_MAGIC)
            return 0;
        if (q.kind == BW_REQ_QUIT)
            return 0;
        bw_reply r;
        memset(&r, 0, sizeof r);
        r.magic = BW_PROTO_MAGIC;
        r.kind = q.kind;
        r.nonce = q.nonce;
        r.status = BW_REP_OK;
        snprintf(r.message, sizeof r.message, "ok");
        int rc = 0;
        if (q.kind == BW_REQ_HELLO)
            hello(&r);
        else if (q.kind == BW_REQ_RUN && g_liar) {
            r.status = BW_REP_NO_DEVICE;
            snprintf(r.message, sizeof r.message, "cannot use CUDA device 0: lost");
            rc = 1;   /* then exit, as the real worker does after an error reply */
        } else if (q.kind == BW_REQ_RUN && g_refuser) {
            refuse(&r, "an image lies past shm_bytes");
            rc = 1;
        } else if (q.kind == BW_REQ_RUN)
            rc = run(&q, &r, kernel);
        else
            refuse(&r, "only HELLO and RUN");
        if (rc < 0 || bw_send_all(g_chan, &r, sizeof r) != 0)
            return 1;
        if (rc > 0)
            return 0;
    }
}
