/* bwgrade: the command line (docs/ARCHITECTURE.md fixes it). Parses the
 * arguments, answers `list` and `cases` itself, hands `test` and `bench` to
 * their modes. Exit codes: 0 passed, 1 failed, 2 usage error, 3 could not run. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench_mode.h"
#include "cases.h"
#include "exercise.h"
#include "once_mode.h"
#include "sandbox.h"
#include "containment.h"
#include "test_mode.h"

#define EXIT_USAGE 2

static const char usage_text[] =
    "usage:\n"
    "  bwgrade list\n"
    "  bwgrade cases EXERCISE [--seed S] [--hidden]\n"
    "  bwgrade test EXERCISE --worker PATH [--seed S] [--case K] [--hidden]\n"
    "               [--groups LIST] [--group-fail-fast] [--fail-fast]\n"
    "               [--sanitize TOOLS] [--case-limit S] [--device-lock FILE]\n"
    "               [--json FILE] [--quiet] [--baseline-worker PATH]\n"
    "               [--sandbox BWRAP [--hide PATHS]] [--contain]\n"
    "  bwgrade bench EXERCISE --worker PATH [--label NAME] [--sizes N,N,... | RxC,RxC,...]\n"
    "                [--offsets K,K,...] [--no-copy] [--quick] [--profile-calls K]\n"
    "                [--json FILE] [--sandbox BWRAP [--hide PATHS]] [--contain]\n"
    "                [--baseline-worker PATH]\n"
    "  bwgrade once EXERCISE --worker PATH (--n N | --rows R --cols C) [--offset K] [--seed S]\n"
    "\n"
    "  list      the exercises: name, shape, scalars, arrays (name:type:role:extent),\n"
    "            summary (tab-separated; lists comma-separated, - when empty)\n"
    "  cases     the case table for a seed\n"
    "  test      run every case (or case K) in the worker and check the results\n"
    "  bench     measure bandwidth; only after a correctness check passes\n"
    "  once      one checked call at size N (for profilers: only those kernels run)\n"
    "\n"
    "  --seed S        case seed (default: $BWLAB_SEED, else the public seed);\n"
    "                  --seed - reads it from standard input\n"
    "  --hidden        add the instructor's extra cases\n"
    "  --groups LIST   only the cases of these groups: small, medium, large,\n"
    "                  special, huge (comma-separated; default: every group, or\n"
    "                  small, medium and special under --sanitize)\n"
    "  --group-fail-fast  once a case of a group fails, skip that group's other\n"
    "                  cases (they are reported 'not run'; the group has failed)\n"
    "  --fail-fast     cheapest groups first; stop after a hang, or once a group\n"
    "                  has run to its end with a failure (the rest: 'not run')\n"
    "  --sanitize T    run under compute-sanitizer: memcheck, racecheck, initcheck,\n"
    "                  a comma-separated list of them, or all\n"
    "  --case-limit S  each case's time limit is at most S seconds (run.py grade\n"
    "                  sets it for a memcheck run after the plain test hung)\n"
    "  --device-lock FILE  a lock file shared by bwgrade processes testing on\n"
    "                  this GPU at once: one case with over 1 GiB of device\n"
    "                  arrays, and over a quarter of the device's memory, runs\n"
    "                  at a time (created if missing)\n"
    "  --json FILE     also write the results as JSON (- for stdout)\n"
    "  --quiet         one summary line instead of the report\n"
    "  --sizes LIST    element counts: N, 2^P, 2^P+K or 2^P-K, 1 to 2^31-1; for a\n"
    "                  matrix exercise shapes RxC (each a count, R * C <= 2^31-1)\n"
    "  --offsets LIST  pointer offsets in elements, 0 to 127 (fp32 arrays: 0 to 63)\n"
    "  --rows R --cols C  once, a matrix exercise: the shape of the call\n"
    "  --quick         one large size, shorter sampling\n"
    "  --sandbox BWRAP run each worker inside bubblewrap (the bwrap executable):\n"
    "                  no network, read-only files but its private HOME/TMPDIR,\n"
    "                  the GPU's device nodes, killed with the grader\n"
    "  --hide PATHS    with --sandbox: ':'-separated paths made invisible inside\n"
    "  --baseline-worker PATH  the worker with no student code (default:\n"
    "                  bw_worker_baseline beside bwgrade): it says, before any\n"
    "                  student code runs, how much device memory is free (which\n"
    "                  cases fit); in bench it also times the copies and the\n"
    "                  per-call costs the grader's clock is compared with\n"
    "  --contain       without --sandbox: as root, run each worker as the user\n"
    "                  $BWLAB_WORKER_USER (default nobody); each in its own PID\n"
    "                  namespace where the kernel allows, else sweep up the\n"
    "                  processes it left (docs/SECURITY.md); the JSON's\n"
    "                  \"containment\" says what was in force\n"
    "  --profile-calls K  for a profiler (ncu --profile-from-start off): after the\n"
    "                  warmup, K more calls timed as the samples are, each bracketed\n"
    "                  alone with cudaProfilerStart/Stop; then one sample only:\n"
    "                  under a profiler the figures are not a measurement; with\n"
    "                  --no-copy too, no baseline worker is started (a\n"
    "                  --baseline-worker path goes unused): a second CUDA\n"
    "                  process changes what ncu measures\n"
    "\n"
    "exit status: 0 everything passed, 1 something failed, 2 usage error,\n"
    "             3 could not run (no CUDA device, worker would not start)\n";

/* One line: run.py starts bwgrade once per exercise, and the whole usage
 * text after each refusal buried the line that says what was wrong. */
