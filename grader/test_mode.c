/* bwgrade test: run every case in a worker, check what comes back, find the
 * pattern in the failures, report. Also the case machinery bench mode uses. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diagnose.h"
#include "inputs.h"
#include "mono_clock.h"
#include "parallel_for.h"
#include "report_json.h"
#include "report_text.h"
#include "supervisor.h"
#include "test_mode.h"
#include "validate.h"

#define OUTPUT_CAP 4096              /* student stdout+stderr kept per call */
#define STARTUP_TIMEOUT_S 60.0       /* context creation, slower under a sanitizer */
#define SANITIZER_LOG_CAP 4000       /* bytes of a sanitizer log kept per case */
#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB ((uint64_t)1 << 20)

/* ---- small utilities ----------------------------------------------------- */

/* A growable string; out-of-memory leaves it short rather than failing. */
typedef struct {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_add(strbuf *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s)
            return;
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_adds(strbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

typedef struct {
    bf16_t *dst;
    const bf16_t *src;   /* NULL: fill with value */
    bf16_t value;
} copy_job;

static void copy_body(int64_t begin, int64_t end, void *p)
{
    copy_job *j = p;
    if (j->src) {
        memcpy(j->dst + begin, j->src + begin, (size_t)(end - begin) * sizeof(bf16_t));
    } else {
        for (int64_t i = begin; i < end; i++)
            j->dst[i] = j->value;
    }
}

/* Copies and fills of up to 4 GiB per array are worth spreading over cores. */
static void copy_elements(bf16_t *dst, const bf16_t *src, bf16_t value, int64_t n, int threads)
{
    copy_job j = {dst, src, value};
    parallel_for(n, threads, (int64_t)1 << 20, copy_body, &j);
}

/* ---- memory -------------------------------------------------------------- */

/* A file holding one number (cgroup limits); 0 if unreadable or "max". */
static uint64_t read_number_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long v = 0;
    if (fscanf(f, "%llu", &v) != 1)
        v = 0;
    fclose(f);
    return (uint64_t)v;
}

static uint64_t meminfo_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    uint64_t kb = 0;
    while (getline(&line, &cap, f) > 0) {
        unsigned long long v;
        if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
            kb = v;
            break;
        }
    }
    free(line);
    fclose(f);
    return kb * 1024;
}

/* Host memory we may still use: the larger of free pages and MemAvailable
 * (which counts reclaimable cache), capped by a cgroup v2 limit when one is
 * set (containers). 0 when nothing could be read. */
static uint64_t host_available_bytes(void)
{
    uint64_t avail = 0;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        avail = (uint64_t)pages * (uint64_t)page;
    uint64_t ma = meminfo_available();
    if (ma > avail)
        avail = ma;
    uint64_t limit = read_number_file("/sys/fs/cgroup/memory.max");
    if (limit > 0) {
        uint64_t used = read_number_file("/sys/fs/cgroup/memory.current");
        uint64_t room = limit > used ? limit - used : 0;
        if (room < avail)
            avail = room;
    }
    return avail;
}

char *bw_memory_shortfall(const bw_exercise *ex, int64_t n, const bw_image_layout *l,
                          uint64_t extra_device, const bw_reply *device, bw_shm *shm)
{
    uint64_t images = (uint64_t)ex->n_arrays * l->total_bytes;
    size_t have_shm = shm ? bw_shm_size(shm) : 0;
    /* Shared memory already mapped is already counted as used. */
    uint64_t host_need = (images > have_shm ? images - have_shm : 0) +
                         (uint64_t)(ex->n_arrays + 1) * 2u * (uint64_t)n;
    uint64_t dev_need = images + extra_device;
    /* Small cases always fit; this skips reading /proc for each of them. */
    if (host_need < 64 * MIB && dev_need < 64 * MIB)
        return NULL;
    uint64_t host_avail = host_available_bytes();
    uint64_t dev_avail = device ? device->mem_free : 0;
    /* Margins: 10% (5% on the device) plus 256 MiB for everything else the
     * processes and the CUDA context need. */
    int host_ok = host_avail == 0 || host_need + host_need / 10 + 256 * MIB <= host_avail;
    int dev_ok = dev_avail == 0 || dev_need + dev_need / 20 + 256 * MIB <= dev_avail;
    if (host_ok && dev_ok)
        return NULL;
    return bw_format_alloc("needs %.1f GiB host / %.1f GiB device memory; %.1f GiB host / "
                           "%.1f GiB device available",
                           (double)host_need / GIB, (double)dev_need / GIB,
                           (double)host_avail / GIB, (double)dev_avail / GIB);
}

