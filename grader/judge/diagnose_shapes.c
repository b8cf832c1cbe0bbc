/* The patterns of a reduction's results and of a matrix exercise's wrong
 * elements (diagnose_state.h). A reduction's spike cases hold zeros and a
 * few powers of two at chosen indices, so every sum of them is exact in any
 * order: a result off by exactly some of those powers names the elements
 * lost or added twice. A matrix check tests each wrong element against a
 * copy, the rows-and-cols-swapped rule and the edge tiles (check_matrix.c). */
#include <math.h>
#include <stdint.h>
#include "case_data.h"
#include "diagnose_state.h"
#include "inputs.h"

/* ---- a reduction --------------------------------------------------------- */

/* A case whose result was read and judged wrong, with a finite exact sum. */
static int finite_wrong(const bw_case_result *r)
{
    return r->outcome == BW_OUTCOME_FAIL && r->shape.sum_checked && r->out.mismatches > 0 &&
           isfinite(r->shape.sum_exact);
}

static double got_of(const diag_state *d, const bw_case_result *r)
{
    return bw_elem_to_double(bw_exercise_out_type(d->ex), r->shape.sum_got);
}

/* The result is the sum added onto the fill the output held. */
static int onto_fill(const diag_state *d, const bw_case_result *r)
{
    double fill = (double)BW_SUM_FILL, want = r->shape.sum_exact + fill, got = got_of(d, r);
    double ulp = bw_type_ulp_at(bw_exercise_out_type(d->ex), fabs(want) + r->shape.sum_bound);
    return isfinite(got) && fabs(got - want) <= r->shape.sum_bound + 2.0 * ulp;
}

/* A spike case's difference as spikes: 1 when got - exact is minus (lost) or
 * plus (twice) a sum of the case's spikes, whose bits go to *mask. */
static int spike_difference(const diag_state *d, int i, int *sign, unsigned *mask)
{
    const bw_case *c = &d->cases[i];
    const bw_case_result *r = &d->res[i];
    if (c->values != BW_VALUES_SPIKES || !finite_wrong(r))
        return 0;
    double diff = got_of(d, r) - r->shape.sum_exact;
    int64_t pos[BW_MAX_SPIKES];
    unsigned present = (1u << bw_spike_positions(c, pos)) - 1u;
    double a = fabs(diff);
    if (a < 1.0 || a > 255.0 || a != floor(a) || ((unsigned)a & ~present) != 0)
        return 0;
    *sign = diff < 0 ? -1 : 1;
    *mask = (unsigned)a;
    return 1;
}

/* "the elements at indices 0 (value 1) and 4095 (value 8)" */
static void name_spikes(sbuf *s, const bw_case *c, unsigned mask)
{
    int64_t pos[BW_MAX_SPIKES];
    int n = bw_spike_positions(c, pos), k = 0, total = 0;
    for (int b = 0; b < n; b++)
        total += (mask >> b) & 1u;
    sb_printf(s, total == 1 ? "the element at index " : "the elements at indices ");
    for (int b = 0; b < n; b++)
        if ((mask >> b) & 1u) {
            k++;
            sb_printf(s, "%s%lld (value %d)", k == 1 ? "" : k == total ? " and " : ", ",
                      (long long)pos[b], 1 << b);
        }
}

/* Where the named elements lie: the head, the tail, elsewhere. */
static void spike_hint(sbuf *s, const diag_state *d, const bw_case *c, unsigned mask)
{
    int64_t pos[BW_MAX_SPIKES];
    int n = bw_spike_positions(c, pos), head = 1, tail = 1;
    for (int b = 0; b < n; b++)
        if ((mask >> b) & 1u) {
            head &= pos[b] < d->vec;
            tail &= pos[b] >= c->n - d->vec;
        }
    if (head && tail)
        return;   /* too short to tell */
    if (tail)
        sb_printf(s, " They lie in the tail, after the last whole 16-byte vector: add the last "
                     "elements with a scalar loop bounded by i < n.");
    else if (head)
        sb_printf(s, " They lie in the head, before the first 16-byte boundary (offset=%d): "
                     "add those elements one by one before the vector loop.",
                  c->offset_elems);
}

