/* See containment.h. The namespace's init and the worker-to-be are made
 * with the raw clone system call (a PID namespace, and a user namespace, can
 * only be asked for that way from a process with threads), so the code that
 * runs in them afterwards makes system calls only: glibc's bookkeeping there
 * still describes the parent (its thread list, its thread id). */
#define _GNU_SOURCE
#include "containment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format_alloc.h"
#include "sandbox.h"

#define OVERFLOW_ID 65534    /* the kernel's "nobody" where no user is named */
#define SWEEP_ROUNDS 10000   /* a fork bomb still ends: each round kills all it finds */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int enabled;
static int have_user;        /* root: workers run as user_uid/user_gid */
static uid_t user_uid;
static gid_t user_gid;
static char *user_name;
static int started, started_ns, subreaper_on;
static pid_t *live;          /* the live workers' pids (our children) */
static size_t n_live, cap_live;

/* ------------------------------------------------------------ the policy */

static int all_digits(const char *s, size_t len)
{
    if (len == 0 || len > 10)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* getpwnam_r / getpwuid_r with a buffer that grows; 0 if found. */
static int lookup_user(const char *name, uid_t uid, uid_t *uid_out, gid_t *gid_out, char **name_out)
{
    size_t len = 1024;
    for (;;) {
        char *buf = malloc(len);
        if (buf == NULL)
            return -1;
        struct passwd pw, *res = NULL;
        int rc = name != NULL ? getpwnam_r(name, &pw, buf, len, &res) : getpwuid_r(uid, &pw, buf, len, &res);
        if (rc == ERANGE && len < ((size_t)1 << 20)) {
            free(buf);
            len *= 2;
            continue;
        }
        if (rc != 0 || res == NULL) {
            free(buf);
            return -1;
        }
        *uid_out = pw.pw_uid;
        *gid_out = pw.pw_gid;
        *name_out = bw_format_alloc("%s", pw.pw_name);
        free(buf);
        return *name_out != NULL ? 0 : -1;
    }
}

/* The worker user named by spec (NULL or "": nobody). 0, or -1 with *why. */
static int resolve_user(const char *spec, char **why)
{
    free(user_name);
    user_name = NULL;
    if (spec == NULL || spec[0] == '\0') {
        if (lookup_user("nobody", 0, &user_uid, &user_gid, &user_name) != 0) {
            user_uid = OVERFLOW_ID;
            user_gid = OVERFLOW_ID;
            user_name = bw_format_alloc("%d:%d", OVERFLOW_ID, OVERFLOW_ID);
        }
    } else {
        const char *colon = strchr(spec, ':');
        size_t ulen = colon != NULL ? (size_t)(colon - spec) : strlen(spec);
        if (all_digits(spec, ulen) && (colon == NULL || all_digits(colon + 1, strlen(colon + 1)))) {
            uid_t u = (uid_t)strtoul(spec, NULL, 10);
            gid_t g = (gid_t)u;
            char *known = NULL;
            uid_t ku;
            if (lookup_user(NULL, u, &ku, &g, &known) != 0)
                g = (gid_t)u;
            if (colon != NULL)
                g = (gid_t)strtoul(colon + 1, NULL, 10);
            user_uid = u;
            user_gid = g;
            user_name = known != NULL && colon == NULL ? known
                                                       : bw_format_alloc("%lu:%lu", (unsigned long)u, (unsigned long)g);
            if (user_name != known)
                free(known);
        } else if (lookup_user(spec, 0, &user_uid, &user_gid, &user_name) != 0) {
            *why = bw_format_alloc("BWLAB_WORKER_USER=%s: no such user (give a user name, or UID:GID)", spec);
            return -1;
        }
    }
    if (user_name == NULL) {
        *why = bw_format_alloc("out of memory");
        return -1;
    }
    if (user_uid == 0 || user_gid == 0) {
        *why = bw_format_alloc("BWLAB_WORKER_USER=%s is root (uid %lu, gid %lu): the workers run "
                               "student code and must not run as root; name an unprivileged user",
                               spec != NULL ? spec : "", (unsigned long)user_uid, (unsigned long)user_gid);
        return -1;
    }
    return 0;
}

int bw_contain_set(int on, char **why)
{
    *why = NULL;
    pthread_mutex_lock(&lock);
    enabled = on;
    have_user = 0;
    int rc = 0;
    if (on && geteuid() == 0) {
        rc = resolve_user(getenv("BWLAB_WORKER_USER"), why);
        have_user = rc == 0;
        if (rc != 0)
            enabled = 0;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int bw_contain_enabled(void)
{
    return enabled;
}

bw_containment bw_contain_report(void)
{
    bw_containment c;
    pthread_mutex_lock(&lock);
    if (bw_sandbox_bwrap() != NULL) {
        /* bwrap's own: a PID namespace, the grading user mapped inside. */
        c.user = "same";
        c.pid_namespace = 1;
        c.subreaper = 0;
        c.sandbox = "bwrap";
        c.gpu_minor = bw_sandbox_kept_gpu();
    } else {
        c.user = enabled && have_user ? user_name : "same";
        c.pid_namespace = enabled && started > 0 && started_ns == started;
        c.subreaper = subreaper_on;
        c.sandbox = "none";
        c.gpu_minor = -1;
    }
    pthread_mutex_unlock(&lock);
    return c;
}

static int mount_own_proc(void);

/* Whether a PID namespace with its own /proc can be made here (asked once,
 * by a child that tries; a container may allow the one and not the other).
 * Called with lock held. */
static int namespaces_work(int flags)
{
    static int known = -1;
    if (known >= 0)
        return known;
    known = 0;
    long r = syscall(SYS_clone, (unsigned long)(flags | SIGCHLD), 0UL, 0UL, 0UL, 0UL);
    if (r == 0) {
        if (flags & CLONE_NEWUSER) {
            int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
            if (fd >= 0) {
                (void)!write(fd, "deny", 4);
                close(fd);
            }
        }
        _exit(mount_own_proc() == 0 ? 0 : 1);
    }
    if (r > 0) {
        int st = 0;
        while (waitpid((pid_t)r, &st, 0) < 0 && errno == EINTR) {
        }
        known = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    return known;
}

/* In a new mount namespace: mounts private, and a /proc of this PID
 * namespace's own. The CUDA driver reads /proc about its own process: under
 * the outer /proc its pid names another process, and it fails with
 * cudaErrorOperatingSystem (seen on the H100 machine). The worker's /proc
 * then also shows no process outside its namespace. 0, or -1 (errno). */
static int mount_own_proc(void)
{
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return -1;
    return mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

void bw_contain_plan_for(bw_contain_plan *p)
{
    memset(p, 0, sizeof *p);
    long maxfd = sysconf(_SC_OPEN_MAX);
    p->max_fd = maxfd < 0 || maxfd > (1L << 20) ? 1L << 20 : maxfd;
    pthread_mutex_lock(&lock);
    if (enabled && bw_sandbox_bwrap() == NULL) {
        p->contain = 1;
        if (have_user) {
            p->drop = 1;
            p->uid = user_uid;
            p->gid = user_gid;
            p->user = user_name;
        }
        const char *off = getenv("BWLAB_CONTAIN_NO_PIDNS");
        int flags = CLONE_NEWPID | CLONE_NEWNS | (geteuid() == 0 ? 0 : CLONE_NEWUSER);
        if ((off == NULL || strcmp(off, "1") != 0) && namespaces_work(flags))
            p->ns_flags = flags;
        p->outer_uid = geteuid();
        p->outer_gid = getegid();
    }
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------ the children */

static void write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t r = write(fd, p, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        p += r;
        len -= (size_t)r;
    }
}

static void report_child_error(int fd, int stage, int err)
{
    bw_child_error e = {stage, err};
    write_all(fd, &e, sizeof e);
}

/* "ID ID 1" into a user namespace's map file; async-signal-safe. */
static void write_map(const char *path, unsigned long id)
{
    char digits[24], line[64];
    int n = 0, k = 0;
    do {
        digits[n++] = (char)('0' + id % 10);
        id /= 10;
    } while (id > 0);
    for (int rep = 0; rep < 2; rep++) {
        for (int i = n - 1; i >= 0; i--)
            line[k++] = digits[i];
        line[k++] = ' ';
    }
    line[k++] = '1';
    line[k++] = '\n';
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        write_all(fd, line, (size_t)k);
        close(fd);
    }
}

void bw_signals_to_default(void)
{
    /* Dispositions first: a signal pending on the mask must not reach a
     * handler of bwgrade's once unblocked. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            (void)sigaction(sig, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
}

void bw_close_from(int lo, long max_fd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lo, ~0u, 0u) == 0)
        return;
#endif
    for (long fd = lo; fd < max_fd; fd++)
        (void)close((int)fd);
}

/* pid 1 of the new namespace: starts the worker-to-be (returns in it), then
 * reaps whatever is reparented to it until the worker ends, writes the
 * worker's wait status to statfd and exits, which ends every process left
 * in the namespace. */
static void run_init(const bw_contain_plan *p, int errfd, int statfd)
{
    /* Signals from inside the namespace reach pid 1 only where it has a
     * handler: with every disposition at its default, the student's code
     * cannot signal it at all. */
    bw_signals_to_default();
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* bwgrade died before prctl took hold: it held the read end of statfd. */
    struct pollfd pf = {.fd = statfd, .events = POLLOUT, .revents = 0};
    if (poll(&pf, 1, 0) == 1 && (pf.revents & POLLERR))
        _exit(127);
    (void)setpgid(0, 0);
    if (p->ns_flags & CLONE_NEWUSER) {
        /* The grading user is itself inside too (else it reads as 65534). */
        int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            write_all(fd, "deny", 4);
            close(fd);
        }
        write_map("/proc/self/uid_map", (unsigned long)p->outer_uid);
        write_map("/proc/self/gid_map", (unsigned long)p->outer_gid);
    }
    if ((p->ns_flags & CLONE_NEWNS) && mount_own_proc() != 0) {
        report_child_error(errfd, BW_CHILD_NAMESPACE, errno);
        _exit(127);
    }
    long w = syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL);
    if (w == 0)
        return;
    if (w < 0) {
        report_child_error(errfd, BW_CHILD_NAMESPACE, errno);
        _exit(127);
    }
    /* Only the status pipe stays: the channel, the error pipe and every
     * descriptor bwgrade holds would otherwise stay open here. */
    if (dup2(statfd, 0) != 0)
        _exit(127);
    bw_close_from(1, p->max_fd);
    for (;;) {
        int st = 0;
        pid_t r = waitpid(-1, &st, 0);
        if (r == (pid_t)w) {
            write_all(0, &st, sizeof st);
            _exit(0);
        }
        if (r < 0 && errno != EINTR)
            _exit(127);
    }
}

static void add_live(pid_t pid)
{
    if (n_live == cap_live) {
        size_t cap = cap_live ? cap_live * 2 : 8;
        pid_t *v = realloc(live, cap * sizeof *v);
        if (v == NULL)
            return; /* then the sweep could take it for an orphan: see is_live */
        live = v;
        cap_live = cap;
    }
    live[n_live++] = pid;
}

static int is_live(pid_t pid)
{
    for (size_t i = 0; i < n_live; i++)
        if (live[i] == pid)
            return 1;
    return 0;
}

pid_t bw_contain_fork(const bw_contain_plan *p, int errfd, int statfd, int *namespaced)
{
    *namespaced = 0;
    pthread_mutex_lock(&lock); /* no sweep between the fork and add_live */
    pid_t pid = -1;
    if (p->contain && p->ns_flags != 0) {
        long r = syscall(SYS_clone, (unsigned long)(p->ns_flags | SIGCHLD), 0UL, 0UL, 0UL, 0UL);
        if (r == 0) {
            run_init(p, errfd, statfd);
            *namespaced = 1;   /* the worker-to-be, pid 2 of the namespace */
            return 0;
        }
        if (r > 0) {
            pid = (pid_t)r;
            *namespaced = 1;
        }
    }
    if (pid < 0) {
        if (p->contain && !subreaper_on && prctl(PR_SET_CHILD_SUBREAPER, 1) == 0)
            subreaper_on = 1;
        pid = fork();
        if (pid == 0)
            return 0;
    }
    if (pid > 0) {
        add_live(pid);
        if (p->contain) {
            started++;
            started_ns += *namespaced;
        }
    }
    int err = errno;
    pthread_mutex_unlock(&lock);
    errno = err;
    return pid;
}

int bw_contain_drop(const bw_contain_plan *p)
{
    if (!p->drop)
        return 0;
    /* Raw system calls: glibc's wrappers would try to change every thread
     * of the parent's (see the top of this file). */
    if (syscall(SYS_setgroups, 0, NULL) != 0 ||
        syscall(SYS_setresgid, p->gid, p->gid, p->gid) != 0 ||
        syscall(SYS_setresuid, p->uid, p->uid, p->uid) != 0)
        return errno != 0 ? errno : EPERM;
    uid_t r, e, s;
    gid_t rg, eg, sg;
    if (syscall(SYS_getresuid, &r, &e, &s) != 0 || r != p->uid || e != p->uid || s != p->uid ||
        syscall(SYS_getresgid, &rg, &eg, &sg) != 0 || rg != p->gid || eg != p->gid || sg != p->gid ||
        syscall(SYS_getgroups, 0, NULL) != 0)
        return EPERM;
    if (syscall(SYS_setresuid, 0, 0, 0) == 0) /* root could still be had back */
        return EPERM;
    return 0;
}

/* ------------------------------------------------------------ the sweep */

/* The parent pid in /proc/PID/stat (after the last ')'), or -1. */
static pid_t ppid_of(const char *pid_text)
{
    char path[64], buf[1024];
    if (snprintf(path, sizeof path, "/proc/%s/stat", pid_text) >= (int)sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');
    char state;
    int ppid;
    if (rp == NULL || sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
        return -1;
    return (pid_t)ppid;
}

/* Kills and reaps every child of ours that is not a live worker, until a
 * look at /proc finds none (killing one reparents its children to us). */
static void sweep(void)
{
    pid_t me = getpid();
    pid_t *found = NULL;
    size_t cap = 0;
    for (int round = 0; round < SWEEP_ROUNDS; round++) {
        size_t n = 0;
        DIR *d = opendir("/proc");
        if (d == NULL)
            break;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!all_digits(e->d_name, strlen(e->d_name)))
                continue;
            pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
            if (pid == me || ppid_of(e->d_name) != me || is_live(pid))
                continue;
            (void)kill(pid, SIGKILL);
            if (n == cap) {
                size_t c = cap ? cap * 2 : 16;
                pid_t *v = realloc(found, c * sizeof *v);
                if (v == NULL)
                    continue; /* reaped next round */
                found = v;
                cap = c;
            }
            found[n++] = pid;
        }
        closedir(d);
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++)
            while (waitpid(found[i], NULL, 0) < 0 && errno == EINTR) {
            }
    }
    free(found);
}

void bw_contain_reaped(pid_t pid, int namespaced)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_live; i++)
        if (live[i] == pid) {
            live[i] = live[--n_live];
            break;
        }
    if (!namespaced && subreaper_on)
        sweep();
    pthread_mutex_unlock(&lock);
}
