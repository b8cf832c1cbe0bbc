/* The patterns of an elementwise exercise's numbers: where in the arrays
 * the wrong elements lie (the head, the tail), which cases fail (misaligned,
 * ragged, the largest, special values) and by how much (rounding). The head
 * and the largest cases also serve the other shapes (diagnose.c). */
#include <stdint.h>
#include "diagnose_state.h"

/* "8 bf16", "4 floats": one 16-byte vector of the arrays' elements. */
static const char *vector_of(const diag_state *d)
{
    switch (bw_exercise_out_type(d->ex)) {
    case BW_F32: return "4 floats";
    case BW_F16: return "8 fp16";
    default: return "8 bf16";
    }
}

/* Where the type's largest magnitudes lie. */
static const char *top_of(bw_type t) { return t == BW_F16 ? "2^15" : "2^127"; }

static const char *rounding_hint(bw_type t)
{
    switch (t) {
    case BW_F32:
        return ". Compute in float with one rounding (fmaf) or a float multiply, then an add; "
               "no approximate or round-toward-zero intrinsics (__fmul_rz, __fmaf_rz), no "
               "fast-math.";
    case BW_F16:
        return ". Convert float to fp16 with round-to-nearest-even (__float2half_rn), not by "
               "cutting bits, and round once, at the end.";
    default:
        return ". Convert float to bf16 with round-to-nearest-even (__float2bfloat16 or "
               "__float2bfloat16_rn), not by keeping the top 16 bits, and round once, "
               "at the end.";
    }
}

locations locate(const diag_state *d)
{
    locations L = {0, 1, 1};
    for (int i = 0; i < d->count; i++) {
        const bw_case_result *r = &d->res[i];
        const bw_case *c = &d->cases[i];
        if (r->outcome != BW_OUTCOME_FAIL || r->out.mismatches <= 0 || c->n <= 16)
            continue;
        L.located++;
        if (r->out.last_bad >= 8)
            L.all_head = 0;
        if (r->out.first_bad < c->n - 8)
            L.all_tail = 0;
    }
    if (!L.located)
        L.all_head = L.all_tail = 0;
    return L;
}

static int offset_zero(const diag_state *d, const bw_case *c)
{
    (void)d;
    return c->offset_elems == 0;
}

static int whole_vectors(const diag_state *d, const bw_case *c) { return c->n % d->vec == 0; }

static int offset_of(const diag_state *d, const bw_case *c)
{
    (void)d;
    return c->offset_elems % 256;
}

static int rest_of(const diag_state *d, const bw_case *c) { return (int)(c->n % d->vec); }

static int has_offset(const diag_state *d, const bw_case *c, const bw_case_result *r)
{
    (void)d;
    (void)r;
    return c->offset_elems != 0;
}

static int ragged(const diag_state *d, const bw_case *c, const bw_case_result *r)
{
    (void)r;
    return c->n % d->vec != 0;
}

static int is_large(const diag_state *d, const bw_case *c, const bw_case_result *r)
{
    (void)d;
    (void)r;
    return c->n > ((int64_t)1 << 20);
}

static int is_huge(const diag_state *d, const bw_case *c, const bw_case_result *r)
{
    (void)d;
    (void)r;
    return c->group == BW_GROUP_HUGE;
}

static int special_values(const diag_state *d, const bw_case *c, const bw_case_result *r)
{
    (void)d;
    (void)r;
    return c->values == BW_VALUES_SPECIAL;
}

static int cancel_values(const diag_state *d, const bw_case *c, const bw_case_result *r)
{
    (void)d;
    (void)r;
    return c->values == BW_VALUES_CANCEL;
}

static int small_error(const diag_state *d, const bw_case *c, const bw_case_result *r)
{
    (void)d;
    (void)c;
    return plain_wrong(r) && r->out.max_ulps <= 4.0;
}

static int wrong_output(const diag_state *d, const bw_case *c, const bw_case_result *r)
{
    (void)d;
    (void)c;
    return plain_wrong(r);
}