/* ---- case data ----------------------------------------------------------- */

int bw_case_data_prepare(bw_case_data *d, const bw_exercise *ex, const bw_case *c, int sanitize,
                         int threads)
{
    memset(d, 0, sizeof *d);
    d->ex = ex;
    d->c = *c;
    d->layout = bw_image_layout_for(c->n, c->offset_elems, sanitize);
    d->threads = threads;
    size_t bytes = (size_t)c->n * sizeof(bf16_t);
    int last = ex->n_arrays - 1;
    for (int k = 0; k < ex->n_arrays; k++) {
        if (!bw_exercise_is_input(ex, k))
            continue;
        d->orig[k] = malloc(bytes);
        if (!d->orig[k])
            goto oom;
    }
    d->expected = malloc(bytes);
    if (!d->expected)
        goto oom;
    bw_inputs_fill(ex, c, d->orig, threads);

    /* The reference works on the arrays as the student's function would:
     * inputs as generated, output last (holding its input when in place). */
    bf16_t *ref[BW_MAX_ARRAYS] = {0};
    for (int k = 0; k < last; k++)
        ref[k] = d->orig[k];
    ref[last] = d->expected;
    if (ex->in_place)
        copy_elements(d->expected, d->orig[last], 0, c->n, threads);
    else
        copy_elements(d->expected, NULL, BW_POISON, c->n, threads);
    ex->reference(c->n, ex->uses_alpha ? c->alpha : 0.0f, ref, threads);
    return 0;
oom:
    bw_case_data_free(d);
    return -1;
}

void bw_case_data_free(bw_case_data *d)
{
    for (int k = 0; k < BW_MAX_ARRAYS; k++) {
        free(d->orig[k]);
        d->orig[k] = NULL;
    }
    free(d->expected);
    d->expected = NULL;
}

uint8_t *bw_case_data_build(const bw_case_data *d, bw_shm *shm, char **why)
{
    const bw_exercise *ex = d->ex;
    uint64_t img = d->layout.total_bytes;
    uint64_t total = (uint64_t)ex->n_arrays * img;
    uint8_t *base = bw_shm_reserve(shm, (size_t)total);
    if (!base) {
        char size[BW_SIZE_TEXT];
        bw_format_bytes(total, size);
        *why = bw_format_alloc("could not reserve %s of shared memory", size);
        return NULL;
    }
    for (int k = 0; k < ex->n_arrays; k++) {
        uint8_t *image = base + (uint64_t)k * img;
        bw_image_fill_guards(image, &d->layout);
        bf16_t *data = bw_image_data(image, &d->layout);
        /* An output that is not read starts as BW_POISON, so elements the
         * kernel never wrote stand out. */
        copy_elements(data, d->orig[k], BW_POISON, d->c.n, d->threads);
    }
    return base;
}

void bw_case_data_request(const bw_case_data *d, bw_req_kind kind, bw_request *req)
{
    memset(req, 0, sizeof *req);
    req->magic = BW_PROTO_MAGIC;
    req->kind = (uint32_t)kind;
    req->n = (int32_t)d->c.n;
    req->alpha = d->ex->uses_alpha ? d->c.alpha : 0.0f;
    req->n_arrays = d->ex->n_arrays;
    req->front_bytes = d->layout.front_bytes;
    req->data_bytes = d->layout.data_bytes;
    req->back_bytes = d->layout.back_bytes;
    req->image_bytes = d->layout.total_bytes;
    req->shm_bytes = (uint64_t)d->ex->n_arrays * d->layout.total_bytes;
}

void bw_test_result_init(bw_case_result *r)
{
    memset(r, 0, sizeof *r);
    r->outcome = BW_OUTCOME_PASS;
    r->guard_array = -1;
    r->input_array = -1;
    r->input_first = -1;
    r->out.first_bad = -1;
    r->out.last_bad = -1;
}