__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bwgrade: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (bwgrade --help shows the usage)\n", stderr);
    return EXIT_USAGE;
}

/* What the command line said; NULL / 0 where it said nothing. */
typedef struct {
    const char *exercise;
    const char *worker, *seed, *case_k, *groups, *sanitize, *json, *label, *sizes, *offsets;
    const char *n, *rows, *cols, *offset, *profile_calls, *sandbox, *hide, *device_lock, *case_limit;
    const char *baseline_worker;
    int hidden, quiet, no_copy, quick, group_fail_fast, fail_fast, contain, help;
} args;

enum { CMD_LIST = 1, CMD_CASES = 2, CMD_TEST = 4, CMD_BENCH = 8, CMD_ONCE = 16 };

typedef struct {
    const char *name;
    int commands;           /* where it is accepted */
    size_t value_at;        /* offset of its const char * in args, or ... */
    size_t flag_at;         /* ... of its int flag */
    int takes_value;
} option;

#define VAL(field, cmds) {"--" #field, cmds, offsetof(args, field), 0, 1}
#define FLAG(name, field, cmds) {name, cmds, 0, offsetof(args, field), 0}

static const option options[] = {
    VAL(worker, CMD_TEST | CMD_BENCH | CMD_ONCE),
    VAL(seed, CMD_CASES | CMD_TEST | CMD_ONCE),
    VAL(n, CMD_ONCE),
    VAL(rows, CMD_ONCE),
    VAL(cols, CMD_ONCE),
    VAL(offset, CMD_ONCE),
    {"--case", CMD_TEST, offsetof(args, case_k), 0, 1},
    VAL(groups, CMD_TEST),
    VAL(sanitize, CMD_TEST),
    VAL(json, CMD_TEST | CMD_BENCH),
    VAL(label, CMD_BENCH),
    VAL(sizes, CMD_BENCH),
    VAL(offsets, CMD_BENCH),
    {"--profile-calls", CMD_BENCH, offsetof(args, profile_calls), 0, 1},
    VAL(sandbox, CMD_TEST | CMD_BENCH),
    VAL(hide, CMD_TEST | CMD_BENCH),
    {"--device-lock", CMD_TEST, offsetof(args, device_lock), 0, 1},
    {"--case-limit", CMD_TEST, offsetof(args, case_limit), 0, 1},
    {"--baseline-worker", CMD_TEST | CMD_BENCH, offsetof(args, baseline_worker), 0, 1},
    FLAG("--hidden", hidden, CMD_CASES | CMD_TEST),
    FLAG("--quiet", quiet, CMD_TEST),
    FLAG("--group-fail-fast", group_fail_fast, CMD_TEST),
    FLAG("--fail-fast", fail_fast, CMD_TEST),
    FLAG("--no-copy", no_copy, CMD_BENCH),
    FLAG("--quick", quick, CMD_BENCH),
    FLAG("--contain", contain, CMD_TEST | CMD_BENCH),
};

