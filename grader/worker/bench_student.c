/* BENCH in the worker: the student's call timed by the sampling loop
 * (bench_timing.c), each call from freshly rotated arrays and checked
 * against the first, validated one.
 *
 * Against calls that remember: before every student call, each array's
 * elements are rewritten rotated by a fresh random amount r (the pointers
 * stay the same; a matrix by whole rows, its transpose within rows), and
 * after it the arrays are hashed keyed by each element's unrotated
 * position. A call that did all its work gives the hash of the first,
 * validated call whatever r was; one that skipped work, replayed an earlier
 * result or worked only on the sizes it recognised does not. A result of
 * one value (a reduction) is compared by value instead, within the
 * request's tolerance, with the inputs negated on every other call and,
 * for a sum, a few of them changed to fresh values (perturb.h). An output
 * checked by hash has a few elements moved as well (transplant.h): the
 * rotated validated output is then wrong at places only a full read finds. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench_timing.h"
#include "device_arrays.h"
#include "mix64.h"
#include "perturb.h"
#include "transplant.h"
#include "sample_check.h"
#include "timed_op.h"

/* ------------------------------------------------------------ BENCH */

typedef struct {
    const bw_request *q;
    bw_call call;
    void *pristine[BW_MAX_ARRAYS];  /* copies of every array's data */
    uint64_t rng;                 /* state for the rotation amounts */
    int64_t axis;                 /* rotations lie in [1, axis) */
    int64_t rot;                  /* the rotation of the current call */
    int negated;                  /* by value: this call's inputs are negated */
    const uint8_t *images;        /* the validated call's images: x unrotated */
    uint64_t prng;                /* state for the perturbations */
    bw_perturb pert;              /* by value: this call's changed elements */
    bw_transplant moved;          /* by hash: this call's moved elements */
    uint64_t key, want;           /* hash key; the validated call's hash */
    uint64_t want_now;            /* the hash this call must give */
    double want_value;            /* by value: the validated call's result */
    unsigned long long *acc;      /* device accumulator for the hash */
    int checked, bad, first_bad;
    int64_t first_bad_rot;
    double first_bad_value;
} student_ctx;

static cudaError_t student_op(void *p)
{
    student_ctx *c = p;
    bw_student_call(&c->call);
    return cudaSuccess;
}

static int by_value(const student_ctx *c) { return c->q->by_value >= 0; }

/* The rotation array k takes: a whole array (a reduction's one result)
 * never moves. */
static int64_t rotation_of(const student_ctx *c, int k)
{
    return (c->q->arrays[k].flags & BW_ARRAY_WHOLE) ? 0 : c->rot;
}

/* A value's sign bit, to negate an input. */
static uint32_t sign_bit(const bw_array_geom *g)
{
    return g->elem_bytes == 4 ? 0x80000000u : 0x8000u;
}

/* Every array rewritten from its pristine copy, rotated by r; with negate,
 * the inputs negated too (by value only). */
