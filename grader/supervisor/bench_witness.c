/* See bench_witness.h. */
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include "bench_witness.h"
#include "format_alloc.h"
#include "mono_clock.h"

/* The tolerances, measured on the H100 (docs/SECURITY.md, the clock's row:
 * 0.519 ms by the clock, 0.515 ms reported): an honest call's worker figure
 * and the grader's clock agree within a few microseconds; the span from the go to the DONE also holds two messages
 * and a wake-up, which the baseline's span takes away. */
#define CLOCK_SLACK_MIN_MS 0.02
#define CLOCK_SLACK_FRACTION 0.05
/* The preparation (hash of the last output, rotation, synchronize) may take
 * a little longer after a real call than after an empty one (dirty L2 lines
 * to write back; on the H100 up to 0.041 ms): beyond this, the excess is
 * charged to the call. The slack scales with the call, not with the
 * preparation, which moves twice the call's bytes and more: a slack of a
 * fifth of it let 40% of a call's work hide there. */
#define PREP_SLACK_MIN_MS 0.05
#define PREP_SLACK_FRACTION 0.05

/* How long bwgrade spins on the channel, rather than sleeping in poll(),
 * before each timing message: waking a sleeping thread took 0.05-0.4 ms on
 * the H100 machine (a virtual machine), and differently for long and short
 * waits, which made the spans of one row differ by more than its call. The
 * preparation before a READY is timed too, and compared across workers. */
#define SPIN_S 0.05

/* Returns once the worker's next message has arrived, or SPIN_S passed. */
static void spin_until_readable(bw_worker *w)
{
    struct pollfd p = {bw_worker_channel(w), POLLIN, 0};
    double until = bw_mono_s() + SPIN_S;
    while (p.fd >= 0 && poll(&p, 1, 0) == 0 && bw_mono_s() < until) {
    }
}

void bw_witness_init(bw_witness *wit)
{
    memset(wit, 0, sizeof *wit);
}

void bw_witness_free(bw_witness *wit)
{
    free(wit->span_ms);
    free(wit->prep_ms);
    memset(wit, 0, sizeof *wit);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(const double *v, int k)
{
    if (k <= 0)
        return NAN;
    double *s = malloc((size_t)k * sizeof *s);
    if (!s)
        return NAN;
    memcpy(s, v, (size_t)k * sizeof *s);
    qsort(s, (size_t)k, sizeof *s, cmp_double);
    double m = k % 2 ? s[k / 2] : 0.5 * (s[k / 2 - 1] + s[k / 2]);
    free(s);
    return m;
}

bw_witness_summary bw_witness_summarize(const bw_witness *wit)
{
    bw_witness_summary s;
    s.samples = wit->count;
    s.span_ms = median_of(wit->span_ms, wit->count);
    /* prep_ms[0] is unused: the first sample has no DONE before it. */
    s.prep_ms = wit->count > 1 ? median_of(wit->prep_ms + 1, wit->count - 1) : NAN;
    return s;
}

static int grow(bw_witness *wit)
{
    if (wit->count < wit->cap)
        return 0;
    int cap = wit->cap ? 2 * wit->cap : 64;
    double *a = realloc(wit->span_ms, (size_t)cap * sizeof *a);
    if (!a)
        return -1;
    wit->span_ms = a;
    double *b = realloc(wit->prep_ms, (size_t)cap * sizeof *b);
    if (!b)
        return -1;
    wit->prep_ms = b;
    wit->cap = cap;
    return 0;
}

static bw_call_status out_of_order(bw_worker *w, const bw_reply *m, int expect, char **why)
{
    return bw_worker_protocol_error(
        w,
        bw_format_alloc("the worker sent a timing message (sample %lld, phase %d) where sample "
                        "%d's %s was due; it was killed",
                        (long long)m->chunk, (int)m->tick_phase, expect,
                        m->tick_phase == BW_TICK_DONE ? "start" : "end"),
        why);
}

bw_call_status bw_bench_dialogue(bw_worker *w, const bw_request *req, bw_reply *rep,
                                 double timeout_s, bw_witness *wit, char **why)
{
    if (why)
        *why = NULL;
    memset(rep, 0, sizeof *rep);
    bw_request q = *req;
    q.tick = 1;
    q.nonce = 0;
    double deadline = timeout_s > 0 ? bw_mono_s() + timeout_s : -1.0;
    bw_call_status st = bw_worker_send(w, &q, why);
    double go = 0.0;
    while (st == BW_CALL_OK) {
        bw_reply m;
        spin_until_readable(w);
        st = bw_worker_receive(w, q.nonce, &m, deadline, timeout_s, why);
        double now = bw_mono_s();
        if (st != BW_CALL_OK)
            break;
        if (m.kind == q.kind) {
            *rep = m;
            if (m.status == BW_REP_OK && (wit->ready || m.samples != wit->count))
                return bw_worker_protocol_error(
                    w,
                    bw_format_alloc("the worker reported %d timed samples, but the grader's "
                                    "clock saw %d start and end; it was killed",
                                    (int)m.samples, wit->count),
                    why);
            return BW_CALL_OK;
        }
        if (m.kind != BW_REQ_TICK)
            return bw_worker_protocol_error(
                w, bw_format_alloc("the worker sent message kind %u during a benchmark; it was "
                                   "killed", (unsigned)m.kind),
                why);
        if (m.chunk != wit->count)
            return out_of_order(w, &m, wit->count, why);
        if (m.tick_phase == BW_TICK_READY && !wit->ready) {
            if (grow(wit) != 0)
                return bw_worker_protocol_error(w, bw_format_alloc("grader out of memory"), why);
            wit->prep_ms[wit->count] = wit->count > 0 ? (now - wit->last_done) * 1e3 : NAN;
            wit->ready = 1;
            bw_request g = q;
            g.kind = BW_REQ_TICK;
            g.chunk = m.chunk;
            go = bw_mono_s();
            st = bw_worker_send(w, &g, why);
        } else if (m.tick_phase == BW_TICK_DONE && wit->ready) {
            wit->span_ms[wit->count] = (now - go) * 1e3;
            wit->last_done = now;
            wit->ready = 0;
            wit->count++;
        } else {
            return out_of_order(w, &m, wit->count, why);
        }
    }
    return st;
}

int bw_witness_judge(bw_witness_summary student, bw_witness_summary baseline, double reported_ms,
                     bw_witness_verdict *v)
{
    v->clock_ms = student.span_ms - baseline.span_ms;
    v->prep_excess_ms = isfinite(student.prep_ms) && isfinite(baseline.prep_ms)
                            ? student.prep_ms - baseline.prep_ms
                            : 0.0;
    double prep_slack = fmax(PREP_SLACK_MIN_MS, PREP_SLACK_FRACTION * fmax(0.0, v->clock_ms));
    v->charged_ms = v->clock_ms + fmax(0.0, v->prep_excess_ms - prep_slack);
    v->allowed_ms = v->charged_ms - fmax(CLOCK_SLACK_MIN_MS, CLOCK_SLACK_FRACTION * v->charged_ms);
    if (!isfinite(v->allowed_ms))
        return -1;
    return reported_ms >= v->allowed_ms ? 0 : -1;
}
