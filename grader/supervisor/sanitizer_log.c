/* See sanitizer_log.h. compute-sanitizer writes each finding as a block of
 * lines that start with its mark "=========": a headline after one blank
 * ("========= Invalid __global__ read of size 2 bytes"), its details indented
 * further ("=========     at kernel+0x160 in file.cu:19", host frames), and
 * a bare mark closing the block. The banner and the "... SUMMARY:" lines
 * only count what the blocks already say. The kind is read off the headline;
 * only a kind known to be harmless (an API error) is free, so a headline
 * never seen before counts. */
#include <stdlib.h>
#include <string.h>
#include "sanitizer_log.h"
#include "text_buf.h"

#define MARK "========="
#define MARK_LEN 9

typedef struct {
    bw_text_buf t;
    int cut;
} text_buf;

/* Appends n bytes; past cap, one "cut" line instead. Out of memory leaves it short. */
static void tb_add(text_buf *b, const char *p, size_t n, size_t cap)
{
    if (b->cut)
        return;
    static const char cut_line[] = "[... sanitizer log cut]\n";
    if (b->t.len + n > cap) {
        b->cut = 1;
        p = cut_line;
        n = sizeof cut_line - 1;
    }
    bw_text_add(&b->t, p, n);
}

static int starts(const char *h, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(h, prefix, n) == 0;
}

bw_san_kind bw_sanitizer_kind(const char *h, size_t len)
{
    static const char *const hardware[] = {
        "Warp ", "Lane ", "Device Hardware", "Hardware ", "Out-of-range", "Misaligned",
        "Illegal ", "Invalid PC", "Invalid Address Space", "Malformed"};
    if (starts(h, len, "Program hit ") && bw_text_contains(h, len, " on CUDA API call to "))
        return BW_SAN_API_ERROR;
    if (starts(h, len, "Invalid __") || starts(h, len, "Malloc/Free error"))
        return BW_SAN_ACCESS;
    if (starts(h, len, "Uninitialized __"))
        return BW_SAN_UNINIT;
    if (starts(h, len, "Leaked "))
        return BW_SAN_LEAK;
    if (bw_text_contains(h, len, "Race reported") || bw_text_contains(h, len, " hazard detected"))
        return BW_SAN_RACE;
    for (size_t i = 0; i < sizeof hardware / sizeof hardware[0]; i++)
        if (starts(h, len, hardware[i]))
            return BW_SAN_HARDWARE;
    return BW_SAN_UNKNOWN;
}

const char *bw_san_kind_name(bw_san_kind k)
{
    static const char *const names[BW_SAN_KINDS] = {
        "api_error", "access", "hardware", "leak", "race", "uninitialized", "cut", "unknown"};
    return k >= 0 && k < BW_SAN_KINDS ? names[k] : "unknown";
}

/* Lines that say nothing of their own: the banner, a "XXX SUMMARY:" count,
 * and the worker's exit, which the case's outcome already records. */
static int dull(const char *h, size_t len)
{
    if (starts(h, len, "COMPUTE-SANITIZER") || starts(h, len, "Target application returned") ||
        starts(h, len, "Error: process didn't terminate successfully"))
        return 1;
    for (size_t i = 0; i < len; i++) {
        if (starts(h + i, len - i, "SUMMARY:"))
            return 1;
        if (!((h[i] >= 'A' && h[i] <= 'Z') || h[i] == ' '))
            return 0;
    }
    return 0;
}

/* Details written after a single blank (older releases indent nothing). */
static int detail_line(const char *h, size_t len)
{
    static const char *const details[] = {
        "at ", "by thread", "Address ", "Access ", "and ", "in ", "Saved host backtrace",
        "Host Frame", "Device Frame"};
    for (size_t i = 0; i < sizeof details / sizeof details[0]; i++)
        if (starts(h, len, details[i]))
            return 1;
    return 0;
}

