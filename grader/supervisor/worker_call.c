/* Talking to a worker: requests sent and replies received over its channel,
 * within a time limit, with a crash, a hang or a forged reply told apart;
 * what it printed (and what compute-sanitizer logged) since the last take;
 * and what else a caller may ask of it. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "channel_io.h"
#include "format_alloc.h"
#include "mono_clock.h"
#include "random_u64.h"
#include "worker_process.h"

#define SANITIZER_LOG_MIN_CAP ((size_t)64 << 10)
#define POLL_SLICE_MS 20            /* how often a waiting call checks the process */

/* ---------------------------------------------------------- the channel */

/* The peer closed its end (or the send failed): the worker is dead or dying. */
static bw_call_status peer_gone(bw_worker *w, int already_exited, char **why)
{
    double grace = w->san_log >= 0 ? w->grace_s : 1.0;
    int exited = already_exited || wait_exit(w, grace);
    int status = kill_and_reap(w);
    if (exited)
        set_why(why, describe_status(status));
    else
        set_why(why, bw_format_alloc("the worker closed its channel (descriptor %d) without replying "
                          "(the student code closed it?); it was killed", CHILD_CHANNEL_FD));
    return BW_CALL_CRASHED;
}

/* Something the worker wrote is still unread on the channel. */
static int reply_waiting(int chan)
{
    struct pollfd p = {.fd = chan, .events = POLLIN, .revents = 0};
    char c;
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) &&
           recv(chan, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

static bw_call_status send_request(bw_worker *w, bw_request *q, char **why)
{
    q->magic = BW_PROTO_MAGIC;
    if (q->nonce == 0)
        q->nonce = bw_random_u64(); /* a reply must echo it: see protocol.h */
    if (w == NULL || !w->alive || w->chan < 0) {
        set_why(why, bw_format_alloc("the worker is not running (start a new one)"));
        return BW_CALL_CRASHED;
    }
    if (bw_send_all(w->chan, q, sizeof *q) != 0) {
        /* A worker may answer a RUN, then exit, before it has read the
         * chunks still to come (a refusal, an error in the upload): the send
         * fails, but its answer is in the channel, and the receive that
         * follows reads it, then sees the exit. Else a crash with no reply. */
        if (reply_waiting(w->chan))
            return BW_CALL_OK;
        return peer_gone(w, 0, why);
    }
    return BW_CALL_OK;
}

static bw_call_status receive_reply(bw_worker *w, uint64_t nonce, bw_reply *rep, double deadline,
                                    double timeout_s, char **why)
{
    memset(rep, 0, sizeof *rep);
    if (w == NULL || !w->alive || w->chan < 0) {
        set_why(why, bw_format_alloc("the worker is not running (start a new one)"));
        return BW_CALL_CRASHED;
    }
    unsigned char *buf = (unsigned char *)rep;
    const size_t need = sizeof *rep;
    size_t got = 0;
    int magic_checked = 0;
    int exited = 0;
    while (got < need) {
        int slice = POLL_SLICE_MS;
        if (exited) {
            slice = 0; /* drain what it wrote before dying */
        } else if (deadline >= 0) {
            double left = deadline - bw_mono_s();
            if (left <= 0) {
                (void)kill_and_reap(w);
                set_why(why, bw_format_alloc("no answer after %g s (hang or infinite loop?); "
                                  "the worker was killed", timeout_s));
                return BW_CALL_TIMEOUT;
            }
            if (left * 1000.0 < (double)slice)
                slice = (int)(left * 1000.0) + 1;
        }
        struct pollfd p = {.fd = w->chan, .events = POLLIN, .revents = 0};
        int pr = poll(&p, 1, slice);
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            (void)kill_and_reap(w);
            set_why(why, bw_format_alloc("poll on the worker channel failed: %s", strerror(err)));
            return BW_CALL_PROTOCOL;
        }
        if (pr == 0) {
            if (exited)
                return peer_gone(w, 1, why);
            /* The worker may be dead while something it forked still
             * holds the channel open: then no EOF would ever come. */
            if (child_exited(w))
                exited = 1;
            continue;
        }
        ssize_t r = recv(w->chan, buf + got, need - got, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return peer_gone(w, exited, why);
        }
        if (r == 0)
            return peer_gone(w, exited, why);
        got += (size_t)r;
        if (!magic_checked && got >= sizeof rep->magic) {
            magic_checked = 1;
            if (rep->magic != BW_PROTO_MAGIC) {
                uint32_t m = rep->magic;
                (void)kill_and_reap(w);
                set_why(why, bw_format_alloc("garbage on the worker channel (magic 0x%08x, expected 0x%08x; "
                                  "did the student code write to descriptor %d?); "
                                  "the worker was killed",
                                  (unsigned)m, (unsigned)BW_PROTO_MAGIC, CHILD_CHANNEL_FD));
                return BW_CALL_PROTOCOL;
            }
        }
    }
    if (rep->nonce != nonce) {
        (void)kill_and_reap(w);
        set_why(why, bw_format_alloc("a forged reply on the grader's channel (descriptor %d): it does not "
                          "carry this request's token, so the worker's own code did not write it. "
                          "Code under test must never write to the grader's descriptors; the "
                          "worker was killed", CHILD_CHANNEL_FD));
        return BW_CALL_PROTOCOL;
    }
    rep->message[BW_TEXT - 1] = '\0';
    rep->device_name[BW_TEXT - 1] = '\0';
    if (rep->status == BW_REP_CUDA_ERROR) {
        /* The worker exits by itself after this reply. */
        (void)wait_exit(w, w->grace_s);
        (void)kill_and_reap(w);
    } else if (exited) {
        (void)kill_and_reap(w); /* it answered, then died */
    }
    return BW_CALL_OK;
}

