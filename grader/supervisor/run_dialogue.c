/* See run_dialogue.h. The worker copies a slot while the grader fills the
 * next (upload) or checks the last (download): up to ring_slots chunks are
 * in flight, so the copies hide behind the host's work. */
#include <inttypes.h>
#include <string.h>
#include "format_alloc.h"
#include "mono_clock.h"
#include "run_dialogue.h"

typedef struct {
    bw_worker *w;
    bw_request q;          /* the RUN, with its nonce once sent */
    double deadline, timeout_s;
    bw_reply *final;
    int done;              /* the final RUN reply came */
    char **why;
} dialogue;

/* The next reply: the chunk message `expect`, or the final RUN reply (done
 * set). Anything else ends the worker. */
static bw_call_status next(dialogue *d, int64_t expect)
{
    bw_reply m;
    bw_call_status st =
        bw_worker_receive(d->w, d->q.nonce, &m, d->deadline, d->timeout_s, d->why);
    if (st != BW_CALL_OK)
        return st;
    if (m.kind == BW_REQ_RUN) {
        *d->final = m;
        d->done = 1;
        return BW_CALL_OK;
    }
    if (m.kind != BW_REQ_CHUNK || m.chunk != expect)
        return bw_worker_protocol_error(
            d->w,
            bw_format_alloc("the worker sent message kind %u, chunk %" PRId64 ", where chunk %" PRId64
                            " was due; it was killed",
                            (unsigned)m.kind, m.chunk, expect),
            d->why);
    return BW_CALL_OK;
}

static bw_call_status send_chunk(dialogue *d, int64_t c)
{
    bw_request m = d->q;
    m.kind = BW_REQ_CHUNK;
    m.chunk = c;
    return bw_worker_send(d->w, &m, d->why);
}

bw_call_status bw_run_dialogue(bw_worker *w, const bw_request *run, uint8_t *ring,
                               const bw_chunk_ops *ops, bw_reply *rep, double timeout_s,
                               char **why)
{
    dialogue d;
    memset(&d, 0, sizeof d);
    memset(rep, 0, sizeof *rep);
    d.w = w;
    d.q = *run;
    d.q.kind = BW_REQ_RUN;
    d.q.nonce = 0;
    d.timeout_s = timeout_s;
    d.deadline = timeout_s > 0 ? bw_mono_s() + timeout_s : -1.0;
    d.final = rep;
    d.why = why;
    const int64_t chunks = d.q.chunks, slots = d.q.ring_slots;

    bw_dialogue_times tm = {0, 0, 0, 0, 0};
    double t0 = bw_mono_s(), t;
    bw_call_status st = bw_worker_send(w, &d.q, why);
    /* Upload: a slot is filled again once the worker said it copied it. */
    int64_t freed = 0;
    for (int64_t c = 0; st == BW_CALL_OK && !d.done && c < chunks; c++) {
        if (c - freed >= slots && (st = next(&d, freed)) == BW_CALL_OK && !d.done)
            freed++;
        if (st != BW_CALL_OK || d.done)
            break;
        t = bw_mono_s();
        ops->fill(ops->ctx, &d.q, ring, c);
        tm.fill += bw_mono_s() - t;
        st = send_chunk(&d, c);
    }
    while (st == BW_CALL_OK && !d.done && freed < chunks)
        if ((st = next(&d, freed)) == BW_CALL_OK && !d.done)
            freed++;
    double t1 = bw_mono_s(), t2 = t1;
    /* Download: the worker reuses a slot once it is told it was checked. */
    int64_t taken = 0;
    for (int64_t c = 0; st == BW_CALL_OK && !d.done && c < chunks; c++) {
        if ((st = next(&d, c)) != BW_CALL_OK || d.done)
            break;
        t = bw_mono_s();
        if (c == 0)
            t2 = t;
        ops->take(ops->ctx, &d.q, ring, c);
        tm.take += bw_mono_s() - t;
        taken++;
        if (c + slots < chunks)
            st = send_chunk(&d, c);
    }
    if (st == BW_CALL_OK && d.done && rep->status == BW_REP_OK)
        return bw_worker_protocol_error(
            w, bw_format_alloc("the worker ended the run with %" PRId64 " of %" PRId64
                               " chunks sent back; it was killed", taken, chunks),
            why);
    /* The end of the run: a RUN reply, nothing else. */
    if (st == BW_CALL_OK && !d.done && (st = next(&d, -1)) == BW_CALL_OK && !d.done)
        return bw_worker_protocol_error(
            w, bw_format_alloc("the worker sent a chunk where the end of the run was due; "
                               "it was killed"),
            why);
    if (ops->times) {
        tm.upload = t1 - t0;
        tm.call = t2 - t1;
        tm.download = bw_mono_s() - t2;
        *ops->times = tm;
    }
    return st;
}