void bw_case_data_check(const bw_case_data *d, uint8_t *images, bw_case_result *r)
{
    const bw_exercise *ex = d->ex;
    const bw_image_layout *l = &d->layout;
    int64_t n = d->c.n;
    int last = ex->n_arrays - 1;

    for (int k = 0; k < ex->n_arrays; k++) {
        int64_t first = 0, lastb = 0;
        const uint8_t *image = images + (uint64_t)k * l->total_bytes;
        int64_t bad = bw_image_check_guards(image, l, &first, &lastb);
        if (bad > 0) {
            r->guard_bad_bytes += bad;
            if (r->guard_array < 0) {
                r->guard_array = k;
                r->guard_first = first;
                r->guard_last = lastb;
            }
        }
    }
    /* Inputs other than the output must come back bit for bit. */
    for (int k = 0; k < last; k++) {
        if (!d->orig[k])
            continue;
        int64_t first = -1;
        const bf16_t *now = bw_image_data(images + (uint64_t)k * l->total_bytes, l);
        int64_t changed = bw_count_changed(d->orig[k], now, n, &first, d->threads);
        if (changed > 0 && r->input_array < 0) {
            r->input_array = k;
            r->input_changed = changed;
            r->input_first = first;
        }
    }
    const bf16_t *out = bw_image_data(images + (uint64_t)last * l->total_bytes, l);
    /* The tolerance depends on the inputs as generated, even if the kernel
     * changed them: pass the private copies, in table order. */
    const bf16_t *inputs[BW_MAX_ARRAYS];
    int n_in = 0;
    for (int k = 0; k < ex->n_arrays; k++)
        if (d->orig[k])
            inputs[n_in++] = d->orig[k];
    bw_compare_output(ex, n, ex->uses_alpha ? d->c.alpha : 0.0f, inputs, d->expected, out,
                      &r->out, d->threads);
    if (ex->in_place) {
        int64_t first;
        r->nothing_written = bw_count_changed(d->orig[last], out, n, &first, d->threads) == 0;
    } else {
        r->nothing_written = r->out.unwritten == n;
    }
    r->outcome = (r->out.mismatches > 0 || r->guard_bad_bytes > 0 || r->input_changed > 0)
                     ? BW_OUTCOME_FAIL
                     : BW_OUTCOME_PASS;
}

/* ---- the runner ---------------------------------------------------------- */

struct bw_runner {
    const bw_exercise *ex;
    bw_worker_opts opts;
    bw_shm *shm;
    bw_worker *w;
    bw_reply hello;      /* from the latest worker started */
    strbuf san_log;      /* sanitizer output gathered since the last take */
};

static void gather_sanitizer_log(bw_runner *run)
{
    if (!run->opts.sanitizer || !run->w)
        return;
    char *s = bw_worker_take_sanitizer_log(run->w);
    if (s) {
        sb_adds(&run->san_log, s);
        free(s);
    }
}

/* The worker is gone or useless: keep what it logged, then reap it. */
static void drop_worker(bw_runner *run)
{
    if (!run->w)
        return;
    gather_sanitizer_log(run);
    bw_worker_stop(run->w);
    run->w = NULL;
}

static int start_worker(bw_runner *run, char **why, int *no_device)
{
    bw_reply hello;
    memset(&hello, 0, sizeof hello);
    char *wwhy = NULL;
    bw_worker *w = bw_worker_start(&run->opts, run->shm, &hello, &wwhy);
    hello.message[BW_TEXT - 1] = '\0';
    hello.device_name[BW_TEXT - 1] = '\0';
    int said_no_device = hello.magic == BW_PROTO_MAGIC && hello.status == BW_REP_NO_DEVICE;
    if (w && hello.status != BW_REP_OK) {
        bw_worker_stop(w);
        w = NULL;
    }
    if (!w) {
        if (no_device)
            *no_device = said_no_device;
        const char *msg = hello.message[0] ? hello.message : wwhy ? wwhy : "no reason given";
        if (said_no_device)
            *why = bw_format_alloc("no CUDA device: %s", msg);
        else if (wwhy)
            *why = bw_format_alloc("%s", wwhy);   /* already says what failed */
        else
            *why = bw_format_alloc("the worker would not start: %s", msg);
        free(wwhy);
        return -1;
    }
    free(wwhy);
    run->hello = hello;
    run->w = w;
    return 0;
}

