/* The grader <-> worker channel. Fixed-size binary messages over a socket
 * pair (never stdout: student code owns stdout and stderr), array images in
 * shared memory both processes map. Plain C, shared by both sides. Each
 * array has a geometry of its own (bw_array_geom: element size, count,
 * image layout), so that exercises of any element type and shape travel
 * the same way; the worker knows nothing of exercises beyond its adapter.
 *
 * A RUN is a dialogue: its images never lie whole in host memory. They move
 * through a ring of ring_slots slots at the start of the shared memory, one
 * chunk at a time (stream_plan.h says which bytes a chunk is), so the largest
 * case costs the ring, not 13 GB of fresh pages (issue 12):
 *
 *   grader                               worker
 *   RUN --------------------------------> checks the plan, allocates
 *   for each chunk c, at most ring_slots ahead of the worker:
 *     fills slot c % S; CHUNK c --------> copies the slot to the device
 *                       <---------------- CHUNK c (slot free again)
 *                                         synchronize, the student's call
 *   for each chunk c:   <---------------- CHUNK c: slot c % S holds it
 *     checks it; CHUNK c (c < chunks - S: slot free again) -->
 *                       <---------------- RUN: status, call_ms
 *
 * A worker that cannot go on sends the RUN reply (an error status) in place
 * of its next CHUNK and exits. Every reply of the dialogue echoes the RUN's
 * nonce. */
#ifndef BWLAB_PROTOCOL_H
#define BWLAB_PROTOCOL_H
#include <stdint.h>

#define BW_PROTO_MAGIC 0x62776c64u        /* "bwld": moved elements (transplant) */
#define BW_MAX_ARRAYS 8
#define BW_MAX_CALL_SCALARS 4
#define BW_TEXT 256                        /* bounded text fields, always NUL-terminated */

/* Environment variables through which the worker finds its descriptors:
 * the channel, and the first of BW_SHM_SEGMENTS consecutive descriptors of
 * the shared-memory segments (see shm_view.h). */
#define BW_ENV_CHANNEL_FD "BWLAB_CHANNEL_FD"
#define BW_ENV_SHM_FD "BWLAB_SHM_FD"

/* The images live in BW_SHM_SEGMENTS files of BW_SHM_SEGMENT_BYTES each,
 * mapped back to back: 64 GiB in all, five times the largest case's images. */
#define BW_SHM_SEGMENTS 64
#define BW_SHM_SEGMENT_BYTES ((uint64_t)1 << 30)

typedef enum {
    BW_REQ_HELLO = 1,   /* report device properties; no student code runs */
    BW_REQ_RUN,         /* upload images, call once, synchronize, download: a dialogue (above) */
    BW_REQ_BENCH,       /* upload, one checked call, then many timed calls on rotated arrays */
    BW_REQ_COPY_BENCH,  /* time a device-to-device copy of copy_bytes */
    BW_REQ_QUIT,
    BW_REQ_CHUNK,       /* one chunk's move inside a RUN dialogue, either way */
    BW_REQ_TICK         /* a timed sample's start and end inside a BENCH / COPY_BENCH
                         * with tick set, either way (bench_witness.h) */
} bw_req_kind;

/* A timed sample, as the grader's own clock sees it (request field tick):
 *
 *   worker                                grader
 *   TICK k, phase READY -----------------> notes the time, answers at once
 *          <------------------------------ TICK k (go)
 *   L2 flush, start event, the call, end event, synchronize
 *   TICK k, phase DONE ------------------> notes the time
 *
 * The span from the go to the DONE holds the call, and whatever the worker
 * did there; the span from one DONE to the next READY holds the kit's
 * preparation (rotation, hash). Both are compared with the same spans of a
 * worker that holds no student code (bench_witness.h). */
#define BW_TICK_READY 1
#define BW_TICK_DONE 2

/* COPY_BENCH: which copy (request field copy_method). */
#define BW_COPY_MEMCPY 0   /* cudaMemcpyAsync device to device */
#define BW_COPY_KERNEL 1   /* the kit's own copy kernel (worker/copy_kernel.cu) */