static int detect_spikes(diag_state *d, int want_sign)
{
    /* The evidence: the first such case that lost (or doubled) some of its
     * spikes but not all (it shows which), best one long enough (n > 16)
     * that its head and tail lie apart; else the first. */
    int first = -1, k = 0, best = -1;
    unsigned first_mask = 0;
    for (int i = 0; i < d->count; i++) {
        int sign;
        unsigned mask;
        if (!spike_difference(d, i, &sign, &mask) || sign != want_sign)
            continue;
        int64_t pos[BW_MAX_SPIKES];
        unsigned present = (1u << bw_spike_positions(&d->cases[i], pos)) - 1u;
        int score = (mask != present) * 2 + (d->cases[i].n > 16);
        if (score > best) {
            best = score;
            first = i;
            first_mask = mask;
        }
        k++;
    }
    if (first < 0)
        return 0;
    const bw_case *c = &d->cases[first];
    sbuf s = {0};
    sb_printf(&s, want_sign < 0 ? "Elements are missing from the sum: "
                                : "Elements are counted twice: ");
    describe_failure_at(&s, d, first, 0);
    sb_printf(&s, ", so ");
    name_spikes(&s, c, first_mask);
    sb_printf(&s, want_sign < 0 ? " %s not added" : " %s added twice",
              __builtin_popcount(first_mask) == 1 ? "was" : "were");
    sb_printf(&s, " (%d case%s of zeros with a few powers of two show it).", k, k == 1 ? "" : "s");
    spike_hint(&s, d, c, first_mask);
    sb_printf(&s, want_sign < 0
                      ? " Every element must be added exactly once: check the bound test "
                        "(i < n), the head and the tail around the vector loop, and that the "
                        "grid covers n (a grid rounded down leaves out the last block)."
                      : " Every element must be added exactly once: check that the head, the "
                        "vector loop and the tail do not overlap, and that no two threads or "
                        "blocks start on the same element.");
    emit(d, want_sign < 0 ? BW_DIAG_LOST_ELEMENTS : BW_DIAG_COUNTED_TWICE, &s);
    return 1;
}

static int detect_not_zeroed(diag_state *d)
{
    int first = -1, k = 0;
    for (int i = 0; i < d->count; i++) {
        const bw_case_result *r = &d->res[i];
        if (!finite_wrong(r))
            continue;
        if (!onto_fill(d, r))
            return 0;
        if (first < 0)
            first = i;
        k++;
    }
    if (first < 0)
        return 0;
    sbuf s = {0};
    sb_printf(&s, "The result is the sum plus %.9g, the value the output held before the call "
                  "(%d case%s): ",
              (double)BW_SUM_FILL, k, k == 1 ? "" : "s");
    describe_failure(&s, d, first);
    sb_printf(&s, ". The output holds garbage on entry: set it (cudaMemsetAsync(sum, 0, "
                  "sizeof(float)) before adding into it with atomics, or write the final value "
                  "once) instead of adding to what is there.");
    emit(d, BW_DIAG_NOT_ZEROED, &s);
    return 1;
}

/* Close, but farther than any float summation lands; the spike cases, whose
 * sums are exact even in bf16, pass. */
static int detect_precision(diag_state *d)
{
    int worst = -1, spikes_pass = 0;
    double worst_ratio = 0;
    for (int i = 0; i < d->count; i++) {
        const bw_case_result *r = &d->res[i];
        if (d->cases[i].values == BW_VALUES_SPIKES && r->outcome == BW_OUTCOME_PASS)
            spikes_pass = 1;
        if (!failed(r))
            continue;
        /* A lost element fails the spike cases too, at their edges; a short
         * accumulator sums spikes exactly (powers 2^0..2^7 fit in bf16). */
        if (!finite_wrong(r) || d->cases[i].values == BW_VALUES_SPIKES ||
            d->cases[i].values == BW_VALUES_SPECIAL)
            return 0;
        double err = fabs(got_of(d, r) - r->shape.sum_exact);
        double ratio = r->shape.sum_bound > 0 ? err / r->shape.sum_bound : INFINITY;
        if (worst < 0 || ratio > worst_ratio) {
            worst = i;
            worst_ratio = ratio;
        }
    }
    if (worst < 0 || !spikes_pass)
        return 0;
    sbuf s = {0};
    sb_printf(&s, "The sums are close, but farther from the exact sum than any float summation "
                  "lands: ");
    describe_failure(&s, d, worst);
    sb_printf(&s, ". Accumulate in float: a bf16 running sum keeps 8 significant bits, so "
                  "every addition rounds, and once the sum is 256 times an element, adding "
                  "that element changes nothing.");
    emit(d, BW_DIAG_PRECISION, &s);
    return 1;
}

static int special_only(const diag_state *d, const bw_case *c, const bw_case_result *r)
{
    (void)d;
    (void)r;
    return c->values == BW_VALUES_SPECIAL;
}

static int some_other_pass(const diag_state *d)
{
    for (int i = 0; i < d->count; i++)
        if (d->res[i].outcome == BW_OUTCOME_PASS && d->cases[i].values != BW_VALUES_SPECIAL)
            return 1;
    return 0;
}

static int detect_sum_special(diag_state *d)
{
    if (!some_other_pass(d) || !all_failing(d, special_only))
        return 0;
    sbuf s = {0};
    sb_printf(&s, "Only the special cases fail (values near the top of the range, or a NaN or "
                  "infinities planted among ordinary values): ");
    describe_failure(&s, d, evidence_case(d));
    sb_printf(&s, ". A NaN anywhere makes the sum NaN, +Inf with -Inf makes NaN, and a sum "
                  "past the largest float is +Inf; do not skip values with comparisons, max/min "
                  "or clamping.");
    emit(d, BW_DIAG_SPECIAL_VALUES, &s);
    return 1;
}