int detect_head(diag_state *d, const locations *L)
{
    int f = d->first_fail;
    int offset_only = all_failing(d, has_offset) && similar_pass(d, f, offset_zero) &&
                      distinct_failing(d, offset_of) >= 2;
    if (!(L->all_head || (offset_only && !L->all_tail)))
        return 0;
    int e = evidence_case(d);
    const bw_case *c = &d->cases[e];
    sbuf s = {0};
    if (offset_only)
        sb_printf(&s, "Only cases whose arrays do not start on a 16-byte boundary fail "
                      "(offset != 0; every failing case has one, and offset-0 cases of "
                      "similar n pass). ");
    else
        sb_printf(&s, "Only the first elements are wrong (all wrong elements have index < 8). ");
    describe_failure_at(&s, d, e, 1);
    sb_printf(&s, ". The arrays are only %d-byte aligned: with offset=%d the first 16-byte "
                  "aligned element is index %d, so handle the head elements one by one "
                  "before using vector loads and stores.",
              16 / d->vec, c->offset_elems, (d->vec - c->offset_elems % d->vec) % d->vec);
    emit(d, BW_DIAG_HEAD, &s);
    return 1;
}

int detect_tail(diag_state *d, const locations *L)
{
    int f = d->first_fail;
    int ragged_only = all_failing(d, ragged) && similar_pass(d, f, whole_vectors) &&
                      distinct_failing(d, rest_of) >= 2;
    if (!(L->all_tail || (ragged_only && !L->all_head)))
        return 0;
    int e = evidence_case(d);
    const bw_case *c = &d->cases[e];
    sbuf s = {0};
    const char *elems = vector_of(d);
    if (ragged_only)
        sb_printf(&s, "Only cases whose n is not a multiple of %d fail, while multiples of %d "
                      "pass. ",
                  d->vec, d->vec);
    else
        sb_printf(&s, "Only the last elements are wrong (all within the last %d). ", d->vec);
    describe_failure_at(&s, d, e, 1);
    int rest = (int)(c->n % d->vec);
    if (rest)
        sb_printf(&s, ". A vector of %s is 16 bytes (%s); with n=%lld the "
                      "last %d element%s not fill one and need%s a scalar loop with the bound "
                      "test i < n.",
                  elems, d->vec == 8 ? "one uint4/float4" : "one float4", (long long)c->n, rest,
                  rest == 1 ? " does" : "s do", rest == 1 ? "s" : "");
    else
        sb_printf(&s, ". Check how the last elements are reached: the bound test must be "
                      "i < n (not i < n - 1), and the last vector of %s (16 bytes) must be "
                      "stored too.",
                  elems);
    emit(d, BW_DIAG_TAIL, &s);
    return 1;
}

int detect_large_n(diag_state *d)
{
    int any_pass = 0;
    int64_t largest_pass = 0;
    for (int i = 0; i < d->count; i++)
        if (d->res[i].outcome == BW_OUTCOME_PASS) {
            any_pass = 1;
            if (d->cases[i].n > largest_pass)
                largest_pass = d->cases[i].n;
        }
    if (!any_pass || !all_failing(d, is_large))
        return 0;
    int smallest = d->first_fail;
    for (int i = 0; i < d->count; i++)
        if (failed(&d->res[i]) && d->cases[i].n < d->cases[smallest].n)
            smallest = i;
    sbuf s = {0};
    if (all_failing(d, is_huge) && d->ex->shape == BW_SHAPE_MATRIX) {
        sb_printf(&s, "Only the largest shapes fail (rows * cols near 2^31): ");
        describe_failure(&s, d, smallest);
        sb_printf(&s, ". rows * cols fits in an int, but r * cols + c for a thread of a "
                      "rounded-up grid, the number of tiles times the tile size, or %d * i as "
                      "a byte offset passes 2^31 - 1 and wraps negative: compute indices and "
                      "sizes in size_t or long long.",
                  16 / d->vec);
    } else if (all_failing(d, is_huge)) {
        sb_printf(&s, "Only n = 2147483647 (2^31 - 1) fails: ");
        describe_failure(&s, d, smallest);
        sb_printf(&s, ". Each index fits in an int, but blockIdx.x * blockDim.x + threadIdx.x "
                      "of a rounded-up grid, i + stride in a grid-stride loop, or %d * i as a "
                      "byte offset passes 2^31 - 1 and wraps negative: compute indices in "
                      "size_t or long long.",
                  16 / d->vec);
    } else {
        sb_printf(&s, "Only large n fail (largest passing n = %lld): ", (long long)largest_pass);
        describe_failure(&s, d, smallest);
        sb_printf(&s, ". Check the launch: gridDim.x may be up to 2^31 - 1 but gridDim.y and "
                      "gridDim.z only up to 65535, a fixed grid needs a grid-stride loop to "
                      "cover n, and int index arithmetic overflows past 2^31 - 1.");
    }
    emit(d, BW_DIAG_LARGE_N, &s);
    return 1;
}

