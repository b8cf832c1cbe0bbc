/* See sandbox.h. Only builds a command line: worker_start.c runs it. */
#define _GNU_SOURCE
#include "sandbox.h"
#include "gpu_node.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A growing NULL-terminated array of malloc'd strings. */
typedef struct {
    char **v;
    size_t n, cap;
    int failed;
} argv_buf;

static void push(argv_buf *a, const char *s)
{
    if (a->failed)
        return;
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        char **v = realloc(a->v, cap * sizeof *v);
        if (v == NULL) {
            a->failed = 1;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    char *copy = strdup(s);
    if (copy == NULL) {
        a->failed = 1;
        return;
    }
    a->v[a->n++] = copy;
    a->v[a->n] = NULL;
}

static void push3(argv_buf *a, const char *opt, const char *x, const char *y)
{
    push(a, opt);
    push(a, x);
    push(a, y);
}

static void push_all(argv_buf *a, char *const *v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        push(a, v[i]);
}

/* The parts of the command line that are the same for every worker, worked
 * out once in bw_sandbox_set: what comes before the per-worker writable
 * binds (NULL: no sandbox), and the hidden paths that come after them
 * (NULL: none). */
static char **sandbox_head;
static char **sandbox_hidden;
static char **sandbox_gpus;           /* each GPU's own node, /dev/nvidiaN */
static int sandbox_n_gpus, sandbox_keep = -1;
static const char *dev_glob = "/dev/nvidia*";

void bw_sandbox_set_dev_glob(const char *pattern) { dev_glob = pattern; }

int bw_sandbox_set(const char *bwrap, const char *hide)
{
    bw_sandbox_argv_free(sandbox_head);
    bw_sandbox_argv_free(sandbox_hidden);
    bw_sandbox_argv_free(sandbox_gpus);
    sandbox_head = sandbox_hidden = sandbox_gpus = NULL;
    sandbox_n_gpus = 0;
    sandbox_keep = -1;
    if (bwrap == NULL)
        return 0;

    argv_buf head = {0}, hidden = {0}, gpus = {0};
    push(&head, bwrap);
    /* New network (loopback only), IPC, PID, UTS, user and cgroup namespaces;
     * killed when the grader's worker process (bwrap) dies. */
    push(&head, "--unshare-all");
    push(&head, "--die-with-parent");
    push3(&head, "--ro-bind", "/", "/");
    /* A fresh /dev (null, zero, random, shm, ...) plus the driver's nodes;
     * the GPUs' own come in bw_sandbox_argv (bw_sandbox_keep_gpu). */
    push(&head, "--dev");
    push(&head, "/dev");
    glob_t g;
    if (glob(dev_glob, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            int minor;
            if (bw_gpu_node_minor(g.gl_pathv[i], &minor)) {
                push(&gpus, g.gl_pathv[i]);
                sandbox_n_gpus++;
            } else {
                push3(&head, "--dev-bind", g.gl_pathv[i], g.gl_pathv[i]);
            }
        }
        globfree(&g);
    }
    push(&head, "--proc");
    push(&head, "/proc");

    /* Hidden paths go last: a later mount covers an earlier one. A path that
     * does not exist needs nothing. */
    char *list = hide != NULL ? strdup(hide) : NULL;
    if (hide != NULL && list == NULL)
        hidden.failed = 1;
    for (char *save = NULL, *p = list != NULL ? strtok_r(list, ":", &save) : NULL; p != NULL;
         p = strtok_r(NULL, ":", &save)) {
        struct stat st;
        if (stat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            push(&hidden, "--tmpfs");
            push(&hidden, p);
        } else {
            push3(&hidden, "--ro-bind", "/dev/null", p);
        }
    }
    free(list);
    if (head.failed || hidden.failed || gpus.failed) {
        bw_sandbox_argv_free(head.v);
        bw_sandbox_argv_free(hidden.v);
        bw_sandbox_argv_free(gpus.v);
        sandbox_n_gpus = 0;
        return -1;
    }
    sandbox_head = head.v;
    sandbox_hidden = hidden.v;
    sandbox_gpus = gpus.v;
    return 0;
}

int bw_sandbox_gpu_nodes(void) { return sandbox_n_gpus; }

void bw_sandbox_keep_gpu(int minor) { sandbox_keep = minor; }

int bw_sandbox_kept_gpu(void) { return sandbox_keep; }

const char *bw_sandbox_bwrap(void)
{
    return sandbox_head != NULL ? sandbox_head[0] : NULL;
}

char **bw_sandbox_argv(char *const *inner, const char *const *writable)
{
    if (sandbox_head == NULL || inner == NULL)
        return NULL;
    argv_buf a = {0};
    push_all(&a, sandbox_head);
    for (size_t i = 0; sandbox_gpus != NULL && sandbox_gpus[i] != NULL; i++) {
        int minor = -1;
        (void)bw_gpu_node_minor(sandbox_gpus[i], &minor);
        if (sandbox_keep < 0 || minor == sandbox_keep)
            push3(&a, "--dev-bind", sandbox_gpus[i], sandbox_gpus[i]);
    }
    for (size_t i = 0; writable != NULL && writable[i] != NULL; i++)
        push3(&a, "--bind", writable[i], writable[i]);
    push_all(&a, sandbox_hidden);   /* NULL when nothing is hidden */
    push(&a, "--");
    push_all(&a, inner);
    if (a.failed) {
        bw_sandbox_argv_free(a.v);
        return NULL;
    }
    return a.v;
}

void bw_sandbox_argv_free(char **argv)
{
    if (argv == NULL)
        return;
    for (size_t i = 0; argv[i] != NULL; i++)
        free(argv[i]);
    free(argv);
}
