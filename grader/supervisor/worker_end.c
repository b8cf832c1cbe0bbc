/* Ending a worker: noticing that it exited, killing and reaping its whole
 * process group, saying how it ended, asking it to quit, and removing what
 * it was given (its private directory, its files).
 *
 * Invariant: the worker is only ever reaped by kill_and_reap, which first
 * sends SIGKILL to its whole process group while the (possibly zombie)
 * leader still holds the group id, so the id cannot have been reused. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "containment.h"
#include "format_alloc.h"
#include "mono_clock.h"
#include "worker_process.h"

static void sleep_s(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
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
char *describe_status(int status)
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
int child_exited(bw_worker *w)
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
int wait_exit(bw_worker *w, double grace_s)
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
int kill_and_reap(bw_worker *w)
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