bw_runner *bw_runner_open(const bw_exercise *ex, const char *worker_path, const char *sanitizer,
                          char **why, int *no_device)
{
    *why = NULL;
    *no_device = 0;
    bw_runner *run = calloc(1, sizeof *run);
    if (!run) {
        *why = bw_format_alloc("out of memory");
        return NULL;
    }
    run->ex = ex;
    run->opts.worker_path = worker_path;
    run->opts.sanitizer = sanitizer;
    run->opts.sanitizer_path = NULL;
    run->opts.output_cap = OUTPUT_CAP;
    run->opts.startup_timeout_s = STARTUP_TIMEOUT_S;
    run->shm = bw_shm_create();
    if (!run->shm) {
        *why = bw_format_alloc("could not create shared memory: %s", strerror(errno));
        free(run);
        return NULL;
    }
    if (start_worker(run, why, no_device) != 0) {
        bw_shm_destroy(run->shm);
        free(run);
        return NULL;
    }
    return run;
}

void bw_runner_close(bw_runner *run)
{
    if (!run)
        return;
    bw_worker_stop(run->w);
    bw_shm_destroy(run->shm);
    free(run->san_log.s);
    free(run);
}

const bw_reply *bw_runner_device(const bw_runner *run) { return &run->hello; }
bw_shm *bw_runner_shm(bw_runner *run) { return run->shm; }

int bw_runner_restart(bw_runner *run, char **why)
{
    *why = NULL;
    drop_worker(run);
    return start_worker(run, why, NULL);
}

long bw_runner_worker_pid(const bw_runner *run) { return run->w ? bw_worker_pid(run->w) : 0; }

bw_outcome bw_runner_call(bw_runner *run, const bw_request *req, double timeout_s, bw_reply *rep,
                          char **detail, char **output)
{
    *detail = NULL;
    *output = NULL;
    memset(rep, 0, sizeof *rep);
    if (run->w && !bw_worker_alive(run->w))
        drop_worker(run);
    if (!run->w) {
        char *why = NULL;
        if (start_worker(run, &why, NULL) != 0) {
            *detail = bw_format_alloc("the worker would not restart: %s", why ? why : "?");
            free(why);
            return BW_OUTCOME_CRASH;
        }
    }
    char *why = NULL;
    bw_call_status st = bw_worker_call(run->w, req, rep, timeout_s, &why);
    *output = run->w ? bw_worker_take_output(run->w) : NULL;
    gather_sanitizer_log(run);
    rep->message[BW_TEXT - 1] = '\0';
    bw_outcome o = BW_OUTCOME_PASS;
    switch (st) {
    case BW_CALL_OK:
        if (rep->status == BW_REP_OK)
            break;
        if (rep->status == BW_REP_CUDA_ERROR) {
            o = BW_OUTCOME_CUDA_ERROR;
            *detail = rep->message[0] ? bw_format_alloc("%s", rep->message)
                                      : bw_format_alloc("CUDA error %d", (int)rep->cuda_error);
        } else if (rep->status == BW_REP_NO_DEVICE) {
            o = BW_OUTCOME_SKIPPED;
            *detail = bw_format_alloc("the worker lost its CUDA device: %s", rep->message);
        } else {
            o = BW_OUTCOME_SKIPPED;
            *detail = bw_format_alloc("grader error: the worker refused the request (%s)",
                                      rep->message);
        }
        /* After an error reply the worker exits; start clean next time. */
        drop_worker(run);
        break;
    case BW_CALL_CRASHED:
        o = BW_OUTCOME_CRASH;
        *detail = bw_format_alloc("%s", why ? why : "the worker process died");
        drop_worker(run);
        break;
    case BW_CALL_TIMEOUT:
        o = BW_OUTCOME_TIMEOUT;
        *detail = why ? bw_format_alloc("%s", why)
                      : bw_format_alloc("no answer within %.0f s", timeout_s);
        drop_worker(run);
        break;
    case BW_CALL_PROTOCOL:
        /* Student code can corrupt the worker's memory or descriptors. */
        o = BW_OUTCOME_CRASH;
        *detail = bw_format_alloc("the worker stopped answering properly (%s)",
                                  why ? why : "garbled reply");
        drop_worker(run);
        break;
    }
    free(why);
    return o;
}

