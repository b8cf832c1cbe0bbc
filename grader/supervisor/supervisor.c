/* The supervisor: starts workers, talks to them over a socket pair with a
 * time limit, and cleans up after crashes and hangs.
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
 *
 * Invariant: the worker is only ever reaped by kill_and_reap, which first
 * sends SIGKILL to its whole process group while the (possibly zombie)
 * leader still holds the group id, so the id cannot have been reused. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "channel_io.h"
#include "containment.h"
#include "text_buf.h"
#include "format_alloc.h"
#include "mono_clock.h"
#include "random_u64.h"
#include "sandbox.h"
#include "supervisor.h"

extern char **environ;

#define CHILD_CHANNEL_FD 3
#define CHILD_ERRPIPE_FD 4         /* close-on-exec: reports a failed exec */
#define CHILD_SHM_FD 5             /* the first of BW_SHM_SEGMENTS */
#define CHILD_FIRST_CLOSED_FD (CHILD_SHM_FD + BW_SHM_SEGMENTS)
#define CHILD_FD_TEXT_(fd) #fd
#define CHILD_FD_TEXT(fd) CHILD_FD_TEXT_(fd)

#define CAPTURE_LIMIT_BYTES ((rlim_t)64 << 20)   /* per worker file, RLIMIT_FSIZE */
#define DEFAULT_OUTPUT_CAP ((size_t)16 << 10)
#define DEFAULT_STARTUP_S 60.0
#define SANITIZER_LOG_MIN_CAP ((size_t)64 << 10)
#define EXIT_GRACE_S 2.0            /* a worker told to exit gets this long */
#define EXIT_GRACE_SANITIZER_S 15.0 /* compute-sanitizer writes its summary first */
#define POLL_SLICE_MS 20            /* how often a waiting call checks the process */

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

/* ------------------------------------------------------------------ helpers */

static void set_why(char **why, char *text)
{
    if (why != NULL) {
        free(*why);
        *why = text;
    } else {
        free(text);
    }
}

static void sleep_s(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void set_cloexec(int fd)
{
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0)
        (void)fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        (void)close(*fd);
        *fd = -1;
    }
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

#define REMOVE_MAX_DEPTH 256

/* Removes what the directory dfd holds (and closes dfd). Every step is
 * relative to an open directory and no link is followed (O_NOFOLLOW;
 * unlinkat removes a link itself): the tree may belong to the worker user,
 * whose other processes (another lane's workers) could swap a directory for
 * a link while bwgrade, perhaps root, removes it. */
static void remove_in(int dfd, int depth)
{
    DIR *d = fdopendir(dfd);
    if (d == NULL) {
        (void)close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0 || (errno != EISDIR && errno != EPERM))
            continue;
        if (depth < REMOVE_MAX_DEPTH) {
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                remove_in(sub, depth + 1);
        }
        (void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    }
    (void)closedir(d);
}

/* Removes dir and everything in it, whatever can be removed. Runs only once
 * the worker's processes are dead. */
static void remove_tree(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        remove_in(fd, 0);
    (void)rmdir(dir);
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

static const char *signal_abbrev(int sig)
{
    switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return NULL;
    }
}

static const char *signal_hint(int sig)
{
    switch (sig) {
    case SIGSEGV:
    case SIGBUS:
        return " -- a bad host memory access (a device pointer used on the host?)";
    case SIGABRT:
        return " -- abort() or a failed assert()";
    case SIGFPE:
        return " -- integer division by zero on the host?";
    case SIGKILL:
        return " -- killed from outside (out of host memory?)";
    default:
        return "";
    }
}

/* How the worker ended, from its wait status, as a malloc'd sentence part. */
static char *describe_status(int status)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *ab = signal_abbrev(sig);
        const char *desc = strsignal(sig);
        if (ab != NULL)
            return bw_format_alloc("the worker was killed by signal %s (%s)%s", ab,
                        desc != NULL ? desc : "?", signal_hint(sig));
        return bw_format_alloc("the worker was killed by signal %d (%s)", sig, desc != NULL ? desc : "?");
    }
    if (WIFEXITED(status))
        return bw_format_alloc("the worker exited with status %d before replying "
                    "(the student code called exit()?)", WEXITSTATUS(status));
    return bw_format_alloc("the worker ended (wait status 0x%x)", (unsigned)status);
}

/* ------------------------------------------------------- process lifetime */

/* Has the worker exited? Leaves it a zombie (WNOWAIT), so its pid and
 * process group id stay reserved until kill_and_reap. */