static cudaError_t rotate_all(student_ctx *c, int64_t r, int negate)
{
    c->rot = r;
    c->negated = negate;
    for (int k = 0; k < c->q->n_arrays; k++) {
        const bw_array_geom *g = &c->q->arrays[k];
        if (!c->pristine[k])
            continue;
        uint32_t flip = negate && (g->flags & BW_ARRAY_INPUT) ? sign_bit(g) : 0u;
        cudaError_t e = bw_rotate_array(c->call.arrays[k], c->pristine[k], g, rotation_of(c, k), flip);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

/* By value, for a sum (request field perturb): a few elements of the one
 * input changed to fresh values, after its rotation. */
static cudaError_t perturb_input(student_ctx *c)
{
    c->pert.count = 0;
    c->pert.delta = 0.0;
    if (!by_value(c) || c->q->perturb <= 0)
        return cudaSuccess;
    for (int k = 0; k < c->q->n_arrays; k++) {
        const bw_array_geom *g = &c->q->arrays[k];
        if (!(g->flags & BW_ARRAY_INPUT) || !c->pristine[k])
            continue;
        uint32_t flip = c->negated ? sign_bit(g) : 0u;
        if (bw_perturb_plan(&c->prng, g, c->images + g->place + g->front_bytes, rotation_of(c, k),
                            flip, c->q->perturb, &c->pert) != 0)
            return cudaSuccess;   /* too short to take it: by value alone */
        return bw_poke_array(c->call.arrays[k], g, &c->pert);
    }
    return cudaSuccess;
}

/* By hash (request field transplant): a few elements moved in every input
 * array, after the rotation; the hash this call must give follows. */
static cudaError_t move_elements(student_ctx *c)
{
    c->want_now = c->want;
    c->moved.count = 0;
    if (by_value(c) || c->q->transplant <= 0 ||
        bw_transplant_plan(&c->prng, c->q, c->images, c->q->transplant, &c->moved) != 0)
        return cudaSuccess;   /* too small to take it: the rotation alone */
    c->want_now = c->want + bw_transplant_hash_delta(c->q, c->images, c->key, &c->moved);
    for (int k = 0; k < c->q->n_arrays; k++) {
        const bw_array_geom *g = &c->q->arrays[k];
        if (!(g->flags & BW_ARRAY_INPUT) || !c->pristine[k])
            continue;
        bw_transplant m = {c->moved.count, {0}, {0}};
        for (int j = 0; j < m.count; j++) {
            m.to[j] = bw_rotated_index(g, rotation_of(c, k), bw_transplant_place(c->q, k, c->moved.to[j]));
            m.from[j] = bw_transplant_place(c->q, k, c->moved.from[j]);
        }
        cudaError_t e = bw_move_elements(c->call.arrays[k], c->pristine[k], g, &m);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

/* A fresh rotation in [1, axis), never the previous one: a call that leaves
 * the last result in place is then always wrong. By value, the inputs are
 * negated on every other call: the result must follow. */
static cudaError_t student_rotate(void *p)
{
    student_ctx *c = p;
    int negate = by_value(c) && !c->negated;
    cudaError_t e;
    if (c->axis < 3) {
        e = rotate_all(c, c->axis == 2 ? 1 - c->rot : 0, negate);
    } else {
        int64_t r;
        do {
            r = 1 + (int64_t)(bw_mix64_next(&c->rng) % (uint64_t)(c->axis - 1));
        } while (r == c->rot);
        e = rotate_all(c, r, negate);
    }
    if (e == cudaSuccess)
        e = perturb_input(c);
    return e == cudaSuccess ? move_elements(c) : e;
}

/* The hash of all arrays as they are now, keyed by unrotated position. */
static cudaError_t hash_now(student_ctx *c, uint64_t *h)
{
    cudaError_t e = cudaMemsetAsync(c->acc, 0, sizeof *c->acc, (cudaStream_t)0);
    for (int k = 0; k < c->q->n_arrays && e == cudaSuccess; k++)
        e = bw_hash_array(c->call.arrays[k], &c->q->arrays[k], rotation_of(c, k), c->key, k, c->acc);
    unsigned long long v = 0;
    if (e == cudaSuccess)
        e = cudaMemcpy(&v, c->acc, sizeof v, cudaMemcpyDeviceToHost);
    *h = (uint64_t)v;
    return e;
}

/* By value: the result array's one element, as a double. */
static cudaError_t value_now(const student_ctx *c, double *v)
{
    const bw_array_geom *g = &c->q->arrays[c->q->by_value];
    uint32_t bits = 0;
    cudaError_t e = cudaMemcpy(&bits, c->call.arrays[c->q->by_value], g->elem_bytes,
                               cudaMemcpyDeviceToHost);
    if (g->elem_bytes == 4) {
        float f;
        memcpy(&f, &bits, sizeof f);
        *v = (double)f;
    } else {
        uint32_t u = bits << 16;   /* a bf16 result: its float */
        float f;
        memcpy(&f, &u, sizeof f);
        *v = (double)f;
    }
    return e;
}

static void note_bad(student_ctx *c, double value)
{
    c->bad++;
    if (c->first_bad == 0) {
        c->first_bad = c->checked;
        c->first_bad_rot = c->rot;
        c->first_bad_value = value;
    }
}

static cudaError_t student_check(void *p)
{
    student_ctx *c = p;
    if (by_value(c)) {
        double v = 0;
        cudaError_t e = value_now(c, &v);
        if (e != cudaSuccess)
            return e;
        c->checked++;
        double want = (c->negated ? -c->want_value : c->want_value) + c->pert.delta;
        if (!(fabs(v - want) <= c->q->value_tol))
            note_bad(c, v);
        return cudaSuccess;
    }
    uint64_t h = 0;
    cudaError_t e = hash_now(c, &h);
    if (e != cudaSuccess)
        return e;
    c->checked++;
    if (h != c->want_now)
        note_bad(c, 0.0);
    return cudaSuccess;
}

/* The axis rotations run along: the first array that rotates. */
static int64_t axis_of(const bw_request *q)
{
    for (int k = 0; k < q->n_arrays; k++) {
        const bw_array_geom *g = &q->arrays[k];
        if (g->flags & BW_ARRAY_WHOLE)
            continue;
        return (g->flags & BW_ARRAY_ROTATE_OUTER) ? g->outer : g->count / (g->outer > 0 ? g->outer : 1);
    }
    return 0;
}

/* Pristine copies of every array a call reads or may rewrite, then the
 * validated call (unrotated, arrays back to shared memory) whose hash (and,
 * by value, whose result) later calls must give. 0 on success. */
static int rotation_setup(student_ctx *c, const bw_request *q, const bw_dev_arrays *a,
                          uint8_t *images, bw_reply *r)
{
    cudaError_t e = cudaMalloc((void **)&c->acc, sizeof *c->acc);
    if (e != cudaSuccess) {
        c->acc = NULL;
        fail(r, e, "grader allocating the hash accumulator");
        return -1;
    }
    for (int k = 0; k < q->n_arrays; k++) {
        const bw_array_geom *g = &q->arrays[k];
        /* A one-element result is not rotated: the call overwrites it. */
        if (g->flags & BW_ARRAY_WHOLE)
            continue;
        size_t bytes = (size_t)g->data_bytes;
        e = cudaMalloc(&c->pristine[k], bytes > 0 ? bytes : 1);
        if (e != cudaSuccess) {
            c->pristine[k] = NULL;
            fail(r, e, "grader allocating the %zu-byte copy of array %d", bytes, k);
            return -1;
        }
        e = cudaMemcpy(c->pristine[k], c->call.arrays[k], bytes, cudaMemcpyDeviceToDevice);
        if (e != cudaSuccess) {
            fail(r, e, "grader copying array %d", k);
            return -1;
        }
    }
    c->rng = q->rotate_seed;
    c->prng = bw_mix64(q->rotate_seed ^ UINT64_C(0x7065727475726221));
    c->images = images;
    c->key = q->hash_key;
    c->rot = 0;
    c->axis = axis_of(q);
    bw_reset_device_state();
    bw_student_call(&c->call);
    cudaError_t launch = cudaGetLastError();
    e = sync_and_check();
    if (launch != cudaSuccess)
        e = launch;
    if (e != cudaSuccess) {
        fail(r, e, "the student's call, first (validated) call");
        return -1;
    }
    e = bw_dev_arrays_download(a, images);
    if (e == cudaSuccess)
        e = hash_now(c, &c->want);
    if (e == cudaSuccess && by_value(c))
        e = value_now(c, &c->want_value);
    if (e != cudaSuccess) {
        fail(r, e, "copying back and hashing the validated call's arrays");
        return -1;
    }
    c->want_now = c->want;
    r->out_hash = c->want;
    r->want_value = c->want_value;
    return 0;
}

void bw_bench_student(const bw_request *q, uint8_t *images, bw_reply *r, int chan)
{
    bw_dev_arrays a;
    memset(&a, 0, sizeof a);
    student_ctx c;
    memset(&c, 0, sizeof c);
    c.q = q;

    bw_reset_device_state();
    cudaError_t e = bw_dev_arrays_alloc(&a, q->n_arrays, q->arrays);
    if (e != cudaSuccess) {
        fail(r, e, "grader allocating %d arrays", q->n_arrays);
        return;
    }
    e = bw_dev_arrays_upload(&a, images);
    if (e != cudaSuccess) {
        fail(r, e, "grader uploading the arrays");
        goto out;
    }
    bw_dev_arrays_call(&a, q, &c.call);
    bw_timed_op t;
    memset(&t, 0, sizeof t);
    t.op = student_op;
    t.ctx = &c;
    if (rotation_setup(&c, q, &a, images, r) != 0)
        goto out;
    t.prepare = student_rotate;
    t.check = student_check;
    t.profile_left = q->profile_calls > 0 ? q->profile_calls : 0;
    set_ticks(&t, q, chan);

    if (bw_timed_measure(&t, q, r, "the student's call") != 0)
        goto out;
    r->calls_checked = c.checked;
    r->calls_bad = c.bad;
    r->first_bad_call = c.first_bad;
    r->first_bad_rotation = (int32_t)c.first_bad_rot;
    r->first_bad_value = c.first_bad_value;
    r->status = BW_REP_OK;
    snprintf(r->message, sizeof r->message, "ok");
out:
    for (int k = 0; k < BW_MAX_ARRAYS; k++)
        if (c.pristine[k] != NULL)
            (void)cudaFree(c.pristine[k]);
    if (c.acc != NULL)
        (void)cudaFree(c.acc);
    bw_dev_arrays_free(&a);
}