int detect_sum_patterns(diag_state *d)
{
    int found = detect_sum_special(d);
    if (!found)
        found = detect_not_zeroed(d);
    if (!found) {
        found |= detect_spikes(d, -1);
        found |= detect_spikes(d, +1);
    }
    if (!found)
        found = detect_precision(d);
    return found;
}

/* ---- a matrix ------------------------------------------------------------- */

static int wrong_elements(const bw_case_result *r)
{
    return r->outcome == BW_OUTCOME_FAIL && r->out.mismatches > 0;
}

/* Every case with wrong elements has them all of one kind, and at least one does. */
static int every_wrong(const diag_state *d, int64_t (*kind)(const bw_case_result *, int), int q)
{
    int any = 0;
    for (int i = 0; i < d->count; i++) {
        const bw_case_result *r = &d->res[i];
        if (!failed(r))
            continue;
        if (!wrong_elements(r) || kind(r, q) != r->out.mismatches)
            return 0;
        any = 1;
    }
    return any;
}

static int64_t copy_like(const bw_case_result *r, int q)
{
    (void)q;
    return r->shape.copy_like;
}

static int64_t swap_like(const bw_case_result *r, int q)
{
    (void)q;
    return r->shape.swap_like;
}

/* Wrong elements whose source lies in the edge for tile q. */
static int64_t edge_wrong(const bw_case_result *r, int q)
{
    return r->out.mismatches - r->shape.interior_bad[q];
}

static int square_pass(const diag_state *d)
{
    for (int i = 0; i < d->count; i++)
        if (d->res[i].outcome == BW_OUTCOME_PASS && d->cases[i].rows == d->cases[i].cols &&
            d->cases[i].rows > 1)
            return 1;
    return 0;
}

static int tiled_pass(const diag_state *d, int64_t t)
{
    for (int i = 0; i < d->count; i++) {
        const bw_case *c = &d->cases[i];
        if (d->res[i].outcome == BW_OUTCOME_PASS && c->rows % t == 0 && c->cols % t == 0)
            return 1;
    }
    return 0;
}

/* Some failing case has whole t x t tiles (which it got right, when every
 * wrong element lies outside them): else "only the edge tiles are wrong"
 * says nothing, all of a thin matrix being edge. */
static int some_interior(const diag_state *d, int64_t t)
{
    for (int i = 0; i < d->count; i++)
        if (failed(&d->res[i]) && d->cases[i].rows >= t && d->cases[i].cols >= t)
            return 1;
    return 0;
}

static void matrix_sentence(diag_state *d, bw_diag_code code, const char *lead, const char *hint)
{
    sbuf s = {0};
    sb_printf(&s, "%s", lead);
    describe_failure_at(&s, d, evidence_case(d), 1);
    sb_printf(&s, ". %s", hint);
    emit(d, code, &s);
}

int detect_matrix_patterns(diag_state *d)
{
    static const int64_t tiles[3] = {16, 32, 64};
    if (some_other_pass(d) && all_failing(d, special_only)) {
        matrix_sentence(d, BW_DIAG_SPECIAL_VALUES,
                        "Only the cases that hold every bit pattern (NaN payloads, infinities, "
                        "subnormals) fail: ",
                        "Move the 16-bit patterns as they are (unsigned short, or a copy of the "
                        "nv_bfloat16): arithmetic or a round trip through float quiets a NaN and "
                        "changes its payload.");
        return 1;
    }
    if (every_wrong(d, copy_like, 0)) {
        matrix_sentence(d, BW_DIAG_COPIED,
                        "Copied, not transposed: every wrong element holds the input element at "
                        "its own index. ",
                        "Element (r, c) of in, at in[r * cols + c], goes to out[c * rows + r]: "
                        "the output's rows are the input's columns.");
        return 1;
    }
    if (square_pass(d) && every_wrong(d, swap_like, 0)) {
        matrix_sentence(d, BW_DIAG_DIMS_SWAPPED,
                        "Rows and cols are swapped: square shapes pass, and every wrong element "
                        "holds what a transpose of a cols x rows input would put there. ",
                        "in is rows x cols (row r starts at in[r * cols]); out is cols x rows "
                        "(row c starts at out[c * rows]).");
        return 1;
    }
    for (int q = 0; q < 3; q++)
        if (tiled_pass(d, tiles[q]) && some_interior(d, tiles[q]) && every_wrong(d, edge_wrong, q)) {
            sbuf s = {0};
            sb_printf(&s, "Edge tiles are missing: every wrong element comes from the last "
                          "partial tile of rows or columns (tiles of %lld), and shapes that are "
                          "whole multiples of %lld pass. ",
                      (long long)tiles[q], (long long)tiles[q]);
            describe_failure_at(&s, d, evidence_case(d), 1);
            sb_printf(&s, ". A tile that reaches past the last row or column must still do its "
                          "part: bound every load by r < rows and c < cols, and every store by "
                          "the output's bounds, instead of skipping the tile.");
            emit(d, BW_DIAG_EDGE_TILES, &s);
            return 1;
        }
    return 0;
}