/* Lines of a compute-sanitizer log that say nothing: its banner and the
 * summaries that count zero problems. */
static int boring_sanitizer_line(const char *line, size_t len)
{
    const char *p = line, *end = line + len;
    while (p < end && (*p == '=' || *p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    if (p == end)
        return 1;
    size_t rest = (size_t)(end - p);
    if (rest >= 17 && strncmp(p, "COMPUTE-SANITIZER", 17) == 0)
        return 1;
    for (const char *q = p; q + 11 <= end; q++)
        if (strncmp(q, "SUMMARY: 0 ", 11) == 0)
            return 1;
    return 0;
}

char *bw_runner_take_sanitizer_log(bw_runner *run)
{
    if (!run->san_log.s)
        return NULL;
    strbuf out = {0};
    const char *p = run->san_log.s, *end = p + run->san_log.len;
    int cut = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (!boring_sanitizer_line(p, len)) {
            if (out.len + len + 1 > SANITIZER_LOG_CAP) {
                cut = 1;
                break;
            }
            sb_add(&out, p, len);
            sb_adds(&out, "\n");
        }
        p += len + (nl ? 1 : 0);
    }
    if (cut)
        sb_adds(&out, "[... sanitizer log cut]\n");
    free(run->san_log.s);
    memset(&run->san_log, 0, sizeof run->san_log);
    return out.s;   /* NULL when every line was boring */
}

/* ---- one case ------------------------------------------------------------ */

/* Seconds a RUN call may take. Context and module loading take a few
 * seconds at most; beyond that the time goes into copying the images
 * through pageable memory and back (~4 bytes per element per array), so the
 * limit grows with n: about 90 s for the 2^31-element case, far above what
 * a correct kernel needs even on a slow host. A sanitizer slows kernels by
 * 10-100x and adds its own start-up, hence the larger terms. */
static double case_time_limit(int64_t n, int n_arrays, int sanitized)
{
    double work = (double)n * (double)n_arrays;
    return sanitized ? 60.0 + work * 2e-6 : 5.0 + work * 2e-8;
}

static void set_detail(bw_case_result *r, char *detail)
{
    free(r->detail);
    r->detail = detail;
}

/* BWLAB_TIMING=1: where a slow case spends its time, on stderr (for the
 * kit's developers; students never need it). */
static void phase(double *mark, double *times, int k)
{
    double t = bw_mono_s();
    times[k] = t - *mark;
    *mark = t;
}

void bw_test_run_case(bw_runner *run, const bw_case *c, const char *sanitizer, bw_case_result *r)
{
    const bw_exercise *ex = run->ex;
    int threads = parallel_default_threads();
    double t0 = bw_mono_s();
    double mark = t0, times[4] = {0, 0, 0, 0}, call_ms = 0;
    bw_test_result_init(r);
    bw_case_data d;
    memset(&d, 0, sizeof d);
    bw_image_layout l = bw_image_layout_for(c->n, c->offset_elems, sanitizer != NULL);

    char *short_of = bw_memory_shortfall(ex, c->n, &l, 0, &run->hello, run->shm);
    if (short_of) {
        r->outcome = BW_OUTCOME_SKIPPED;
        r->detail = short_of;
        goto done;
    }
    if (bw_case_data_prepare(&d, ex, c, sanitizer != NULL, threads) != 0) {
        r->outcome = BW_OUTCOME_SKIPPED;
        r->detail = bw_format_alloc("not enough host memory for this case's arrays");
        goto done;
    }
    phase(&mark, times, 0);
    char *why = NULL;
    uint8_t *images = bw_case_data_build(&d, run->shm, &why);
    phase(&mark, times, 1);
    if (!images) {
        r->outcome = BW_OUTCOME_SKIPPED;
        r->detail = why;
        goto done;
    }
    bw_request req;
    bw_case_data_request(&d, BW_REQ_RUN, &req);
    double limit = case_time_limit(c->n, ex->n_arrays, sanitizer != NULL);
    bw_reply rep;
    char *detail = NULL;
    bw_outcome o = bw_runner_call(run, &req, limit, &rep, &detail, &r->student_output);
    if (o != BW_OUTCOME_PASS) {
        r->outcome = o;
        r->detail = detail;
        goto sanitizer_log;
    }
    free(detail);
    call_ms = rep.call_ms;
    phase(&mark, times, 2);
    bw_case_data_check(&d, images, r);
    phase(&mark, times, 3);

    if (r->outcome == BW_OUTCOME_FAIL) {
        /* Same inputs, same layout, once more: different output bits mean
         * the result depends on timing, i.e. a race. */
        bf16_t *out = bw_image_data(images + (uint64_t)(ex->n_arrays - 1) * l.total_bytes, &l);
        uint64_t first_hash = bw_hash_elements(out, c->n);
        char *why2 = NULL;
        uint8_t *again = bw_case_data_build(&d, run->shm, &why2);
        free(why2);
        if (again) {
            char *detail2 = NULL, *output2 = NULL;
            bw_outcome o2 = bw_runner_call(run, &req, limit, &rep, &detail2, &output2);
            if (o2 == BW_OUTCOME_PASS) {
                out = bw_image_data(again + (uint64_t)(ex->n_arrays - 1) * l.total_bytes, &l);
                r->nondeterministic = bw_hash_elements(out, c->n) != first_hash;
            }
            free(detail2);
            free(output2);
        }
    }

sanitizer_log:
    if (sanitizer) {
        char *log = bw_runner_take_sanitizer_log(run);
        if (log) {
            if (r->outcome == BW_OUTCOME_PASS)
                r->outcome = BW_OUTCOME_FAIL;
            if (r->detail) {
                char *both = bw_format_alloc("%s\n%s", r->detail, log);
                if (both) {
                    set_detail(r, both);
                    free(log);
                } else {
                    set_detail(r, log);
                }
            } else {
                r->detail = log;
            }
        }
    }
done:
    bw_case_data_free(&d);
    r->seconds = bw_mono_s() - t0;
    if (r->seconds > 0.5 && getenv("BWLAB_TIMING"))
        fprintf(stderr, "timing: case %d n=%" PRId64 ": %.2f s = inputs+reference %.2f, images %.2f, "
                        "worker call %.2f (student call %.3f), checks %.2f, rest %.2f\n", c->index, c->n,
                r->seconds, times[0], times[1], times[2], call_ms / 1e3, times[3],
                r->seconds - times[0] - times[1] - times[2] - times[3]);
}

/* ---- the test command ---------------------------------------------------- */

int bw_parse_sanitizers(const char *list, const char *tools[BW_MAX_SANITIZERS])
{
    static const char *const known[BW_MAX_SANITIZERS] = {"memcheck", "racecheck", "initcheck"};
    int count = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0)
            return -1;
        if (len == 3 && strncmp(p, "all", 3) == 0) {
            for (int k = 0; k < BW_MAX_SANITIZERS; k++)
                tools[k] = known[k];
            count = BW_MAX_SANITIZERS;
        } else {
            int found = -1;
            for (int k = 0; k < BW_MAX_SANITIZERS; k++)
                if (strlen(known[k]) == len && strncmp(p, known[k], len) == 0)
                    found = k;
            if (found < 0)
                return -1;
            int dup = 0;
            for (int k = 0; k < count; k++)
                dup |= tools[k] == known[found];
            if (!dup)
                tools[count++] = known[found];
        }
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    return count;
}