/* Parses argv[2..] for command cmd. Returns 0 or an exit code. */
static int parse_args(int argc, char **argv, int cmd, args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            a->help = 1;
            return 0;
        }
        if (strncmp(arg, "--", 2) != 0) {
            if (a->exercise)
                return usage_error("unexpected argument '%s'", arg);
            a->exercise = arg;
            continue;
        }
        /* --name=value or --name value */
        const char *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        const option *opt = NULL;
        for (size_t k = 0; k < sizeof options / sizeof options[0]; k++)
            if (strlen(options[k].name) == name_len && strncmp(options[k].name, arg, name_len) == 0)
                opt = &options[k];
        if (!opt || !(opt->commands & cmd))
            return usage_error("unknown option '%s' for this command", arg);
        if (!opt->takes_value) {
            if (eq)
                return usage_error("option '%s' takes no value", arg);
            *(int *)(void *)((char *)a + opt->flag_at) = 1;
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value)
            return usage_error("option '%s' needs a value", arg);
        *(const char **)(void *)((char *)a + opt->value_at) = value;
    }
    return 0;
}

/* A decimal (or 0x hex) unsigned number filling the whole string. */
static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || !(s[0] >= '0' && s[0] <= '9'))
        return -1;
    int base = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, base);
    if (errno || *end)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Element counts as people write them: 1000, 2^20, 2^26+5, 2^28-1. */
static int parse_size(const char *s, size_t len, int64_t *out)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, s, len);
    copy[len] = '\0';
    int rc = -1;
    int64_t v = 0;
    char *end;
    if (len >= 2 && copy[0] == '2' && copy[1] == '^') {
        errno = 0;
        long p = strtol(copy + 2, &end, 10);
        if (!errno && end != copy + 2 && p >= 0 && p <= 31) {
            v = (int64_t)1 << p;
            if (*end == '\0') {
                rc = 0;
            } else if ((*end == '+' || *end == '-') && end[1] >= '0' && end[1] <= '9') {
                int sign = *end == '+' ? 1 : -1;
                char *end2;
                long long k = strtoll(end + 1, &end2, 10);
                if (!errno && *end2 == '\0' && k <= INT_MAX) {
                    v += sign * (int64_t)k;
                    rc = 0;
                }
            }
        }
    } else {
        uint64_t u;
        if (parse_u64(copy, &u) == 0 && u <= (uint64_t)INT_MAX) {
            v = (int64_t)u;
            rc = 0;
        }
    }
    free(copy);
    if (rc == 0 && (v < 1 || v > INT_MAX))
        rc = -1;
    if (rc == 0)
        *out = v;
    return rc;
}

/* One size: an element count (matrix 0) or a shape RxC (matrix 1), each
 * side a count and their product at most 2^31 - 1. */
static int parse_one(const char *s, size_t len, int matrix, bw_size *out)
{
    if (!matrix) {
        out->rows = 0;
        return parse_size(s, len, &out->cols);
    }
    const char *x = memchr(s, 'x', len);
    if (!x || parse_size(s, (size_t)(x - s), &out->rows) != 0 ||
        parse_size(x + 1, len - (size_t)(x - s) - 1, &out->cols) != 0)
        return -1;
    return out->rows * out->cols <= INT_MAX ? 0 : -1;
}

/* Splits a comma list, calling parse on each item. Returns the count (>0) and
 * a malloc'd array, or -1 naming nothing (the caller reports the option). */
static int parse_sizes(const char *list, int matrix, bw_size **out)
{
    int count = 1;
    for (const char *p = list; *p; p++)
        count += *p == ',';
    bw_size *v = malloc(sizeof *v * (size_t)count);
    if (!v)
        return -1;
    const char *p = list;
    for (int i = 0; i < count; i++) {
        size_t len = strcspn(p, ",");
        if (len == 0 || parse_one(p, len, matrix, &v[i]) != 0) {
            free(v);
            return -1;
        }
        p += len + 1;
    }
    *out = v;
    return count;
}