static int child_exited(bw_worker *w)
{
    if (w->reaped)
        return 1;
    siginfo_t info;
    memset(&info, 0, sizeof info);
    for (;;) {
        int rc = waitid(P_PID, (id_t)w->pid, &info, WEXITED | WNOHANG | WNOWAIT);
        if (rc == 0)
            return info.si_pid == w->pid;
        if (errno == EINTR)
            continue;
        return 1; /* ECHILD: not ours to wait for any more; treat as gone */
    }
}

/* Waits up to grace_s for the worker to exit by itself. */
static int wait_exit(bw_worker *w, double grace_s)
{
    double end = bw_mono_s() + grace_s;
    for (;;) {
        if (child_exited(w))
            return 1;
        if (bw_mono_s() >= end)
            return 0;
        sleep_s(0.002);
    }
}

/* SIGKILL to the whole process group (and the leader, in case it left the
 * group), then reap the leader. Idempotent. Returns the wait status. */
static int kill_and_reap(bw_worker *w)
{
    w->alive = 0;
    close_fd(&w->chan);
    if (w->reaped)
        return w->status;
    (void)kill(-w->pid, SIGKILL);
    (void)kill(w->pid, SIGKILL);
    int status = 0;
    for (;;) {
        pid_t r = waitpid(w->pid, &status, 0);
        if (r == w->pid)
            break;
        if (r < 0 && errno == EINTR)
            continue;
        status = 0; /* ECHILD: someone else reaped it (SIGCHLD ignored?) */
        break;
    }
    /* Members of the group that the leader forked may still be dying; the
     * group id is free for reuse now, so it is not signalled again. */
    if (w->stat_r >= 0) {
        /* The namespace's init reported how the worker ended; nothing when
         * it was killed first (then its own status, SIGKILL, stands). */
        int ws;
        ssize_t r;
        do {
            r = read(w->stat_r, &ws, sizeof ws);
        } while (r < 0 && errno == EINTR);
        if (r == (ssize_t)sizeof ws)
            status = ws;
        close_fd(&w->stat_r);
    }
    w->reaped = 1;
    w->status = status;
    bw_contain_reaped(w->pid, w->namespaced);
    return status;
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

/* The worker's environment is an allow-list, not environ minus a few names:
 * a grading machine's environment can hold secrets (a CI deploy token, cloud
 * keys), and student code that prints environ would carry them into its
 * captured output and so into the grade record. What passes is what the C
 * library, the CUDA runtime and driver, and NVIDIA's tools need. The tools
 * matter: compute-sanitizer (run.py test --sanitize) and ncu
 * (--target-processes all: run.py profile and crosscheck) reach the worker
 * only through variables that bwgrade inherits from them; stripped, the
 * worker runs unchecked or unprofiled (ncu 2025.3 without NV_*: it crashed).
 * The names below are those seen under ncu and compute-sanitizer 2025.3. */
static const char *const env_keep_names[] = {
    "PATH",            /* compute-sanitizer and the tools' helpers are found on it */
    "LD_LIBRARY_PATH", /* libcuda, and the injection libraries: ncu and
                        * compute-sanitizer put their own folder first in it */
    "LD_PRELOAD",      /* ncu follows child processes by preloading its
                        * libTreeLauncher* libraries; it names no secret */
    "LANG", "LANGUAGE", "TZ", /* locale and time zone of the student's printf */
};

static const char *const env_keep_prefixes[] = {
    "LC_",               /* the locale's categories (LC_ALL, LC_NUMERIC...) */
    "CUDA_",             /* the runtime and driver: CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER,
                          * CUDA_CACHE_PATH, CUDA_MODULE_LOADING...; CUDA_INJECTION64_PATH
                          * loads a profiler's or checker's collector into the process */
    "NV_",               /* the tools' connection to their target: NV_TPS_LAUNCH_TOKEN,
                          * NV_NSIGHT_INJECTION_*, NV_SANITIZER_INJECTION_*,
                          * NV_COMPUTE_PROFILER_* */
    "NVIDIA_",           /* NVIDIA_PROCESS_INJECTION_* (the tools), NVIDIA_VISIBLE_DEVICES */
    "NVIDIA-",           /* NVIDIA-PROCESS-TRACKING-*: how the tools follow child processes */
    "NSIGHT_",           /* Nsight tools' settings */
    "NVTX_",             /* NVTX_INJECTION64_PATH: the tools' hook for NVTX ranges */
    "COMPUTE_SANITIZER", /* compute-sanitizer's own settings */
};

/* Under those prefixes a name can still be a credential (NVIDIA_API_KEY is a
 * common one); none of the tools' variables has these words in its name. */
static const char *const env_secret_words[] = {
    "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "ACCESS_KEY", "PRIVATE_KEY",
};

static int env_kept(const char *entry)
{
    const char *eq = strchr(entry, '=');
    if (eq == NULL)
        return 0;
    size_t len = (size_t)(eq - entry);
    for (size_t i = 0; i < sizeof env_keep_names / sizeof env_keep_names[0]; i++)
        if (strlen(env_keep_names[i]) == len && memcmp(entry, env_keep_names[i], len) == 0)
            return 1;
    for (size_t i = 0; i < sizeof env_secret_words / sizeof env_secret_words[0]; i++)
        if (bw_text_contains(entry, len, env_secret_words[i]))
            return 0;
    for (size_t i = 0; i < sizeof env_keep_prefixes / sizeof env_keep_prefixes[0]; i++) {
        size_t pl = strlen(env_keep_prefixes[i]);
        if (len >= pl && memcmp(entry, env_keep_prefixes[i], pl) == 0)
            return 1;
    }
    return 0;
}

/* The allow-listed part of environ, then HOME and TMPDIR (both the private
 * directory, as the malloc'd *home_var and *tmp_var: the caller frees them,
 * also when NULL is returned), then the channel variables. The other strings
 * are environ's. BWLAB_SEED and BWLAB_SECRET_SEED are not on the list. */
static char **build_env(const char *home, char **home_var, char **tmp_var)
{
    static char chan_var[] = BW_ENV_CHANNEL_FD "=3";
    static char shm_var[] = BW_ENV_SHM_FD "=" CHILD_FD_TEXT(CHILD_SHM_FD);
    *home_var = bw_format_alloc("HOME=%s", home);
    *tmp_var = bw_format_alloc("TMPDIR=%s", home);
    if (*home_var == NULL || *tmp_var == NULL)
        return NULL;
    size_t n = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++)
        n++;
    char **env = calloc(n + 5, sizeof *env);
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++)
        if (env_kept(*e))
            env[k++] = *e;
    env[k++] = *home_var;
    env[k++] = *tmp_var;
    env[k++] = chan_var;
    env[k++] = shm_var;
    env[k] = NULL;
    return env;
}

