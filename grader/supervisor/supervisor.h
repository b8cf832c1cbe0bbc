/* Running student code in a worker process: start, call with a time limit,
 * notice crashes and hangs, capture (capped) stdout/stderr, restart. The
 * grader process itself never loads student code or initializes CUDA.
 * Starting a worker is worker_start.c (its environment worker_env.c),
 * talking to it worker_call.c, ending it worker_end.c; what they share is
 * worker_process.h. */
#ifndef BWLAB_SUPERVISOR_H
#define BWLAB_SUPERVISOR_H
#include <stddef.h>
#include "protocol.h"
#include "shm.h"

typedef struct bw_worker bw_worker;

typedef struct {
    const char *worker_path;
    const char *sanitizer;       /* NULL, or "memcheck" / "racecheck" / "initcheck" */
    const char *sanitizer_path;  /* compute-sanitizer executable; NULL: found on PATH */
    size_t output_cap;           /* bytes of student stdout+stderr kept per call */
    double startup_timeout_s;    /* for the HELLO round trip (context creation) */
} bw_worker_opts;

typedef enum {
    BW_CALL_OK = 0,        /* reply received (check reply.status) */
    BW_CALL_CRASHED,       /* the worker died; *why says how (signal name, exit code) */
    BW_CALL_TIMEOUT,       /* killed after timeout_s */
    BW_CALL_PROTOCOL       /* garbage on the channel */
} bw_call_status;

/* Starts a worker and does the HELLO round trip; hello may be NULL.
 * Returns NULL and a malloc'd *why on failure. */
bw_worker *bw_worker_start(const bw_worker_opts *o, bw_shm *shm, bw_reply *hello, char **why);

/* Sends req, waits for the reply up to timeout_s. On CRASHED/TIMEOUT/PROTOCOL
 * the worker is gone (its whole process group killed and reaped); start a new
 * one for the next case. *why is malloc'd (or NULL) and says what happened. */
bw_call_status bw_worker_call(bw_worker *w, const bw_request *req, bw_reply *rep,
                              double timeout_s, char **why);

/* The halves of bw_worker_call, for the RUN dialogue (run_dialogue.h).
 * send sets req->magic, and a fresh req->nonce when it is 0. receive waits
 * until deadline (bw_mono_s time; < 0: no limit) for the next reply, which
 * must carry nonce (any kind; the caller checks); timeout_s is the limit its
 * timeout message quotes. Failures end the worker, as for bw_worker_call. */
bw_call_status bw_worker_send(bw_worker *w, bw_request *req, char **why);
bw_call_status bw_worker_receive(bw_worker *w, uint64_t nonce, bw_reply *rep, double deadline,
                                 double timeout_s, char **why);
/* Kills the worker for breaking the dialogue; *why gets text (malloc'd,
 * owned from now on). Returns BW_CALL_PROTOCOL. */
bw_call_status bw_worker_protocol_error(bw_worker *w, char *text, char **why);

/* Student stdout/stderr captured since the last take, at most output_cap
 * bytes plus a "[... N bytes cut]" note; NULL if nothing. malloc'd. */
char *bw_worker_take_output(bw_worker *w);

/* For a sanitizer run: what compute-sanitizer logged since the last take
 * (malloc'd, NULL if nothing). */
char *bw_worker_take_sanitizer_log(bw_worker *w);

int bw_worker_alive(const bw_worker *w);
/* The grader's end of the worker's channel (to wait on it without reading). */
int bw_worker_channel(const bw_worker *w);
/* The worker's process id (what a profiler following children reports);
 * with containment in a PID namespace, that namespace's init's (the worker
 * is its child), so profile and crosscheck run without --contain. */
long bw_worker_pid(const bw_worker *w);
/* Polite QUIT, then SIGKILL to the group; reaps; frees w. Safe on NULL. */
void bw_worker_stop(bw_worker *w);
/* Asks the worker to exit and returns at once: its exit (the CUDA context's
 * teardown) then overlaps whatever the caller does before bw_worker_stop,
 * which waits for it. */
void bw_worker_quit_soon(bw_worker *w);

#endif
