/* The supervisor tests' shared helpers (supervisor_fixtures.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_support.h"
#include "supervisor_fixtures.h"

#ifndef BW_FAKE_WORKER
#error "BW_FAKE_WORKER (the fake worker's path) must be defined by the build"
#endif

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

bw_worker_opts fake_opts(size_t cap, double startup)
{
    bw_worker_opts o;
    memset(&o, 0, sizeof o);
    o.worker_path = BW_FAKE_WORKER;
    o.output_cap = cap;
    o.startup_timeout_s = startup;
    return o;
}

bw_worker *start_fake(bw_shm *shm, size_t cap)
{
    bw_worker_opts o = fake_opts(cap, 5.0);
    bw_reply hello;
    char *why = NULL;
    /* A descriptor without close-on-exec, as a grader might hold: the
     * worker must not inherit it (the fake reports leaks in its HELLO). */
    int stray = open("/dev/null", O_RDONLY);
    ck_assert_int_ge(stray, 0);
    bw_worker *w = bw_worker_start(&o, shm, &hello, &why);
    close(stray);
    ck_assert_msg(w != NULL, "start failed: %s", why != NULL ? why : "(no reason)");
    ck_assert_ptr_null(why);
    /* The fake checks descriptors, process group and limits itself. */
    ck_assert_str_eq(hello.message, "ok");
    ck_assert_str_eq(hello.device_name, "fake device");
    ck_assert_int_eq(hello.status, BW_REP_OK);
    ck_assert(bw_worker_alive(w));
    return w;
}

bw_shm *make_shm(size_t bytes)
{
    bw_shm *s = bw_shm_create();
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(bw_shm_reserve(s, bytes));
    return s;
}

/* A RUN without a chunk plan over n_arrays images of image_bytes each,
 * back to back from the start of shared memory: bf16 data filling each
 * image whole (the fake worker adds 1 to every byte of every image). */
bw_request run_req(int n, int n_arrays, uint64_t image_bytes, const bw_shm *shm)
{
    bw_request q;
    memset(&q, 0, sizeof q);
    ck_assert_int_le(n_arrays, BW_MAX_ARRAYS);
    q.magic = BW_PROTO_MAGIC;
    q.kind = BW_REQ_RUN;
    q.n = n;
    q.rows = 1;
    q.cols = n > 0 ? n : 0;   /* a negative n picks the fake's behaviour */
    q.n_arrays = n_arrays;
    q.by_value = -1;
    for (int k = 0; k < n_arrays; k++) {
        bw_array_geom *g = &q.arrays[k];
        g->elem_bytes = 2;
        g->flags = BW_ARRAY_INPUT;
        g->count = (int64_t)(image_bytes / 2);
        g->front_bytes = 0;
        g->data_bytes = image_bytes;
        g->back_bytes = 0;
        g->image_bytes = image_bytes;
        g->place = (uint64_t)k * image_bytes;
        g->outer = 1;
        g->inner = g->count;
    }
    q.shm_bytes = bw_shm_size(shm);
    return q;
}

/* One RUN; returns the call status, *why freed unless wanted. */
bw_call_status call_n(bw_worker *w, bw_shm *shm, int n, double timeout, bw_reply *rep,
                      char **why_out)
{
    bw_request q = run_req(n, 1, IMAGE_BYTES, shm);
    bw_reply local;
    char *why = NULL;
    bw_call_status st = bw_worker_call(w, &q, rep != NULL ? rep : &local, timeout, &why);
    if (why_out != NULL)
        *why_out = why;
    else
        free(why);
    return st;
}

void assert_no_children(void)
{
    int status;
    errno = 0;
    pid_t r = waitpid(-1, &status, WNOHANG);
    ck_assert_msg(r == -1 && errno == ECHILD, "a child process was left behind (waitpid: %d)",
                  (int)r);
}

/* Gone: no such process, or a zombie of someone else (init may be slow to reap). */
int process_gone(pid_t pid)
{
    for (int i = 0; i < 200; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            return 1;
        char buf[512];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *rp = strrchr(buf, ')');
        if (rp != NULL && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
            return 1;
        nap_ms(10);
    }
    return 0;
}

int contains(const char *hay, const char *needle)
{
    return hay != NULL && strstr(hay, needle) != NULL;
}