typedef enum {
    BW_REP_OK = 0,
    BW_REP_CUDA_ERROR,   /* cuda_error/message say which; the worker exits after replying */
    BW_REP_NO_DEVICE,    /* no usable CUDA device */
    BW_REP_BAD_REQUEST
} bw_rep_status;

/* bw_array_geom.flags */
#define BW_ARRAY_WHOLE 1u    /* RUN: travels whole in chunk 0 (a reduction's one result) */
#define BW_ARRAY_ROTATE_OUTER 2u /* BENCH: rotate whole rows (rot_outer), else within rows */
#define BW_ARRAY_INPUT 4u    /* BENCH: read by the call (a by-value check negates it) */
#define BW_ARRAY_TRANSPOSED 8u /* a rows x cols call's array stored cols x rows */
#define BW_ARRAY_OUTPUT 16u  /* BENCH: written by the call (OUT or INOUT) */

/* One array's image (image.h) and, for BENCH, how its calls move it. */
typedef struct {
    uint32_t elem_bytes;         /* 2 or 4 */
    uint32_t elem_type;          /* reference/element.h's bw_type: bf16, fp16 or fp32 */
    uint32_t flags;              /* BW_ARRAY_* */
    int64_t count;               /* elements */
    uint64_t front_bytes;        /* guard + offset: element 0 lies here */
    uint64_t data_bytes;         /* count * elem_bytes */
    uint64_t back_bytes;
    uint64_t image_bytes;        /* front + data + back */
    /* BENCH: where the image lies in the shared memory (images back to
     * back); RUN: where its part of a chunk lies in a slot */
    uint64_t place;
    /* BENCH: the data seen as outer x inner elements (a vector: 1 x count;
     * a rows x cols matrix: rows x cols; its transpose: cols x rows), and
     * rotated between calls by a common amount along rows (flag
     * ROTATE_OUTER: row i takes row i + r) or within each row */
    int64_t outer, inner;
} bw_array_geom;

typedef struct {
    uint32_t magic;
    uint32_t kind;               /* bw_req_kind */
    uint64_t nonce;              /* fresh random per request; the reply must echo it */
    /* RUN / BENCH: the call (bw_call) */
    int64_t n;                   /* elements of an n-element array (a matrix: rows * cols) */
    int32_t rows, cols;          /* a matrix's shape; else 1 and n */
    int32_t n_scalars;
    float scalars[BW_MAX_CALL_SCALARS];
    int32_t n_arrays;
    bw_array_geom arrays[BW_MAX_ARRAYS];
    uint64_t shm_bytes;          /* bytes the worker must map (RUN: the ring) */
    uint64_t copy_bytes;         /* COPY_BENCH: bytes to copy (read + write = 2x this) */
    /* BENCH / COPY_BENCH sampling */
    int32_t warmup;              /* untimed calls first */
    int32_t min_samples, max_samples;
    double target_noise;         /* stop once the standard error of the mean / mean is below */
    double time_cap_s;           /* or once this much wall time was spent sampling */
    int32_t host_batch;          /* calls in the host-clock cross-check batch (0: skip) */
    int32_t flush_l2;            /* evict L2 before every sample */
    /* BENCH: every call (warmup and timed) gets its arrays rotated by a fresh
     * amount, and its output is hashed against the first, validated call, so a
     * call that skips or shortens its work is noticed (see bench_student.c). */
    uint64_t rotate_seed;        /* the rotation amounts' seed; must not be 0 */
    uint64_t hash_key;           /* keys the output hash (bw_output_hash in mix64.h) */
    /* BENCH, an exercise whose result is one value (a reduction): instead of
     * a hash, every call's result is compared by value with the validated
     * call's: within value_tol, and negated on the calls whose inputs were
     * negated (every other call), so a remembered result is wrong half the
     * time. by_value: the index of that result's array, else -1. */
    int32_t by_value;
    double value_tol;
    /* BENCH, by value, a result that is the sum of its one input's elements:
     * before every call after the validated one, this many elements of that
     * input (at most BW_PERTURB_MAX) are set to fresh values, and the result
     * must move by what they add (perturb.h). 0: off. */
    int32_t perturb;
    /* BENCH, by hash: before every call after the validated one, this many
     * elements (at most BW_TRANSPLANT_MAX) take, in every array, the values
     * of other elements, and the hash must follow (transplant.h). 0: off. */
    int32_t transplant;
    /* BENCH: after the warmup, profile_calls more calls timed as the samples
     * are, each bracketed alone with cudaProfilerStart/Stop (so that a
     * profiler started with --profile-from-start off sees those calls'
     * kernels and nothing else) and left out of the statistics */
    int32_t profile_calls;
    /* BENCH / COPY_BENCH: 1 = exchange TICK messages around every timed
     * sample (above); the grader requires it of every worker it times */
    int32_t tick;
    int32_t copy_method;         /* COPY_BENCH: BW_COPY_* */
    /* RUN: the ring and the chunks (stream_plan.h); CHUNK: which chunk */
    int32_t ring_slots;
    uint64_t slot_bytes;         /* a slot holds array k's part of a chunk at arrays[k].place */
    int64_t chunk_elems;         /* elements per chunk, the last one short */
    int64_t chunks;
    int64_t chunk;
} bw_request;