/* Groups fast enough to run under a sanitizer. */
static int sanitizer_group(bw_case_group g)
{
    return g == BW_GROUP_SMALL || g == BW_GROUP_MEDIUM || g == BW_GROUP_SPECIAL;
}

static int is_failure(bw_outcome o)
{
    return o == BW_OUTCOME_FAIL || o == BW_OUTCOME_CRASH || o == BW_OUTCOME_TIMEOUT ||
           o == BW_OUTCOME_CUDA_ERROR;
}

static int is_broken_run(bw_outcome o)
{
    return o == BW_OUTCOME_CRASH || o == BW_OUTCOME_TIMEOUT || o == BW_OUTCOME_CUDA_ERROR;
}

/* A section's storage; the report's bw_test_section points into it. */
typedef struct {
    bw_case *cases;
    bw_case_result *results;
    int count;
    bw_diagnosis *diags;
    int n_diags;
} section_store;

/* "\r case 12 of 1204" on a terminal, so a long run visibly moves. */
static void progress(int show, const char *tool, int i, int count, double *last)
{
    if (!show)
        return;
    double t = bw_mono_s();
    if (i < count && t - *last < 0.2)
        return;
    *last = t;
    if (i >= count)
        fputs("\r                                                  \r", stderr);
    else
        fprintf(stderr, "\r  %s%scase %d of %d ", tool ? tool : "", tool ? ": " : "", i + 1, count);
    fflush(stderr);
}