typedef struct {
    const char *start, *end; /* the block's lines in the log, newline included */
    bw_san_kind kind;
    int open;
    int carried; /* the rest of a block whose headline came in the log before */
} block;

static void close_block(block *b, size_t cap, bw_sanitizer_findings *f, text_buf *costly,
                        text_buf *notes)
{
    if (!b->open)
        return;
    b->open = 0;
    if (b->carried) {
        /* Counted with the case whose log held its headline: shown only. */
        static const char rest[] = "(the rest of a finding reported with the case before)\n";
        if (b->end > b->start) {
            tb_add(notes, rest, sizeof rest - 1, cap);
            tb_add(notes, b->start, (size_t)(b->end - b->start), cap);
        }
        return;
    }
    f->count[b->kind]++;
    if (b->kind == BW_SAN_API_ERROR) {
        tb_add(notes, b->start, (size_t)(b->end - b->start), cap);
        return;
    }
    f->costly++;
    if (b->kind == BW_SAN_UNKNOWN) {
        static const char why[] = "bwgrade does not know this compute-sanitizer finding, so it "
                                  "counts as an error:\n";
        tb_add(costly, why, sizeof why - 1, cap);
    } else if (b->kind == BW_SAN_CUT) {
        static const char why[] = "compute-sanitizer wrote more for this case than bwgrade reads; "
                                  "what was cut could not be checked, so it counts as an error:\n";
        tb_add(costly, why, sizeof why - 1, cap);
    }
    tb_add(costly, b->start, (size_t)(b->end - b->start), cap);
    if (b->end > b->start && b->end[-1] != '\n')
        tb_add(costly, "\n", 1, cap);
}

void bw_sanitizer_sort(const char *log, size_t cap, int carry, bw_sanitizer_findings *f)
{
    memset(f, 0, sizeof *f);
    text_buf costly = {0}, notes = {0};
    const char *p = log ? log : "", *end = p + strlen(p);
    /* A block the log before ended in: its details may go on here. */
    block b = {p, p, carry >= 0 && carry < BW_SAN_KINDS ? (bw_san_kind)carry : BW_SAN_UNKNOWN,
               carry >= 0 && carry < BW_SAN_KINDS, 1};
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        size_t len = (size_t)((nl ? nl : end) - p);
        while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (starts(p, len, MARK)) {
            const char *h = p + MARK_LEN;
            size_t hlen = len - MARK_LEN, lead = 0;
            while (lead < hlen && (h[lead] == ' ' || h[lead] == '\t'))
                lead++;
            h += lead;
            hlen -= lead;
            if (hlen == 0 || dull(h, hlen)) {
                close_block(&b, cap, f, &costly, &notes);
            } else if (b.open && (lead >= 2 || detail_line(h, hlen))) {
                b.end = next;
            } else {
                /* A headline; an indented line with no block open is a
                 * detail of nothing known, hence unknown. */
                close_block(&b, cap, f, &costly, &notes);
                b = (block){p, next, lead >= 2 ? BW_SAN_UNKNOWN : bw_sanitizer_kind(h, hlen), 1, 0};
            }
        } else if (len > 0) {
            /* Not compute-sanitizer's: its own lines all carry the mark. The
             * supervisor's "[... N more bytes cut]" says part is missing. */
            close_block(&b, cap, f, &costly, &notes);
            int cut = starts(p, len, "[... ") && bw_text_contains(p, len, "cut]");
            b = (block){p, next, cut ? BW_SAN_CUT : BW_SAN_UNKNOWN, 1, 0};
            close_block(&b, cap, f, &costly, &notes);
        }
        p = next;
    }
    f->open_kind = b.open ? (int)b.kind : -1;
    close_block(&b, cap, f, &costly, &notes);
    f->costly_text = costly.t.s;
    f->note_text = notes.t.s;
}

void bw_sanitizer_findings_free(bw_sanitizer_findings *f)
{
    if (!f)
        return;
    free(f->costly_text);
    free(f->note_text);
    f->costly_text = f->note_text = NULL;
}