typedef struct {
    uint32_t magic;
    uint32_t kind;               /* echoes the request */
    uint64_t nonce;              /* echoes the request */
    int32_t status;              /* bw_rep_status */
    int32_t cuda_error;          /* cudaError_t value, 0 if none */
    char message[BW_TEXT];
    double call_ms;              /* RUN: wall time of call + synchronize */
    /* BENCH / COPY_BENCH results, milliseconds per call */
    int32_t samples;
    double ms_median, ms_min, ms_max, ms_q1, ms_q3, ms_mean, noise;
    double batch_event_ms;       /* host_batch calls timed with events ... */
    double batch_host_ms;        /* ... and with the host clock around synchronize */
    /* per timed sample: host clock from before the start event to after a
     * device-wide synchronize, minus the event time (the median, ms) */
    double lag_median_ms;
    /* the span of two events with nothing between them, subtracted from
     * every sample above (ms) */
    double timer_ms;
    /* BENCH: the validated call's output hash, and how many
     * later calls (warmup + timed) gave a different one; first_bad_call is
     * 1-based over those calls, 0 when none */
    uint64_t out_hash;
    int32_t calls_checked, calls_bad, first_bad_call;
    int32_t first_bad_rotation;
    double first_bad_value;      /* by value: the first wrong call's result, and ... */
    double want_value;           /* ... what it should have been */
    /* HELLO: the device */
    char device_name[BW_TEXT];
    int32_t device_count, device_index;
    int32_t cc_major, cc_minor, sm_count;
    int32_t l2_bytes;
    int32_t mem_clock_khz;       /* cudaDevAttrMemoryClockRate */
    int32_t bus_width_bits;      /* cudaDevAttrGlobalMemoryBusWidth */
    int32_t driver_version, runtime_version;
    uint64_t mem_free, mem_total;
    char gpu_uuid[48];           /* "GPU-xxxxxxxx-xxxx-...": names its /dev/nvidiaN (gpu_node.h) */
    int64_t chunk;               /* CHUNK: which; TICK: the sample, from 0 */
    int32_t tick_phase;          /* TICK: BW_TICK_READY or BW_TICK_DONE */
} bw_reply;

/* One call of the student's function, as the adapter sees it. */
typedef struct {
    int64_t n;                   /* elements (a matrix: rows * cols); at most 2^31 - 1 */
    int32_t rows, cols;          /* a matrix's shape */
    int32_t n_scalars;
    float scalars[BW_MAX_CALL_SCALARS];   /* in the declaration's order */
    void *arrays[BW_MAX_ARRAYS];          /* element 0 of each array, in the declaration's order */
} bw_call;

/* The exercise adapter (exercises/NAME/adapter.cu) defines this, calling the
 * student's function with the arguments in its signature's order. */
#ifdef __cplusplus
extern "C"
#endif
void bw_student_call(const bw_call *call);

#endif