static int run_section(bw_runner *run, const bw_test_opts *o, const bw_case_list *all,
                       const char *sanitizer, section_store *st, bw_test_section *sec)
{
    memset(st, 0, sizeof *st);
    st->cases = malloc(sizeof *st->cases * (size_t)(all->count ? all->count : 1));
    if (!st->cases)
        return -1;
    for (int i = 0; i < all->count; i++) {
        const bw_case *c = &all->items[i];
        int wanted = o->case_index >= 0 ? c->index == o->case_index
                     : o->groups      ? (o->groups >> c->group) & 1u
                     : !sanitizer || sanitizer_group(c->group);
        if (!wanted)
            continue;
        st->cases[st->count++] = *c;
    }
    st->results = calloc((size_t)(st->count ? st->count : 1), sizeof *st->results);
    if (!st->results)
        return -1;

    int show = !o->quiet && isatty(STDERR_FILENO);
    double last_progress = 0;
    int streak = 0, broken = 0;
    unsigned failed_groups = 0;
    for (int i = 0; i < st->count; i++) {
        bw_case_result *r = &st->results[i];
        progress(show, sanitizer, i, st->count, &last_progress);
        if (o->group_fail_fast && ((failed_groups >> st->cases[i].group) & 1u)) {
            bw_test_result_init(r);
            r->outcome = BW_OUTCOME_SKIPPED;
            r->detail = bw_format_alloc("not run: an earlier %s case failed, which already "
                                        "fails the group (--group-fail-fast)",
                                        bw_case_group_name(st->cases[i].group));
            continue;
        }
        if (streak >= BW_GIVE_UP_AFTER || broken >= BW_GIVE_UP_TOTAL) {
            bw_test_result_init(r);
            r->outcome = BW_OUTCOME_SKIPPED;
            r->detail = streak >= BW_GIVE_UP_AFTER
                            ? bw_format_alloc("not run: the %d cases before it all crashed or "
                                              "hung; fix that first", BW_GIVE_UP_AFTER)
                            : bw_format_alloc("not run: %d cases already crashed or hung; fix "
                                              "those first", BW_GIVE_UP_TOTAL);
            continue;
        }
        bw_test_run_case(run, &st->cases[i], sanitizer, r);
        if (is_failure(r->outcome))
            failed_groups |= 1u << st->cases[i].group;
        if (is_broken_run(r->outcome)) {
            streak++;
            broken++;
        } else if (r->outcome != BW_OUTCOME_SKIPPED) {
            streak = 0;
        }
    }
    progress(show, sanitizer, st->count, st->count, &last_progress);

    int nd = bw_diagnose(o->ex, st->cases, st->results, st->count, &st->diags);
    st->n_diags = nd > 0 ? nd : 0;

    memset(sec, 0, sizeof *sec);
    sec->sanitizer = sanitizer;
    sec->cases = st->cases;
    sec->results = st->results;
    sec->count = st->count;
    sec->diags = st->diags;
    sec->n_diags = st->n_diags;
    int not_impl = 0;
    for (int i = 0; i < st->n_diags; i++)
        not_impl |= st->diags[i].code == BW_DIAG_NOT_IMPLEMENTED;
    /* A function that writes nothing anywhere earns nothing: the few cases it
     * "passes" (haxpy with alpha = 0 expects y unchanged) fail with it. */
    for (int i = 0; not_impl && i < st->count; i++) {
        bw_case_result *r = &st->results[i];
        if (r->outcome == BW_OUTCOME_PASS && r->nothing_written) {
            r->outcome = BW_OUTCOME_FAIL;
            free(r->detail);
            r->detail = bw_format_alloc("not implemented: this case expects the output unchanged, "
                                        "but the function writes nothing in any case");
        }
    }
    for (int i = 0; i < st->count; i++) {
        bw_outcome oc = st->results[i].outcome;
        sec->passed += oc == BW_OUTCOME_PASS;
        sec->failed += is_failure(oc);
        sec->skipped += oc == BW_OUTCOME_SKIPPED;
    }
    sec->status = sec->failed == 0 ? "pass" : not_impl ? "not_implemented" : "fail";
    if (o->case_index < 0 && o->groups)
        sec->note = "only the case groups asked for ran (--groups)";
    else if (sanitizer && o->case_index < 0)
        sec->note = "only the small, medium and special cases run under the sanitizer (the "
                    "large ones would take too long); a plain test run covers those";
    return 0;
}

