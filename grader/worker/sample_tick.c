/* See sample_tick.h. A broken channel, or anything but the go that was due,
 * means the grader is gone or gave up on this worker: exit at once. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channel_io.h"
#include "protocol.h"
#include "sample_tick.h"

static void send_tick(int chan, uint64_t nonce, int64_t k, int32_t phase)
{
    bw_reply m;
    memset(&m, 0, sizeof m);
    m.magic = BW_PROTO_MAGIC;
    m.kind = BW_REQ_TICK;
    m.nonce = nonce;
    m.status = BW_REP_OK;
    m.chunk = k;
    m.tick_phase = phase;
    if (bw_send_all(chan, &m, sizeof m) != 0)
        _exit(1);
}

void bw_tick_ready(int chan, uint64_t nonce, int64_t k)
{
    send_tick(chan, nonce, k, BW_TICK_READY);
    /* The go comes within microseconds: spin for it rather than sleep, so
     * that a thread's wake-up (tenths of a millisecond on a virtual
     * machine) stays out of the span the grader times. */
    struct pollfd p = {chan, POLLIN, 0};
    for (long spins = 0; spins < 10000000L && poll(&p, 1, 0) == 0; spins++) {
    }
    bw_request go;
    if (bw_read_all(chan, &go, sizeof go) != 0 || go.magic != BW_PROTO_MAGIC ||
        go.kind != BW_REQ_TICK || go.nonce != nonce || go.chunk != k)
        _exit(1);
}

void bw_tick_done(int chan, uint64_t nonce, int64_t k)
{
    send_tick(chan, nonce, k, BW_TICK_DONE);
}