/* Offsets in elements below max (the bytes stay below 256: image.h). */
static int parse_offsets(const char *list, int max, int **out)
{
    int count = 1;
    for (const char *p = list; *p; p++)
        count += *p == ',';
    int *v = malloc(sizeof *v * (size_t)count);
    if (!v)
        return -1;
    const char *p = list;
    for (int i = 0; i < count; i++) {
        size_t len = strcspn(p, ",");
        char *copy = len ? malloc(len + 1) : NULL;
        uint64_t u = 0;
        int ok = 0;
        if (copy) {
            memcpy(copy, p, len);
            copy[len] = '\0';
            ok = parse_u64(copy, &u) == 0 && u < (uint64_t)max;
            free(copy);
        }
        if (!ok) {
            free(v);
            return -1;
        }
        v[i] = (int)u;
        p += len + 1;
    }
    *out = v;
    return count;
}

/* --seed -: one line on standard input, so that a secret seed never shows in
 * the process's command line (readable in /proc by any process of the user). */
static int seed_from_stdin(uint64_t *seed)
{
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL)
        return usage_error("--seed - reads the seed from standard input, which was empty");
    line[strcspn(line, "\r\n")] = '\0';
    if (parse_u64(line, seed) != 0)
        return usage_error("the seed on standard input must be a non-negative integer");
    return 0;
}

/* --seed, else $BWLAB_SEED, else the public seed. */
static int resolve_seed(const args *a, uint64_t *seed)
{
    if (a->seed && strcmp(a->seed, "-") == 0)
        return seed_from_stdin(seed);
    if (a->seed) {
        if (parse_u64(a->seed, seed) != 0)
            return usage_error("--seed needs a non-negative integer, not '%s'", a->seed);
        return 0;
    }
    const char *env = getenv("BWLAB_SEED");
    if (env && *env) {
        if (parse_u64(env, seed) != 0)
            return usage_error("BWLAB_SEED must be a non-negative integer, not '%s'", env);
        return 0;
    }
    *seed = BW_PUBLIC_SEED;
    return 0;
}

static const bw_exercise *need_exercise(const args *a, int *code)
{
    if (!a->exercise) {
        *code = usage_error("which exercise? (bwgrade list shows them)");
        return NULL;
    }
    const bw_exercise *ex = bw_exercise_find(a->exercise);
    if (!ex) {
        fprintf(stderr, "bwgrade: unknown exercise '%s'; there are:", a->exercise);
        for (int i = 0; i < bw_exercise_count(); i++)
            fprintf(stderr, " %s", bw_exercise_at(i)->name);
        fputc('\n', stderr);
        *code = EXIT_USAGE;
    }
    return ex;
}

static int cmd_list(void)
{
    for (int i = 0; i < bw_exercise_count(); i++) {
        const bw_exercise *ex = bw_exercise_at(i);
        printf("%s\t%s\t", ex->name, bw_shape_name(ex->shape));
        for (int k = 0; k < ex->n_scalars; k++)
            printf("%s%s", k ? "," : "", ex->scalars[k]);
        printf("%s\t", ex->n_scalars ? "" : "-");
        for (int k = 0; k < ex->n_arrays; k++) {
            const bw_array_decl *a = &ex->arrays[k];
            printf("%s%s:%s:%s:%s", k ? "," : "", a->name, bw_type_name(a->type),
                   bw_role_name(a->role), bw_extent_name(a->extent));
        }
        printf("\t%s\n", ex->summary);
    }
    return 0;
}

