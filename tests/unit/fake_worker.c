/* A stand-in for bw_worker_* in the supervisor test: speaks the protocol
 * without CUDA. What it does is chosen by the request's n (RUN) or by the
 * environment variable FAKE_HELLO (the HELLO step):
 *
 *   n >= 0  a RUN without a chunk plan: add 1 to every byte of the n_arrays
 *           images in shared memory, reply OK; with a plan (chunks > 0): the
 *           dialogue of protocol.h, adding 1 to every byte of the images on
 *           their way through (its "kernel"), except as scalar 0 says:
 *             scalar 0 -1  send chunk 1 back where chunk 0 is due
 *             scalar 0 -2  end the run with OK before sending any chunk back
 *             scalar 0 -3  hang in the "call"
 *             scalar 0 -4  a CUDA error reply in place of the first chunk's
 *                       acknowledgement, then exit
 *   -1      write a line to stderr, then die of SIGSEGV
 *   -2      exit(3)
 *   -3      hang
 *   -4      write 10,000,000 'x' to stdout, reply OK
 *   -5      write a reply-sized block of garbage to the channel, then hang
 *   -6      fork a child that lingers; reply OK with its pid in rep.samples
 *   -7      fork a lingering child (pid stored in the first 4 bytes of shared
 *           memory), then die of SIGSEGV: the child keeps the channel open
 *   -8      reply BW_REP_CUDA_ERROR, then exit(0)
 *   -9      close the channel, then hang
 *   -10     write "to stdout" and "to stderr", reply OK
 *   -11     send the reply in two pieces 50 ms apart
 *   -12     reply OK, then close the channel and hang
 *   -14     wait 300 ms, then reply OK
 *   -15     reply OK; from now on ignore QUIT and SIGTERM
 *   -16     reply OK with its own pid in rep.samples
 *   -17     write a well-formed OK reply with a guessed token (what student
 *           code that knows the protocol could forge), then hang
 *   -18     print its environment to stdout, one NAME=value a line, and
 *           leave a file in $HOME/.cache (the worker's directory must go
 *           whole); reply OK
 *   -19     reply OK with "uid=U euid=U gid=G egid=G groups=N pid=P ppid=P
 *           home_writable=0|1" in rep.message
 *   -20     what an escape from the process group does: fork, setsid in the
 *           child, fork again; the grandchild writes its pid as /proc/self
 *           names it (the pid outside any namespace) to the first 4 bytes
 *           of shared memory and hangs; the child exits; reply OK
 *   -21     append a line to the file named (NUL-terminated) at the start of
 *           shared memory; rep.message "wrote" or "refused: <reason>"
 *   -22     kill(P, SIGKILL) for the pid P in the first 4 bytes of shared
 *           memory (the grader, as a student would find it in /proc), then
 *           kill(getppid(), SIGKILL); rep.message "P:<errno> parent:<errno>"
 *           (0: the signal was sent)
 *
 *   BENCH with tick set (bench_witness.h): max_samples samples, each a
 *           "call" of q.n microseconds (a sleep) between the grader's go and
 *           the DONE, after a "preparation" of q.warmup microseconds; the
 *           reply claims scalar 0 ms per call. min_samples picks a misbehaviour:
 *             -1  DONE before READY
 *             -2  a reply with one sample more than were ticked
 *             -3  the call's sleep moved into the preparation
 *
 *   "FAKE_HELLO=crash" | "...hang" | "...nodevice" at the start of shared
 *   memory when HELLO comes (not an environment variable: the supervisor
 *   passes the worker only an allow-list of those)
 *
 * The HELLO reply's message is "ok" only if the process got what the
 * supervisor promises: descriptors 0-4 and nothing else, its own process
 * group, RLIMIT_CORE 0, RLIMIT_FSIZE at most 64 MiB.
 *
 * Started with "--tool" as its first argument it plays compute-sanitizer:
 * it writes its arguments to the --log-file and execs the last argument. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"
#include "shm_view.h"
#include "stream_plan.h"

extern char **environ;

static int chan = -1, shm = -1;   /* shm: the first segment */
static int shm_fds[BW_SHM_SEGMENTS];
static uint8_t *shm_map;        /* mapped once, like the real worker */