static void special_hint(sbuf *s, bw_type t, uint32_t expected, uint32_t got)
{
    int en = bw_elem_is_nan(t, expected), gn = bw_elem_is_nan(t, got);
    if (en && !gn)
        sb_printf(s, " A NaN input must give NaN: look for comparisons, max/min or "
                     "clamping that drop it.");
    else if (gn && !en)
        sb_printf(s, " A NaN appeared where a number was expected: check Inf - Inf and "
                     "0 * Inf in your arithmetic order.");
    else if (bw_elem_is_inf(t, expected))
        sb_printf(s, " Overflow past the largest %s must round to %sInf with the right sign.",
                  bw_type_name(t), bw_elem_sign(t, expected) ? "-" : "+");
    else if (bw_elem_is_tiny(t, expected) || bw_elem_is_tiny(t, got))
        sb_printf(s, " Subnormals and signed zeros must be kept: do not flush to zero "
                     "(no --use_fast_math, no -ftz=true, no _ftz intrinsics).");
    else
        sb_printf(s, " Huge magnitudes near %s must be computed in float without "
                     "intermediate overflow.",
                  top_of(t));
}

int detect_special_values(diag_state *d)
{
    int other_pass = 0;
    for (int i = 0; i < d->count; i++)
        if (d->res[i].outcome == BW_OUTCOME_PASS && d->cases[i].values != BW_VALUES_SPECIAL)
            other_pass = 1;
    if (!other_pass || !all_failing(d, special_values))
        return 0;
    int e = evidence_case(d);
    sbuf s = {0};
    bw_type t = bw_exercise_out_type(d->ex);
    sb_printf(&s, "Only cases with special values (NaN, Inf, subnormals, signed zeros, "
                  "magnitudes near %s) fail: ",
              top_of(t));
    describe_failure(&s, d, e);
    sb_printf(&s, ".");
    if (d->res[e].out.n_reported > 0)
        special_hint(&s, t, d->res[e].out.reported[0].expected, d->res[e].out.reported[0].got);
    emit(d, BW_DIAG_SPECIAL_VALUES, &s);
    return 1;
}

int detect_rounding(diag_state *d)
{
    if (!all_failing(d, wrong_output))
        return 0;
    int small = all_failing(d, small_error);
    int cancel_only = 0;
    if (!small && all_failing(d, cancel_values))
        for (int i = 0; i < d->count; i++)
            if (d->res[i].outcome == BW_OUTCOME_PASS && d->cases[i].values != BW_VALUES_CANCEL)
                cancel_only = 1;
    if (!small && !cancel_only)
        return 0;
    int worst = -1;
    for (int i = 0; i < d->count; i++)
        if (failed(&d->res[i]) &&
            (worst < 0 || d->res[i].out.max_ulps > d->res[worst].out.max_ulps))
            worst = i;
    sbuf s = {0};
    if (small) {
        sb_printf(&s, "Every wrong element is off by at most %.3g ulps, so the indexing is "
                      "right and the rounding is not. Largest error: ",
                  d->res[worst].out.max_ulps);
        describe_failure(&s, d, worst);
        sb_printf(&s, "%s", rounding_hint(bw_exercise_out_type(d->ex)));
    } else {
        sb_printf(&s, "Only the cancellation cases fail (the result is much smaller than its "
                      "terms, so early rounding shows): ");
        describe_failure(&s, d, evidence_case(d));
        bw_type t = bw_exercise_out_type(d->ex);
        if (t == BW_F32)
            sb_printf(&s, ". Compute in float and round once: no approximate or "
                          "round-toward-zero intrinsics, no fast-math.");
        else if (d->ex->uses_alpha)
            sb_printf(&s, ". Compute %s * x + y in float with a single rounding (fmaf, or "
                          "float multiply and add) and round to %s once; do not round the "
                          "product %s * x to %s before adding.",
                      d->ex->scalars[0], bw_type_name(t), d->ex->scalars[0], bw_type_name(t));
        else
            sb_printf(&s, ". Add in float and round to %s once, at the end.", bw_type_name(t));
    }
    emit(d, BW_DIAG_ROUNDING, &s);
    return 1;
}

