/* Starting a worker: the files and descriptors it gets, the forked child
 * that becomes it (user, descriptors, limits, then exec), the HELLO round
 * trip, and why a start failed.
 *
 * What a worker process gets (see start_child):
 *   fd 0  /dev/null
 *   fd 1, 2  one unlinked capture file, opened O_APPEND (so the supervisor
 *         may truncate it between calls), capped by RLIMIT_FSIZE
 *   fd 3  its end of the channel        (BWLAB_CHANNEL_FD=3)
 *   fd 5 .. 5 + BW_SHM_SEGMENTS - 1  the shared-memory segments (BWLAB_SHM_FD=5)
 *   nothing else: every other descriptor is closed before exec
 *   an allow-listed environment (see build_env) with HOME and TMPDIR set to
 *         a private 0700 directory that bw_worker_stop removes
 *   its own process group (pgid == pid), RLIMIT_CORE 0, SIGXFSZ ignored,
 *   an empty signal mask and default signal dispositions, and (Linux)
 *   SIGKILL as parent-death signal: if the grader dies (Ctrl-C, crash)
 *   while the worker runs a student's endless loop, the worker dies too.
 *   The parent-death signal follows the grader THREAD that started the
 *   worker: start workers from a thread that lives as long as they do.
 *   With a sandbox set (sandbox.h) the process started is bwrap, which runs
 *   the worker in new namespaces with the same descriptors; killing bwrap's
 *   group ends the sandbox's PID namespace and so everything in it.
 *   With containment on (containment.h) and no sandbox, the worker runs as
 *   the worker user (as root), and the process started is, where the
 *   kernel allows, pid 1 of a new PID namespace, whose child the worker is:
 *   killing it ends the namespace; its last word is the worker's wait
 *   status, on a pipe (w->stat_r). Else the worker is our child, and after
 *   it is reaped bw_contain_reaped sweeps up what it left.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "containment.h"
#include "format_alloc.h"
#include "sandbox.h"
#include "worker_process.h"

#define CAPTURE_LIMIT_BYTES ((rlim_t)64 << 20)   /* per worker file, RLIMIT_FSIZE */
#define DEFAULT_OUTPUT_CAP ((size_t)16 << 10)
#define DEFAULT_STARTUP_S 60.0
#define EXIT_GRACE_S 2.0            /* a worker told to exit gets this long */
#define EXIT_GRACE_SANITIZER_S 15.0 /* compute-sanitizer writes its summary first */

static void set_cloexec(int fd)
{
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0)
        (void)fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

/* A close-on-exec temporary file in $TMPDIR (else /tmp). With path_out NULL
 * it is unlinked at once; else *path_out gets its malloc'd name. */
static int make_temp_file(const char *tag, char **path_out)
{
    const char *dirs[2] = {getenv("TMPDIR"), "/tmp"};
    for (int i = 0; i < 2; i++) {
        if (dirs[i] == NULL || dirs[i][0] == '\0')
            continue;
        char *path = bw_format_alloc("%s/bwlab-%s-XXXXXX", dirs[i], tag);
        if (path == NULL)
            return -1;
        int fd = mkstemp(path);
        if (fd < 0) {
            free(path);
            continue;
        }
        set_cloexec(fd);
        if (path_out != NULL) {
            *path_out = path;
        } else {
            (void)unlink(path);
            free(path);
        }
        return fd;
    }
    return -1;
}

/* A private directory (mode 0700, from mkdtemp) in $TMPDIR, else /tmp, for the
 * worker's HOME and TMPDIR: what the student code, the CUDA runtime (its JIT
 * cache under ~/.nv) or a tool (ncu's temporary files) writes there goes away
 * with the worker, and the grading user's own home is not named to it.
 * malloc'd; NULL if none can be made. */
static char *make_private_dir(void)
{
    const char *dirs[2] = {getenv("TMPDIR"), "/tmp"};
    for (int i = 0; i < 2; i++) {
        if (dirs[i] == NULL || dirs[i][0] == '\0')
            continue;
        char *path = bw_format_alloc("%s/bwlab-home-XXXXXX", dirs[i]);
        if (path == NULL)
            return NULL;
        if (mkdtemp(path) != NULL)
            return path;
        free(path);
    }
    return NULL;
}