static void hang(void) __attribute__((noreturn));

static void hang(void)
{
    for (;;)
        pause();
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void send_bytes(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t r = send(chan, p, len, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            _exit(1);
        p += r;
        len -= (size_t)r;
    }
}

static int read_request(bw_request *q)
{
    unsigned char *p = (unsigned char *)q;
    size_t got = 0;
    while (got < sizeof *q) {
        ssize_t r = read(chan, p + got, sizeof *q - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static int env_int(const char *name)
{
    const char *s = getenv(name);
    return s != NULL ? atoi(s) : -1;
}

static uint8_t *map_shm(uint64_t bytes)
{
    if (bw_shm_view_bytes(shm_fds) < bytes)
        return NULL;
    if (shm_map == NULL)
        shm_map = bw_shm_view_map(shm_fds);
    return shm_map;
}

/* What the supervisor promised; "ok" or the first broken promise. */
static void check_environment(char *msg, size_t len)
{
    snprintf(msg, len, "ok");
    if (chan != 3 || shm != 5) {
        snprintf(msg, len, "descriptors %d/%d, expected 3/5", chan, shm);
        return;
    }
    for (int fd = 0; fd < 5 + BW_SHM_SEGMENTS; fd++)
        if (fd != 4 && fcntl(fd, F_GETFD) < 0) {
            snprintf(msg, len, "descriptor %d is not open", fd);
            return;
        }
    if (fcntl(4, F_GETFD) >= 0) {
        snprintf(msg, len, "leaked descriptor 4 (the exec error pipe)");
        return;
    }
    if (fcntl(chan, F_GETFD) & FD_CLOEXEC) {
        snprintf(msg, len, "the channel is close-on-exec");
        return;
    }
    for (int fd = 5 + BW_SHM_SEGMENTS; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) >= 0) {
            snprintf(msg, len, "leaked descriptor %d", fd);
            return;
        }
    if (getpgrp() != getpid()) {
        snprintf(msg, len, "not a process group leader");
        return;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_CORE, &rl) != 0 || rl.rlim_cur != 0) {
        snprintf(msg, len, "core dumps allowed");
        return;
    }
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur > ((rlim_t)64 << 20)) {
        snprintf(msg, len, "no file size limit");
        return;
    }
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) != 0 || sa.sa_handler != SIG_DFL) {
        snprintf(msg, len, "SIGPIPE not at its default");
        return;
    }
}

