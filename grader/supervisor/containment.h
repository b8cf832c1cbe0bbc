/* Containment of the workers without bubblewrap (bwgrade --contain; run.py
 * grade turns it on). Three defences, each taken where the machine allows:
 *   - as root, every worker runs as an unprivileged user (BWLAB_WORKER_USER,
 *     default nobody): it cannot write the kit, read the seed or the
 *     outputs, or signal bwgrade;
 *   - every worker runs in its own PID namespace, under a small init process
 *     of bwgrade's (a user namespace too when not root): whatever the
 *     student's code forks dies with the worker, and nothing outside the
 *     namespace can be named by a kill();
 *   - where no namespace can be made, bwgrade becomes a child subreaper and,
 *     after every worker, kills and reaps each process that was reparented
 *     to it and is not a live worker.
 * With a bubblewrap sandbox set (sandbox.h) none of them is added: bwrap
 * makes its own PID namespace and runs the worker read-only.
 * The policy is process-wide, set once before workers start. */
#ifndef BWLAB_CONTAINMENT_H
#define BWLAB_CONTAINMENT_H
#include <sys/types.h>

/* What was in force for the workers started so far (bwgrade's JSON field
 * "containment"). Strings are static or live until the next bw_contain_set. */
typedef struct {
    const char *user;     /* "same", or the name (else "UID:GID") workers ran as */
    int pid_namespace;    /* every worker so far had its own PID namespace */
    int subreaper;        /* bwgrade swept up orphans as a child subreaper */
    const char *sandbox;  /* "bwrap" or "none" */
    int gpu_minor;        /* bwrap: the one GPU node bound, /dev/nvidia<gpu_minor>; -1: all */
} bw_containment;

/* on: contain every worker started afterwards. As root, looks up the
 * worker user: BWLAB_WORKER_USER (a name, or UID[:GID]), else nobody, else
 * 65534:65534; root (uid or gid 0) is refused. Returns 0, or -1 with *why
 * (malloc'd). */
int bw_contain_set(int on, char **why);
int bw_contain_enabled(void);

bw_containment bw_contain_report(void);

/* ---- for the supervisor's worker_start.c and worker_end.c ---- */

/* How one worker is started; filled by bw_contain_plan in the parent. */
typedef struct {
    int contain;           /* containment applies to this worker */
    int drop;              /* switch to uid/gid in the child, before exec */
    uid_t uid;
    gid_t gid;
    const char *user;      /* its name for messages */
    int ns_flags;          /* clone flags for the namespaces; 0: none tried */
    uid_t outer_uid;       /* the user namespace's map */
    gid_t outer_gid;
    long max_fd;
} bw_contain_plan;

/* The plan for the next worker (nothing to do when containment is off or a
 * bubblewrap sandbox is set). BWLAB_CONTAIN_NO_PIDNS=1 (a test switch)
 * skips the namespace, so that the subreaper fallback is what runs. */
void bw_contain_plan_for(bw_contain_plan *p);

/* What failed in the child, sent on the error pipe before it exits. */
typedef struct {
    int stage;             /* BW_CHILD_* */
    int err;               /* errno */
} bw_child_error;
enum { BW_CHILD_EXEC = 0, BW_CHILD_USER, BW_CHILD_SETUP, BW_CHILD_NAMESPACE };

/* Forks the worker-to-be. With p->ns_flags it first tries a process in new
 * namespaces (pid 1 there, the init that waits for the worker and writes its
 * wait status, an int, to statfd before it exits); the worker is that
 * init's child. Where that fails, a plain fork, and bwgrade becomes a child
 * subreaper. Returns 0 in the worker-to-be (*namespaced says which way),
 * its pid (the init's, or the worker's) in the parent, -1 with errno.
 * errfd: where the init reports a failure (bw_child_error). The pid is
 * recorded as a live worker until bw_contain_reaped. */
pid_t bw_contain_fork(const bw_contain_plan *p, int errfd, int statfd, int *namespaced);

/* Every signal unblocked and at its default disposition (a child before
 * exec; inherited SIG_IGN would otherwise survive it). */
void bw_signals_to_default(void);

/* Closes every descriptor from lo up (close_range where the kernel has it,
 * else one by one below max_fd); async-signal-safe, for a child before exec. */
void bw_close_from(int lo, long max_fd);

/* In the child, async-signal-safe: drops supplementary groups, then gid,
 * then uid, and checks that it took (no way back to root). 0 or an errno. */
int bw_contain_drop(const bw_contain_plan *p);

/* After the process bw_contain_fork returned was reaped: it is no longer a
 * live worker; without a namespace, every process reparented to bwgrade
 * that is not a live worker is killed and reaped. */
void bw_contain_reaped(pid_t pid, int namespaced);

#endif