/* The executable name found on PATH (malloc'd), or NULL. */
static char *find_on_path(const char *name)
{
    if (strchr(name, '/') != NULL)
        return bw_format_alloc("%s", name);
    const char *path = getenv("PATH");
    if (path == NULL || path[0] == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon != NULL ? (size_t)(colon - p) : strlen(p);
        char *cand = len == 0 ? bw_format_alloc("./%s", name) : bw_format_alloc("%.*s/%s", (int)len, p, name);
        if (cand == NULL)
            return NULL;
        struct stat st;
        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
            return cand;
        free(cand);
        if (colon == NULL)
            return NULL;
        p = colon + 1;
    }
}

/* ---------------------------------------------------------- the child side */

static void child_fail(int errfd, int stage, int err) __attribute__((noreturn));

static void child_fail(int errfd, int stage, int err)
{
    bw_child_error e = {stage, err};
    ssize_t r;
    do {
        r = write(errfd, &e, sizeof e);
    } while (r < 0 && errno == EINTR);
    _exit(127);
}

typedef struct {
    int chan, capture, devnull, errw;
    const int *shm;     /* BW_SHM_SEGMENTS descriptors */
    pid_t parent;
    const char *file;
    char **argv;
    char **envp;
    struct rlimit fsize;
    long max_fd;
    const bw_contain_plan *plan;
    int namespaced;     /* set in the child: its parent is the namespace's init */
} child_setup;

/* Runs in the forked child: only async-signal-safe calls from here on. */
static void start_child(const child_setup *c) __attribute__((noreturn));