static int cmd_cases(const bw_exercise *ex, uint64_t seed, int hidden)
{
    bw_case_list list = {0};
    if (bw_cases_generate(ex, seed, hidden, &list) != 0) {
        fprintf(stderr, "bwgrade: out of memory generating the cases\n");
        return 3;
    }
    printf("# %s, seed %" PRIu64 "%s: %d cases\n", ex->name, seed,
           hidden ? ", hidden cases included" : "", list.count);
    const int matrix = ex->shape == BW_SHAPE_MATRIX;
    printf("%6s  %-7s  %10s  %6s  %-14s  %-10s  %s%s\n", "index", "group", "n", "offset", "alpha",
           "alpha_kind", "values", matrix ? "  rows x cols" : "");
    for (int i = 0; i < list.count; i++) {
        const bw_case *c = &list.items[i];
        printf("%6d  %-7s  %10" PRId64 "  %6d  %-14.9g  %-10s  %s", c->index,
               bw_case_group_name(c->group), c->n, c->offset_elems, (double)c->alpha,
               c->alpha_kind ? c->alpha_kind : "-", bw_value_class_name(c->values));
        if (matrix)
            printf("  %" PRId64 " x %" PRId64, c->rows, c->cols);
        putchar('\n');
    }
    bw_cases_free(&list);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("no command given");
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    const char *problem = bw_exercise_table_problem();
    if (problem) {
        fprintf(stderr, "bwgrade: %s\n", problem);
        return 3;
    }
    int cmd = strcmp(name, "list") == 0    ? CMD_LIST
              : strcmp(name, "cases") == 0 ? CMD_CASES
              : strcmp(name, "test") == 0  ? CMD_TEST
              : strcmp(name, "bench") == 0 ? CMD_BENCH
              : strcmp(name, "once") == 0  ? CMD_ONCE
                                           : 0;
    if (!cmd)
        return usage_error("unknown command '%s'", name);

    args a;
    int code = parse_args(argc, argv, cmd, &a);
    if (code)
        return code;
    if (a.help) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (a.hide && !a.sandbox)
        return usage_error("--hide needs --sandbox");
    if (a.sandbox && access(a.sandbox, X_OK) != 0)
        return usage_error("--sandbox: '%s' is not an executable (install bubblewrap)", a.sandbox);
    if (a.sandbox && bw_sandbox_set(a.sandbox, a.hide) != 0) {
        fputs("bwgrade: out of memory\n", stderr);
        return 3;
    }
    if (a.contain) {
        char *cwhy = NULL;
        if (bw_contain_set(1, &cwhy) != 0) {
            fprintf(stderr, "bwgrade: --contain: %s\n", cwhy != NULL ? cwhy : "out of memory");
            free(cwhy);
            return EXIT_USAGE;
        }
    }
    if (cmd == CMD_LIST) {
        if (a.exercise)
            return usage_error("unexpected argument '%s'", a.exercise);
        return cmd_list();
    }
    const bw_exercise *ex = need_exercise(&a, &code);
    if (!ex)
        return code;
    uint64_t seed;
    if ((code = resolve_seed(&a, &seed)) != 0)
        return code;
    if (cmd == CMD_CASES)
        return cmd_cases(ex, seed, a.hidden);

    if (!a.worker)
        return usage_error("--worker PATH is required (run.py builds and passes it)");

    const int max_off = bw_exercise_max_offset(ex);
    if (cmd == CMD_ONCE) {
        bw_size *size = NULL;
        int *off = NULL;
        char one[64];
        if (ex->shape == BW_SHAPE_MATRIX) {
            if (a.n || !a.rows || !a.cols)
                return usage_error("%s is a matrix exercise: give --rows R --cols C, not --n",
                                   ex->name);
            snprintf(one, sizeof one, "%.28sx%.28s", a.rows, a.cols);
        } else {
            if (a.rows || a.cols || !a.n)
                return usage_error("--n takes one element count 1..2^31-1 (N, 2^P, 2^P+K, 2^P-K)%s",
                                   a.rows || a.cols ? "; --rows and --cols are for a matrix exercise"
                                                    : "");
            snprintf(one, sizeof one, "%.60s", a.n);
        }
        if (parse_sizes(one, ex->shape == BW_SHAPE_MATRIX, &size) != 1) {
            free(size);
            return usage_error(ex->shape == BW_SHAPE_MATRIX
                                   ? "--rows and --cols take counts 1..2^31-1 whose product is at "
                                     "most 2^31-1"
                                   : "--n takes one element count 1..2^31-1 (N, 2^P, 2^P+K, 2^P-K)");
        }
        if (a.offset && parse_offsets(a.offset, max_off, &off) != 1) {
            free(size);
            free(off);
            return usage_error("--offset takes one element offset 0..%d", max_off - 1);
        }
        code = bw_once_main(ex, a.worker, size[0], off ? off[0] : 0, seed);
        free(size);
        free(off);
        return code;
    }

    if (cmd == CMD_TEST) {
        bw_test_opts o = {0};
        o.ex = ex;
        o.worker_path = a.worker;
        o.seed = seed;
        o.hidden = a.hidden;
        o.case_index = -1;
        o.json_path = a.json;
        o.quiet = a.quiet;
        o.group_fail_fast = a.group_fail_fast;
        o.fail_fast = a.fail_fast;
        o.device_lock = a.device_lock;
        o.baseline_worker = a.baseline_worker;
        if (a.case_k) {
            uint64_t k;
            if (parse_u64(a.case_k, &k) != 0 || k > INT_MAX)
                return usage_error("--case needs a case index (0, 1, ...), not '%s'", a.case_k);
            o.case_index = (int)k;
        }
        if (a.groups) {
            if (a.case_k)
                return usage_error("--case and --groups do not go together");
            if (bw_parse_groups(a.groups, &o.groups) <= 0)
                return usage_error("--groups takes small, medium, large, special, huge, "
                                   "comma-separated; not '%s'", a.groups);
        }
        if (a.case_limit) {
            char *end = NULL;
            double lim = strtod(a.case_limit, &end);
            if (end == a.case_limit || *end != '\0' || !(lim >= 1.0 && lim <= 86400.0))
                return usage_error("--case-limit takes seconds from 1 to 86400, not '%s'",
                                   a.case_limit);
            o.case_limit_s = lim;
        }
        if (a.sanitize) {
            const char *tools[BW_MAX_SANITIZERS];
            if (bw_parse_sanitizers(a.sanitize, tools) <= 0)
                return usage_error("--sanitize takes memcheck, racecheck, initcheck, a comma "
                                   "list of them, or all; not '%s'", a.sanitize);
            o.sanitize = a.sanitize;
        }
        return bw_test_main(&o);
    }

    bw_bench_opts o = {0};
    o.ex = ex;
    o.worker_path = a.worker;
    o.label = a.label ? a.label : "student";
    o.baseline_worker = a.baseline_worker;
    o.no_copy = a.no_copy;
    o.quick = a.quick;
    if (a.profile_calls) {
        uint64_t k;
        if (parse_u64(a.profile_calls, &k) != 0 || k < 1 || k > 1000)
            return usage_error("--profile-calls takes a count from 1 to 1000, not '%s'",
                               a.profile_calls);
        o.profile_calls = (int)k;
    }
    o.json_path = a.json;
    o.seed = seed;
    bw_size *sizes = NULL;
    int *offsets = NULL;
    if (a.sizes) {
        o.n_sizes = parse_sizes(a.sizes, ex->shape == BW_SHAPE_MATRIX, &sizes);
        if (o.n_sizes <= 0)
            return usage_error(ex->shape == BW_SHAPE_MATRIX
                                   ? "--sizes takes shapes RxC (R and C counts 1..2^31-1, R * C "
                                     "at most 2^31-1), comma-separated; not '%s'"
                                   : "--sizes takes element counts 1..2^31-1 (N, 2^P, 2^P+K, "
                                     "2^P-K), comma-separated; not '%s'",
                               a.sizes);
        o.sizes = sizes;
    }
    if (a.offsets) {
        o.n_offsets = parse_offsets(a.offsets, max_off, &offsets);
        if (o.n_offsets <= 0) {
            free(sizes);
            return usage_error("--offsets takes element offsets 0..%d, comma-separated; "
                               "not '%s'", max_off - 1, a.offsets);
        }
        o.offsets = offsets;
    }
    code = bw_bench_main(&o);
    free(sizes);
    free(offsets);
    return code;
}