bw_call_status do_call(bw_worker *w, const bw_request *req, bw_reply *rep,
                              double timeout_s, char **why)
{
    bw_request q = *req;
    q.nonce = 0;
    memset(rep, 0, sizeof *rep);
    bw_call_status st = send_request(w, &q, why);
    if (st != BW_CALL_OK)
        return st;
    double deadline = timeout_s > 0 ? bw_mono_s() + timeout_s : -1.0;
    st = receive_reply(w, q.nonce, rep, deadline, timeout_s, why);
    if (st == BW_CALL_OK && rep->kind != q.kind)
        return bw_worker_protocol_error(
            w, bw_format_alloc("the worker answered request kind %u to a request of kind %u; "
                               "it was killed", (unsigned)rep->kind, (unsigned)q.kind),
            why);
    return st;
}

/* ---------------------------------------------------------- public API */

bw_call_status bw_worker_call(bw_worker *w, const bw_request *req, bw_reply *rep,
                              double timeout_s, char **why)
{
    if (why != NULL)
        *why = NULL;
    return do_call(w, req, rep, timeout_s, why);
}

bw_call_status bw_worker_send(bw_worker *w, bw_request *req, char **why)
{
    return send_request(w, req, why);
}

bw_call_status bw_worker_receive(bw_worker *w, uint64_t nonce, bw_reply *rep, double deadline,
                                 double timeout_s, char **why)
{
    return receive_reply(w, nonce, rep, deadline, timeout_s, why);
}

bw_call_status bw_worker_protocol_error(bw_worker *w, char *text, char **why)
{
    (void)kill_and_reap(w);
    set_why(why, text);
    return BW_CALL_PROTOCOL;
}

/* Reads [pos, end) of fd, at most cap bytes; NULs become '?'. Sets *total. */
static char *read_capped(int fd, uint64_t pos, size_t cap, uint64_t *total)
{
    *total = 0;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_size <= pos)
        return NULL;
    uint64_t avail = (uint64_t)st.st_size - pos;
    *total = avail;
    size_t keep = avail < (uint64_t)cap ? (size_t)avail : cap;
    char *buf = malloc(keep + 1);
    if (buf == NULL)
        return NULL;
    size_t got = 0;
    while (got < keep) {
        ssize_t r = pread(fd, buf + got, keep - got, (off_t)(pos + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    for (size_t i = 0; i < got; i++)
        if (buf[i] == '\0')
            buf[i] = '?';
    buf[got] = '\0';
    if (got < keep)
        *total = got; /* the file shrank under us */
    return buf;
}

/* What a take returns: NULL when nothing was written, else the text with a
 * note of how much was cut. */
static char *taken_text(char *text, uint64_t total)
{
    if (text == NULL)
        return NULL;
    if (text[0] == '\0' && total == 0) {
        free(text);
        return NULL;
    }
    size_t len = strlen(text);
    if (total <= len)
        return text;
    char *s = bw_format_alloc("%s%s[... %llu more bytes cut]\n", text,
                   (len > 0 && text[len - 1] != '\n') ? "\n" : "",
                   (unsigned long long)(total - len));
    if (s == NULL)
        return text;
    free(text);
    return s;
}

char *bw_worker_take_output(bw_worker *w)
{
    if (w == NULL || w->capture < 0)
        return NULL;
    uint64_t total = 0;
    char *text = read_capped(w->capture, 0, w->output_cap, &total);
    /* The worker writes with O_APPEND, so its next write lands at 0 again. */
    int rc;
    do {
        rc = ftruncate(w->capture, 0);
    } while (rc != 0 && errno == EINTR);
    return taken_text(text, total);
}

char *bw_worker_take_sanitizer_log(bw_worker *w)
{
    if (w == NULL || w->san_log < 0)
        return NULL;
    size_t cap = w->output_cap > SANITIZER_LOG_MIN_CAP ? w->output_cap : SANITIZER_LOG_MIN_CAP;
    uint64_t total = 0;
    char *text = read_capped(w->san_log, w->san_pos, cap, &total);
    /* compute-sanitizer does not append, so the file is never truncated;
     * everything up to its current end counts as taken. */
    w->san_pos += total;
    return taken_text(text, total);
}

int bw_worker_alive(const bw_worker *w)
{
    return w != NULL && w->alive;
}

int bw_worker_channel(const bw_worker *w) { return w ? w->chan : -1; }

long bw_worker_pid(const bw_worker *w)
{
    return w != NULL ? (long)w->pid : 0;
}