static void start_child(const child_setup *c)
{
    int errfd = c->errw;
    (void)setpgid(0, 0);
    /* First, so that nothing below runs as root; a drop that did not take
     * ends the child, the worker never runs. */
    int err = bw_contain_drop(c->plan);
    if (err != 0)
        child_fail(errfd, BW_CHILD_USER, err);
#ifdef __linux__
    /* A contained worker gains nothing from an exec: no setuid program
     * (reachable by an inline system call) runs with its owner's rights. */
    if (c->plan->contain && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        child_fail(errfd, BW_CHILD_SETUP, errno);
    /* After the drop: a change of user clears the parent-death signal. */
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* The grader died before prctl took effect. In a namespace the parent
     * is its init (pid 1), whose death ends the namespace anyway. */
    if (!c->namespaced && getppid() != c->parent)
        _exit(127);
#endif

    bw_signals_to_default();   /* undo inherited masks and SIG_IGN */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_IGN;
    (void)sigaction(SIGXFSZ, &sa, NULL);   /* past the output cap, writes just fail */

    /* Move everything above the target numbers first, so that no dup2 below
     * overwrites a descriptor still needed. The copies are close-on-exec. */
    const int above = CHILD_FIRST_CLOSED_FD;
    int t_chan = fcntl(c->chan, F_DUPFD_CLOEXEC, above);
    int t_cap = fcntl(c->capture, F_DUPFD_CLOEXEC, above);
    int t_null = fcntl(c->devnull, F_DUPFD_CLOEXEC, above);
    int t_err = fcntl(c->errw, F_DUPFD_CLOEXEC, above);
    if (t_err >= 0)
        errfd = t_err;
    int t_shm[BW_SHM_SEGMENTS];
    for (int k = 0; k < BW_SHM_SEGMENTS; k++) {
        t_shm[k] = fcntl(c->shm[k], F_DUPFD_CLOEXEC, above);
        if (t_shm[k] < 0)
            child_fail(errfd, BW_CHILD_SETUP, errno);
    }
    if (t_chan < 0 || t_cap < 0 || t_null < 0 || t_err < 0)
        child_fail(errfd, BW_CHILD_SETUP, errno);
    /* dup2 clears close-on-exec on the new descriptor. */
    if (dup2(t_null, 0) < 0 || dup2(t_cap, 1) < 0 || dup2(t_cap, 2) < 0 ||
        dup2(t_chan, CHILD_CHANNEL_FD) < 0 || dup2(t_err, CHILD_ERRPIPE_FD) < 0)
        child_fail(errfd, BW_CHILD_SETUP, errno);
    for (int k = 0; k < BW_SHM_SEGMENTS; k++)
        if (dup2(t_shm[k], CHILD_SHM_FD + k) < 0)
            child_fail(errfd, BW_CHILD_SETUP, errno);
    errfd = CHILD_ERRPIPE_FD;
    if (fcntl(CHILD_ERRPIPE_FD, F_SETFD, FD_CLOEXEC) < 0)
        child_fail(errfd, BW_CHILD_SETUP, errno);
    bw_close_from(CHILD_FIRST_CLOSED_FD, c->max_fd);

    struct rlimit zero = {0, 0};
    (void)setrlimit(RLIMIT_CORE, &zero);
    if (setrlimit(RLIMIT_FSIZE, &c->fsize) != 0)
        child_fail(errfd, BW_CHILD_SETUP, errno);

    execve(c->file, c->argv, c->envp);
    child_fail(errfd, BW_CHILD_EXEC, errno);
}

static int valid_tool(const char *t)
{
    return strcmp(t, "memcheck") == 0 || strcmp(t, "racecheck") == 0 ||
           strcmp(t, "initcheck") == 0 || strcmp(t, "synccheck") == 0;
}

/* Why the child did not become the worker (malloc'd). */
static char *child_error_text(const bw_child_error *e, const char *file, const bw_contain_plan *plan)
{
    const char *err = strerror(e->err);
    switch (e->stage) {
    case BW_CHILD_USER:
        return bw_format_alloc("cannot switch the worker to the user %s (uid %lu, gid %lu): %s; "
                               "it was not started (it must never run as root)",
                               plan->user, (unsigned long)plan->uid, (unsigned long)plan->gid, err);
    case BW_CHILD_NAMESPACE:
        return bw_format_alloc("cannot start the worker in its PID namespace: %s", err);
    case BW_CHILD_EXEC:
        if (plan->drop && (e->err == EACCES || e->err == EPERM))
            return bw_format_alloc("cannot run %s as the worker user %s: %s (every folder above it "
                                   "must be searchable by others, chmod o+x, and the file "
                                   "executable by others; set BWLAB_WORKER_USER to another user)",
                                   file, plan->user, err);
        return bw_format_alloc("cannot run %s: %s", file, err);
    default:
        return bw_format_alloc("cannot set up the worker process for %s: %s", file, err);
    }
}

bw_worker *bw_worker_start(const bw_worker_opts *o, bw_shm *shm, bw_reply *hello, char **why)
{
    if (why != NULL)
        *why = NULL;
    if (hello != NULL)
        memset(hello, 0, sizeof *hello);
    if (o == NULL || o->worker_path == NULL || shm == NULL || bw_shm_fds(shm) == NULL) {
        set_why(why, bw_format_alloc("bw_worker_start: missing worker path or shared memory"));
        return NULL;
    }
    if (o->sanitizer != NULL && !valid_tool(o->sanitizer)) {
        set_why(why, bw_format_alloc("unknown sanitizer tool '%s' (memcheck, racecheck, initcheck, synccheck)",
                          o->sanitizer));
        return NULL;
    }

    bw_worker *w = calloc(1, sizeof *w);
    if (w == NULL) {
        set_why(why, bw_format_alloc("out of memory"));
        return NULL;
    }
    w->pid = -1;
    w->chan = -1;
    w->capture = -1;
    w->san_log = -1;
    w->stat_r = -1;
    w->reaped = 1; /* nothing to reap yet */
    w->output_cap = o->output_cap > 0 ? o->output_cap : DEFAULT_OUTPUT_CAP;
    w->grace_s = o->sanitizer != NULL ? EXIT_GRACE_SANITIZER_S : EXIT_GRACE_S;

    int sv[2] = {-1, -1}, ep[2] = {-1, -1}, sp[2] = {-1, -1}, devnull = -1;
    bw_contain_plan plan;
    bw_contain_plan_for(&plan);
    char *san = NULL, **env = NULL, *home_var = NULL, *tmp_var = NULL, **boxed = NULL;
    char *argv[12];
    const char *file = o->worker_path;

    if (o->sanitizer != NULL) {
        san = o->sanitizer_path != NULL ? bw_format_alloc("%s", o->sanitizer_path)
                                        : find_on_path("compute-sanitizer");
        if (san == NULL) {
            set_why(why, bw_format_alloc("compute-sanitizer was not found on PATH "
                              "(add the CUDA toolkit's bin directory to PATH)"));
            goto fail;
        }
        w->san_log = make_temp_file("sanitizer", &w->san_log_path);
        if (w->san_log < 0) {
            set_why(why, bw_format_alloc("cannot create the sanitizer log file: %s", strerror(errno)));
            goto fail;
        }
        /* compute-sanitizer runs as the worker user and opens it by name. */
        if (plan.drop && fchown(w->san_log, plan.uid, plan.gid) != 0) {
            set_why(why, bw_format_alloc("cannot give the sanitizer log %s to the worker user %s: %s",
                                         w->san_log_path, plan.user, strerror(errno)));
            goto fail;
        }
        int a = 0;
        argv[a++] = san;
        argv[a++] = (char *)"--tool";
        argv[a++] = (char *)o->sanitizer;
        argv[a++] = (char *)"--log-file";
        argv[a++] = w->san_log_path;
        argv[a++] = (char *)"--print-limit";
        argv[a++] = (char *)"32";
        argv[a++] = (char *)"--error-exitcode";
        argv[a++] = (char *)"0";
        argv[a++] = (char *)o->worker_path;
        argv[a] = NULL;
        file = san;
    } else {
        argv[0] = (char *)o->worker_path;
        argv[1] = NULL;
    }

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        set_why(why, bw_format_alloc("socketpair: %s", strerror(errno)));
        goto fail;
    }
    set_cloexec(sv[0]);
    set_cloexec(sv[1]);
    w->chan = sv[0];
    w->capture = make_temp_file("output", NULL);
    if (w->capture < 0) {
        set_why(why, bw_format_alloc("cannot create the output capture file: %s", strerror(errno)));
        goto fail;
    }
    int fl = fcntl(w->capture, F_GETFL);
    if (fl < 0 || fcntl(w->capture, F_SETFL, fl | O_APPEND) < 0) {
        set_why(why, bw_format_alloc("fcntl on the capture file: %s", strerror(errno)));
        goto fail;
    }
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0) {
        set_why(why, bw_format_alloc("cannot open /dev/null: %s", strerror(errno)));
        goto fail;
    }
    if (pipe(ep) != 0) {
        set_why(why, bw_format_alloc("pipe: %s", strerror(errno)));
        goto fail;
    }
    set_cloexec(ep[0]);
    set_cloexec(ep[1]);
    w->home = make_private_dir();
    w->own_home = w->home != NULL;
    if (w->home == NULL) /* still a writable HOME and TMPDIR, only not a private one */
        w->home = bw_format_alloc("/tmp");
    if (plan.drop && w->own_home && chown(w->home, plan.uid, plan.gid) != 0) {
        set_why(why, bw_format_alloc("cannot give the worker's directory %s to the worker user %s: %s",
                                     w->home, plan.user, strerror(errno)));
        goto fail;
    }
    if (plan.contain) {
        /* The namespace's init writes the worker's wait status here. */
        if (pipe(sp) != 0) {
            set_why(why, bw_format_alloc("pipe: %s", strerror(errno)));
            goto fail;
        }
        set_cloexec(sp[0]);
        set_cloexec(sp[1]);
        int sfl = fcntl(sp[0], F_GETFL);
        if (sfl >= 0)
            (void)fcntl(sp[0], F_SETFL, sfl | O_NONBLOCK);
    }
    env = w->home != NULL ? build_env(w->home, &home_var, &tmp_var) : NULL;
    if (env == NULL) {
        set_why(why, bw_format_alloc("out of memory"));
        goto fail;
    }

    if (bw_sandbox_bwrap() != NULL) {
        /* Writable inside: the private HOME/TMPDIR, and the sanitizer's log. */
        const char *writable[3] = {w->home, w->san_log_path, NULL};
        boxed = bw_sandbox_argv(argv, writable);
        if (boxed == NULL) {
            set_why(why, bw_format_alloc("out of memory"));
            goto fail;
        }
        file = boxed[0];
    }

    child_setup cs;
    memset(&cs, 0, sizeof cs);
    cs.chan = sv[1];
    cs.shm = bw_shm_fds(shm);
    cs.capture = w->capture;
    cs.devnull = devnull;
    cs.errw = ep[1];
    cs.parent = getpid();
    cs.file = file;
    cs.argv = boxed != NULL ? boxed : argv;
    cs.envp = env;
    struct rlimit cur;
    rlim_t lim = CAPTURE_LIMIT_BYTES;
    if (getrlimit(RLIMIT_FSIZE, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && cur.rlim_max < lim)
        lim = cur.rlim_max;
    cs.fsize.rlim_cur = lim;
    cs.fsize.rlim_max = lim;
    long maxfd = sysconf(_SC_OPEN_MAX);
    if (maxfd < 0 || maxfd > (1L << 20))
        maxfd = 1L << 20;
    cs.max_fd = maxfd;
    cs.plan = &plan;

    fflush(NULL); /* nothing buffered may be written twice */
    int namespaced = 0;
    pid_t pid = bw_contain_fork(&plan, ep[1], sp[1], &namespaced);
    if (pid < 0) {
        set_why(why, bw_format_alloc("fork: %s", strerror(errno)));
        goto fail;
    }
    if (pid == 0) {
        cs.namespaced = namespaced;
        start_child(&cs);
    }

    w->pid = pid;
    w->reaped = 0;
    w->alive = 1;
    w->namespaced = namespaced;
    if (namespaced) {
        w->stat_r = sp[0];
        sp[0] = -1;
    }
    close_fd(&sp[0]);
    close_fd(&sp[1]);
    (void)setpgid(pid, pid); /* also here, so a kill right away reaches the group */
    close_fd(&sv[1]);
    close_fd(&ep[1]);
    close_fd(&devnull);
    free(env);
    env = NULL;
    free(home_var);
    free(tmp_var);
    home_var = tmp_var = NULL;

    bw_child_error child_err = {0, 0};
    ssize_t r;
    do {
        r = read(ep[0], &child_err, sizeof child_err);
    } while (r < 0 && errno == EINTR);
    close_fd(&ep[0]);
    if (r == (ssize_t)sizeof child_err) {
        (void)kill_and_reap(w);
        set_why(why, child_error_text(&child_err, file, &plan));
        goto fail;
    }

    bw_request q;
    memset(&q, 0, sizeof q);
    q.magic = BW_PROTO_MAGIC;
    q.kind = BW_REQ_HELLO;
    bw_reply rep;
    char *cwhy = NULL;
    double t = o->startup_timeout_s > 0 ? o->startup_timeout_s : DEFAULT_STARTUP_S;
    bw_call_status st = do_call(w, &q, &rep, t, &cwhy);
    if (st != BW_CALL_OK || rep.status != BW_REP_OK) {
        char *out = bw_worker_take_output(w);
        char *head;
        if (st != BW_CALL_OK)
            head = bw_format_alloc("the worker %s did not start: %s", o->worker_path,
                        cwhy != NULL ? cwhy : "?");
        else if (rep.status == BW_REP_NO_DEVICE)
            head = bw_format_alloc("no usable CUDA device: %s", rep.message);
        else
            head = bw_format_alloc("the worker %s did not start: status %d: %s", o->worker_path,
                        (int)rep.status, rep.message);
        if (st == BW_CALL_OK && hello != NULL)
            *hello = rep;
        free(cwhy);
        if (out != NULL && head != NULL) {
            set_why(why, bw_format_alloc("%s\n--- its output ---\n%s", head, out));
            free(head);
        } else {
            set_why(why, head);
        }
        free(out);
        goto fail;
    }
    free(cwhy);
    if (hello != NULL)
        *hello = rep;
    /* Whatever was printed during startup is not the first case's output. */
    free(bw_worker_take_output(w));
    free(san);
    bw_sandbox_argv_free(boxed);
    return w;

fail:
    close_fd(&sv[1]);
    close_fd(&ep[0]);
    close_fd(&ep[1]);
    close_fd(&sp[0]);
    close_fd(&sp[1]);
    close_fd(&devnull);
    free(env);
    free(home_var);
    free(tmp_var);
    free(san);
    bw_sandbox_argv_free(boxed);
    bw_worker_stop(w);
    return NULL;
}