static int valid_tool(const char *t)
{
    return strcmp(t, "memcheck") == 0 || strcmp(t, "racecheck") == 0 ||
           strcmp(t, "initcheck") == 0 || strcmp(t, "synccheck") == 0;
}

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

static bw_call_status send_request(bw_worker *w, bw_request *q, char **why)
{
    q->magic = BW_PROTO_MAGIC;
    if (q->nonce == 0)
        q->nonce = bw_random_u64(); /* a reply must echo it: see protocol.h */
    if (w == NULL || !w->alive || w->chan < 0) {
        set_why(why, bw_format_alloc("the worker is not running (start a new one)"));
        return BW_CALL_CRASHED;
    }
    if (bw_send_all(w->chan, q, sizeof *q) != 0)
        return peer_gone(w, 0, why);
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

static bw_call_status do_call(bw_worker *w, const bw_request *req, bw_reply *rep,
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

static char *with_cut_note(char *text, uint64_t total)
{
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
    if (text == NULL)
        return NULL;
    if (text[0] == '\0' && total == 0) {
        free(text);
        return NULL;
    }
    return with_cut_note(text, total);
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
    if (text == NULL)
        return NULL;
    if (text[0] == '\0' && total == 0) {
        free(text);
        return NULL;
    }
    return with_cut_note(text, total);
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

static int send_quit(bw_worker *w)
{
    bw_request q;
    memset(&q, 0, sizeof q);
    q.magic = BW_PROTO_MAGIC;
    q.kind = BW_REQ_QUIT;
    return send(w->chan, &q, sizeof q, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof q;
}

void bw_worker_quit_soon(bw_worker *w)
{
    if (w != NULL && !w->reaped && w->alive && w->chan >= 0 && !w->quit_sent)
        w->quit_sent = send_quit(w);
}

void bw_worker_stop(bw_worker *w)
{
    if (w == NULL)
        return;
    if (!w->reaped) {
        if (w->alive && w->chan >= 0 && (w->quit_sent || send_quit(w)))
            (void)wait_exit(w, w->grace_s);
        (void)kill_and_reap(w);
    }
    close_fd(&w->chan);
    close_fd(&w->capture);
    close_fd(&w->san_log);
    if (w->san_log_path != NULL) {
        (void)unlink(w->san_log_path);
        free(w->san_log_path);
    }
    if (w->home != NULL) {
        if (w->own_home)
            remove_tree(w->home);
        free(w->home);
    }
    free(w);
}
