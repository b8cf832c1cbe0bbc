/* See sandbox.h. Only builds a command line: supervisor.c runs it. */
#define _GNU_SOURCE
#include "sandbox.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *sandbox_bwrap;   /* NULL: no sandbox */
static char *sandbox_hide;    /* ':'-separated, or NULL */

int bw_sandbox_set(const char *bwrap, const char *hide)
{
    char *b = bwrap != NULL ? strdup(bwrap) : NULL;
    char *h = hide != NULL && hide[0] != '\0' ? strdup(hide) : NULL;
    if ((bwrap != NULL && b == NULL) || (hide != NULL && hide[0] != '\0' && h == NULL)) {
        free(b);
        free(h);
        return -1;
    }
    free(sandbox_bwrap);
    free(sandbox_hide);
    sandbox_bwrap = b;
    sandbox_hide = h;
    return 0;
}

const char *bw_sandbox_bwrap(void)
{
    return sandbox_bwrap;
}

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

char **bw_sandbox_argv(char *const *inner, const char *const *writable)
{
    if (sandbox_bwrap == NULL || inner == NULL)
        return NULL;
    argv_buf a = {0};
    push(&a, sandbox_bwrap);
    /* New network (loopback only), IPC, PID, UTS, user and cgroup namespaces;
     * killed when the grader's worker process (bwrap) dies. */
    push(&a, "--unshare-all");
    push(&a, "--die-with-parent");
    push3(&a, "--ro-bind", "/", "/");
    /* A fresh /dev (null, zero, random, shm, ...) plus the GPU's nodes. */
    push(&a, "--dev");
    push(&a, "/dev");
    glob_t g;
    if (glob("/dev/nvidia*", 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            push3(&a, "--dev-bind", g.gl_pathv[i], g.gl_pathv[i]);
        globfree(&g);
    }
    push(&a, "--proc");
    push(&a, "/proc");
    for (size_t i = 0; writable != NULL && writable[i] != NULL; i++)
        push3(&a, "--bind", writable[i], writable[i]);
    /* Hidden last: a later mount covers an earlier one. A path that does not
     * exist needs nothing. */
    if (sandbox_hide != NULL) {
        char *list = strdup(sandbox_hide);
        if (list == NULL)
            a.failed = 1;
        for (char *save = NULL, *p = list != NULL ? strtok_r(list, ":", &save) : NULL; p != NULL;
             p = strtok_r(NULL, ":", &save)) {
            struct stat st;
            if (stat(p, &st) != 0)
                continue;
            if (S_ISDIR(st.st_mode)) {
                push(&a, "--tmpfs");
                push(&a, p);
            } else {
                push3(&a, "--ro-bind", "/dev/null", p);
            }
        }
        free(list);
    }
    push(&a, "--");
    for (size_t i = 0; inner[i] != NULL; i++)
        push(&a, inner[i]);
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