static void free_section(section_store *st)
{
    for (int i = 0; i < st->count && st->results; i++)
        bw_case_result_free(&st->results[i]);
    free(st->results);
    free(st->cases);
    if (st->diags)
        bw_diagnoses_free(st->diags, st->n_diags);
}

int bw_test_main(const bw_test_opts *o)
{
    const char *tools[BW_MAX_SANITIZERS];
    int n_tools = 0;
    if (o->sanitize) {
        n_tools = bw_parse_sanitizers(o->sanitize, tools);
        if (n_tools <= 0) {
            fprintf(stderr, "bwgrade: --sanitize takes memcheck, racecheck, initcheck (comma "
                            "separated) or all\n");
            return 2;
        }
    }
    bw_case_list all = {0};
    if (bw_cases_generate(o->ex, o->seed, o->hidden, &all) != 0) {
        fprintf(stderr, "bwgrade: out of memory generating the cases\n");
        return 3;
    }
    if (o->case_index >= all.count) {
        fprintf(stderr, "bwgrade: there is no case %d: %s has cases 0..%d%s\n", o->case_index,
                o->ex->name, all.count - 1, o->hidden ? "" : " (without --hidden)");
        bw_cases_free(&all);
        return 2;
    }

    int n_sections = n_tools ? n_tools : 1;
    section_store store[BW_MAX_SANITIZERS];
    bw_test_section sections[BW_MAX_SANITIZERS];
    memset(store, 0, sizeof store);
    bw_reply device;
    int have_device = 0;
    char *error = NULL;
    int done = 0;
    for (int s = 0; s < n_sections && !error; s++) {
        const char *tool = n_tools ? tools[s] : NULL;
        int no_device = 0;
        bw_runner *run = bw_runner_open(o->ex, o->worker_path, tool, &error, &no_device);
        if (!run) {
            if (!error)
                error = bw_format_alloc("the worker would not start");
            break;
        }
        if (!have_device) {
            device = *bw_runner_device(run);
            have_device = 1;
        }
        if (run_section(run, o, &all, tool, &store[s], &sections[s]) != 0)
            error = bw_format_alloc("out of memory");
        else
            done++;
        bw_runner_close(run);
    }

    bw_test_report rep;
    memset(&rep, 0, sizeof rep);
    rep.ex = o->ex;
    rep.seed = o->seed;
    rep.hidden = o->hidden;
    rep.device = have_device ? &device : NULL;
    rep.sections = sections;
    rep.n_sections = error ? 0 : done;
    int any_fail = 0, any_not_impl_only = 1;
    for (int s = 0; s < rep.n_sections; s++) {
        rep.passed += sections[s].passed;
        rep.failed += sections[s].failed;
        rep.skipped += sections[s].skipped;
        rep.total += sections[s].count;
        if (sections[s].failed) {
            any_fail = 1;
            any_not_impl_only &= strcmp(sections[s].status, "not_implemented") == 0;
        }
    }
    int code;
    if (error) {
        rep.status = "error";
        rep.error = error;
        code = 3;
    } else if (any_fail) {
        rep.status = any_not_impl_only ? "not_implemented" : "fail";
        code = 1;
    } else {
        rep.status = "pass";
        code = 0;
    }

    if (error)
        fprintf(stderr, "bwgrade: %s: %s\n", o->ex->name, error);
    else
        bw_report_test_text(o->json_path && strcmp(o->json_path, "-") == 0 ? stderr : stdout,
                            &rep, o->quiet);
    if (o->json_path && bw_report_test_json(o->json_path, &rep) != 0) {
        fprintf(stderr, "bwgrade: could not write %s: %s\n", o->json_path, strerror(errno));
        code = 3;
    }

    for (int s = 0; s < n_sections; s++)
        free_section(&store[s]);
    free(error);
    bw_cases_free(&all);
    return code;
}
