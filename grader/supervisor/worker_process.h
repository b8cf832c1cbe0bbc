/* A worker process as the supervisor's files see it: the handle's fields,
 * the descriptor numbers a worker gets, and what one of those files does
 * that another needs. worker_start.c starts a worker (worker_env.c builds
 * its environment), worker_call.c talks to it, worker_end.c ends it.
 * Private to the supervisor; supervisor.h is what the rest of bwgrade uses. */
#ifndef BWLAB_WORKER_PROCESS_H
#define BWLAB_WORKER_PROCESS_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "supervisor.h"

#define CHILD_CHANNEL_FD 3
#define CHILD_ERRPIPE_FD 4         /* close-on-exec: reports a failed exec */
#define CHILD_SHM_FD 5             /* the first of BW_SHM_SEGMENTS */
#define CHILD_FIRST_CLOSED_FD (CHILD_SHM_FD + BW_SHM_SEGMENTS)
#define CHILD_FD_TEXT_(fd) #fd
#define CHILD_FD_TEXT(fd) CHILD_FD_TEXT_(fd)

struct bw_worker {
    pid_t pid;            /* also its process group id */
    int chan;             /* our end of the socket pair, -1 once closed */
    int capture;          /* the student's stdout + stderr */
    int san_log;          /* sanitizer log (read side), -1 without sanitizer */
    char *san_log_path;   /* unlinked in bw_worker_stop */
    char *home;           /* the worker's HOME and TMPDIR; removed in bw_worker_stop */
    int own_home;         /* home is ours to remove (not the /tmp fallback) */
    uint64_t san_pos;     /* sanitizer log bytes already taken */
    size_t output_cap;
    int alive;            /* the process runs and the channel is usable */
    int reaped;
    int quit_sent;        /* bw_worker_quit_soon asked it to exit */
    int status;           /* wait status once reaped */
    double grace_s;
    int namespaced;       /* pid is the init of the worker's PID namespace */
    int stat_r;           /* that init's report of the worker's wait status, or -1 */
};

/* ---- helpers every file uses ---- */

static inline void set_why(char **why, char *text)
{
    if (why != NULL) {
        free(*why);
        *why = text;
    } else {
        free(text);
    }
}

static inline void close_fd(int *fd)
{
    if (*fd >= 0) {
        (void)close(*fd);
        *fd = -1;
    }
}

/* ---- ending a worker (worker_end.c) ---- */

/* Has the worker exited? Leaves it a zombie, reserved until kill_and_reap. */
int child_exited(bw_worker *w);
/* Waits up to grace_s for the worker to exit by itself. */
int wait_exit(bw_worker *w, double grace_s);
/* SIGKILL to its process group, then reap it; idempotent; the wait status. */
int kill_and_reap(bw_worker *w);
/* How the worker ended, from its wait status (malloc'd). */
char *describe_status(int status);

/* ---- its environment (worker_env.c) ---- */

/* The allow-listed environment, with HOME and TMPDIR set to home. */
char **build_env(const char *home, char **home_var, char **tmp_var);

/* ---- talking to it (worker_call.c) ---- */

/* One request and its reply, within timeout_s (bw_worker_call, minus *why's reset). */
bw_call_status do_call(bw_worker *w, const bw_request *req, bw_reply *rep,
                       double timeout_s, char **why);

#endif