static int fake_sanitizer(int argc, char **argv)
{
    const char *tool = "?", *log = NULL, *limit = "?", *code = "?";
    int i = 1;
    for (; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--tool") == 0)
            tool = argv[i + 1];
        else if (strcmp(argv[i], "--log-file") == 0)
            log = argv[i + 1];
        else if (strcmp(argv[i], "--print-limit") == 0)
            limit = argv[i + 1];
        else if (strcmp(argv[i], "--error-exitcode") == 0)
            code = argv[i + 1];
        else
            break;
    }
    if (i != argc - 1 || log == NULL)
        return 90;
    int fd = open(log, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
        return 91;
    char line[512];
    int n = snprintf(line, sizeof line, "FAKE-SANITIZER tool=%s print-limit=%s error-exitcode=%s\n",
                     tool, limit, code);
    if (n > 0 && write(fd, line, (size_t)n) != n)
        return 92;
    close(fd);
    char *app[2] = {argv[argc - 1], NULL};
    execv(app[0], app);
    return 93;
}

/* The FAKE_HELLO mode that the test wrote into shared memory, or "". */
static void hello_mode(char *mode, size_t len)
{
    static const char tag[] = "FAKE_HELLO=";
    mode[0] = '\0';
    const char *m = (const char *)map_shm(64);
    if (m == NULL)
        return;
    if (memcmp(m, tag, sizeof tag - 1) == 0)
        snprintf(mode, len, "%.*s", (int)(64 - sizeof tag), m + sizeof tag - 1);
}

static void print_environment(void)
{
    for (char **e = environ; *e != NULL; e++)
        printf("%s\n", *e);
    fflush(stdout);
    const char *home = getenv("HOME");
    if (home == NULL)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/.cache", home);
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return;
    snprintf(path, sizeof path, "%s/.cache/probe", home);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

static void identity(bw_reply *r)
{
    int home_writable = 0;
    const char *home = getenv("HOME");
    if (home != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/probe", home);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            home_writable = 1;
            close(fd);
        }
    }
    snprintf(r->message, sizeof r->message,
             "uid=%ld euid=%ld gid=%ld egid=%ld groups=%d pid=%ld ppid=%ld home_writable=%d "
             "no_new_privs=%d",
             (long)getuid(), (long)geteuid(), (long)getgid(), (long)getegid(), getgroups(0, NULL),
             (long)getpid(), (long)getppid(), home_writable, prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
}

static void escape_group(const bw_request *q)
{
    uint8_t *m = map_shm(q->shm_bytes);
    if (m == NULL)
        return;
    memset(m, 0, sizeof(int32_t));
    pid_t child = fork();
    if (child == 0) {
        setsid();
        if (fork() == 0) {
            /* Named, so that the test finds it in its own /proc: a pid read
             * here may be the namespace's, with a /proc of its own. */
            (void)prctl(PR_SET_NAME, "bw_escapee", 0, 0, 0);
            int32_t started = 1;
            memcpy(m, &started, sizeof started);
            hang();
        }
        _exit(0);
    }
    if (child > 0)
        (void)waitpid(child, NULL, 0);
    for (int i = 0; i < 500; i++) {
        int32_t seen;
        memcpy(&seen, m, sizeof seen);
        if (seen != 0)
            break;
        nap_ms(5);
    }
}

static void write_named_file(const bw_request *q, bw_reply *r)
{
    const char *m = (const char *)map_shm(q->shm_bytes);
    if (m == NULL || memchr(m, '\0', q->shm_bytes) == NULL) {
        snprintf(r->message, sizeof r->message, "refused: no path");
        return;
    }
    int fd = open(m, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) {
        snprintf(r->message, sizeof r->message, "refused: %s", strerror(errno));
        return;
    }
    ssize_t w = write(fd, "tampered\n", 9);
    int err = errno;
    close(fd);
    if (w == 9)
        snprintf(r->message, sizeof r->message, "wrote");
    else
        snprintf(r->message, sizeof r->message, "refused: %s", strerror(err));
}

static void kill_grader(const bw_request *q, bw_reply *r)
{
    const uint8_t *m = map_shm(q->shm_bytes);
    int32_t target = 0;
    if (m != NULL)
        memcpy(&target, m, sizeof target);
    int e1 = target > 0 && kill((pid_t)target, SIGKILL) != 0 ? errno : 0;
    int e2 = kill(getppid(), SIGKILL) != 0 ? errno : 0;
    nap_ms(100);  /* had it worked, the test process would be dead by now */
    snprintf(r->message, sizeof r->message, "%d:%d parent:%d", (int)target, e1, e2);
}

static void say_chunk(const bw_reply *r, int64_t c)
{
    bw_reply m = *r;
    m.kind = BW_REQ_CHUNK;
    m.chunk = c;
    send_bytes(&m, sizeof m);
}

/* The CHUNK message for chunk c, or exit. */
static void expect_chunk(const bw_request *q, int64_t c)
{
    bw_request m;
    if (read_request(&m) != 0 || m.kind != BW_REQ_CHUNK || m.nonce != q->nonce || m.chunk != c)
        _exit(4);
}

/* Where array k's image starts in the fake device memory: back to back. */
static uint64_t dev_place(const bw_request *q, int k)
{
    uint64_t at = 0;
    for (int a = 0; a < k; a++)
        at += q->arrays[a].image_bytes;
    return at;
}

static void run_chunks(const bw_request *q, bw_reply *r)
{
    uint8_t *ring = map_shm(q->shm_bytes);
    uint8_t *dev = malloc((size_t)dev_place(q, q->n_arrays));
    if (ring == NULL || dev == NULL || !bw_stream_plan_ok(q)) {
        r->status = BW_REP_BAD_REQUEST;
        snprintf(r->message, sizeof r->message, "fake: bad plan or no memory");
        free(dev);
        return;
    }
    for (int64_t c = 0; c < q->chunks; c++) {
        expect_chunk(q, c);
        if (q->scalars[0] == -4.0f) {
            r->status = BW_REP_CUDA_ERROR;
            r->cuda_error = 700;
            snprintf(r->message, sizeof r->message, "cudaErrorIllegalAddress: fake upload");
            send_bytes(r, sizeof *r);
            exit(0);
        }
        for (int k = 0; k < q->n_arrays; k++) {
            bw_chunk_span_t s = bw_chunk_span(q, c, k);
            memcpy(dev + dev_place(q, k) + s.begin, bw_slot_part(ring, q, c, k), s.end - s.begin);
        }
        say_chunk(r, c);
    }
    if (q->scalars[0] == -3.0f)
        hang();
    for (uint64_t i = 0; i < dev_place(q, q->n_arrays); i++)
        dev[i]++;
    r->call_ms = 1.0;
    if (q->scalars[0] == -2.0f) {
        free(dev);
        return;
    }
    for (int64_t c = 0; c < q->chunks; c++) {
        if (c >= q->ring_slots)
            expect_chunk(q, c - q->ring_slots);
        int64_t sent = q->scalars[0] == -1.0f && c == 0 ? 1 : c;
        for (int k = 0; k < q->n_arrays; k++) {
            bw_chunk_span_t s = bw_chunk_span(q, sent, k);
            memcpy(bw_slot_part(ring, q, sent, k), dev + dev_place(q, k) + s.begin, s.end - s.begin);
        }
        say_chunk(r, sent);
    }
    free(dev);
}

static void run(const bw_request *q, bw_reply *r)
{
    static const char garbage[sizeof(bw_reply)] = {0x5a};
    uint8_t *m;
    pid_t child;
    switch (q->n) {
    case -1:
        fputs("about to crash\n", stderr);
        raise(SIGSEGV);
        hang();
    case -2:
        exit(3);
    case -3:
        hang();
    case -4:
        for (int i = 0; i < 10000; i++) {
            char block[1000];
            memset(block, 'x', sizeof block);
            fwrite(block, 1, sizeof block, stdout);
        }
        fflush(stdout);
        return;
    case -5:
        send_bytes(garbage, sizeof garbage);
        hang();
    case -6:
        child = fork();
        if (child == 0)
            hang();
        r->samples = (int32_t)child;
        return;
    case -7:
        m = map_shm(q->shm_bytes);
        child = fork();
        if (child == 0)
            hang();
        if (m != NULL)
            memcpy(m, &child, sizeof child);
        raise(SIGSEGV);
        hang();
    case -8:
        r->status = BW_REP_CUDA_ERROR;
        r->cuda_error = 700;
        snprintf(r->message, sizeof r->message, "cudaErrorIllegalAddress: fake");
        send_bytes(r, sizeof *r);
        exit(0);
    case -9:
        close(chan);
        hang();
    case -10:
        fputs("to stdout\n", stdout);
        fflush(stdout);
        fputs("to stderr\n", stderr);
        return;
    case -11:
        send_bytes(r, 10);
        nap_ms(50);
        send_bytes((const char *)r + 10, sizeof *r - 10);
        r->magic = 0; /* already sent */
        return;
    case -12:
        send_bytes(r, sizeof *r);
        close(chan);
        hang();
    case -14:
        nap_ms(300);
        return;
    case -16:
        r->samples = (int32_t)getpid();
        return;
    case -17: {
        bw_reply forged = *r;
        forged.nonce = q->nonce + 1;
        send_bytes(&forged, sizeof forged);
        hang();
    }
    case -18:
        print_environment();
        return;
    case -19:
        identity(r);
        return;
    case -20:
        escape_group(q);
        return;
    case -21:
        write_named_file(q, r);
        return;
    case -22:
        kill_grader(q, r);
        return;
    case -15:
        signal(SIGTERM, SIG_IGN);
        setenv("FAKE_IGNORE_QUIT", "1", 1);
        return;
    default:
        break;
    }
    if (q->n < 0)
        return;
    if (q->chunks > 0) {
        run_chunks(q, r);
        return;
    }
    m = map_shm(q->shm_bytes);
    if (m == NULL) {
        r->status = BW_REP_BAD_REQUEST;
        snprintf(r->message, sizeof r->message, "mmap failed");
        return;
    }
    uint64_t total = dev_place(q, q->n_arrays);
    for (uint64_t i = 0; i < total; i++)
        m[i]++;
    r->call_ms = 1.0;
}

static void nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void send_tick(const bw_request *q, int64_t k, int32_t phase)
{
    bw_reply m;
    memset(&m, 0, sizeof m);
    m.magic = BW_PROTO_MAGIC;
    m.kind = BW_REQ_TICK;
    m.nonce = q->nonce;
    m.chunk = k;
    m.tick_phase = phase;
    send_bytes(&m, sizeof m);
}

/* See the BENCH lines at the top. */
static void bench(const bw_request *q, bw_reply *r)
{
    int samples = q->max_samples > 0 && q->max_samples <= 1000 ? q->max_samples : 1;
    long call_us = q->n > 0 ? q->n : 0, prep_us = q->warmup > 0 ? q->warmup : 0;
    for (int k = 0; q->tick && k < samples; k++) {
        nap_us(prep_us + (q->min_samples == -3 ? call_us : 0));
        if (q->min_samples == -1)
            send_tick(q, k, BW_TICK_DONE);
        send_tick(q, k, BW_TICK_READY);
        bw_request go;
        if (read_request(&go) != 0 || go.kind != BW_REQ_TICK || go.chunk != k)
            _exit(1);
        if (q->min_samples != -3)
            nap_us(call_us);
        send_tick(q, k, BW_TICK_DONE);
    }
    r->samples = samples + (q->min_samples == -2);
    r->ms_median = r->ms_mean = r->ms_min = r->ms_max = r->ms_q1 = r->ms_q3 = q->scalars[0];
}

/* CUDA_FAKE_WORKER_LOG=FILE: one line "PID KIND" per request, appended, so a
 * test can see which worker got which request in which order. (CUDA_ is one
 * of the prefixes bwgrade passes on to its workers.) */
static void log_request(const bw_request *q)
{
    const char *path = getenv("CUDA_FAKE_WORKER_LOG");
    if (path == NULL)
        return;
    FILE *f = fopen(path, "a");
    if (f == NULL)
        return;
    fprintf(f, "%ld %u\n", (long)getpid(), (unsigned)q->kind);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--tool") == 0)
        return fake_sanitizer(argc, argv);
    chan = env_int(BW_ENV_CHANNEL_FD);
    shm = env_int(BW_ENV_SHM_FD);
    if (chan < 0 || shm < 0)
        return 2;
    for (int k = 0; k < BW_SHM_SEGMENTS; k++)
        shm_fds[k] = shm + k;
    for (;;) {
        bw_request q;
        if (read_request(&q) != 0)
            return 0;
        log_request(&q);
        bw_reply r;
        memset(&r, 0, sizeof r);
        r.magic = BW_PROTO_MAGIC;
        r.kind = q.kind;
        r.nonce = q.nonce;
        r.status = BW_REP_OK;
        snprintf(r.message, sizeof r.message, "ok");
        if (q.kind == BW_REQ_QUIT) {
            if (getenv("FAKE_IGNORE_QUIT") != NULL)
                hang();
            return 0;
        }
        if (q.kind == BW_REQ_HELLO) {
            char h[64];
            hello_mode(h, sizeof h);
            if (strcmp(h, "crash") == 0)
                raise(SIGSEGV);
            if (strcmp(h, "hang") == 0)
                hang();
            if (strcmp(h, "nodevice") == 0) {
                r.status = BW_REP_NO_DEVICE;
                snprintf(r.message, sizeof r.message, "fake: no device");
            } else {
                check_environment(r.message, sizeof r.message);
                snprintf(r.device_name, sizeof r.device_name, "fake device");
                r.device_count = 1;
                r.sm_count = 1;
            }
        } else if (q.kind == BW_REQ_BENCH && q.tick) {
            bench(&q, &r);
        } else if (q.kind == BW_REQ_RUN) {
            run(&q, &r);
            if (r.magic == 0)
                continue;
        }
        send_bytes(&r, sizeof r);
    }
}
