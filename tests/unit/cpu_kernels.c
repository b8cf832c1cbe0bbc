/* See cpu_kernels.h. Each bug is the one a student's CUDA kernel makes,
 * written as the elements that kernel would leave: a vectorized loop with
 * no scalar tail leaves the last n % 8 elements alone, and so on. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "bf16.h"
#include "cpu_kernels.h"

#define VEC 8                           /* bf16 per 16-byte vector */
#define GRID_LIMIT ((int64_t)65535 * 256) /* a fixed grid of 65535 blocks of 256 threads */

typedef enum {
    RIGHT,
    CHOP,          /* float -> bf16 by dropping the low 16 bits */
    NO_TAIL,       /* whole vectors only */
    NO_HEAD,       /* assumes element 0 is 16-byte aligned: skips the misaligned head */
    PAST_END,      /* stores a whole last vector: writes past element n-1 */
    BEFORE_START,  /* rounds the pointer down to 16 bytes: writes before element 0 */
    INPUT_CHANGED, /* stores into the first array too */
    NOTHING,       /* the stub */
    FTZ,           /* flushes subnormal inputs and results to zero */
    PRODUCT_ROUNDED, /* rounds alpha * x to bf16 before adding */
    GRID_LIMITED,  /* no grid-stride loop over a grid capped at 65535 blocks */
    NAN_DROP,      /* a NaN result becomes +0 */
    FAULT_MISALIGNED, /* a 16-byte access through a pointer that is not 16-byte aligned */
    RACY           /* every other call leaves a different last bit in the last element */
} bug;

static bf16_t chop(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (bf16_t)(u >> 16);
}

static float flush(float f) { return fpclassify(f) == FP_SUBNORMAL ? copysignf(0.0f, f) : f; }

/* One output element of haxpy (2 arrays) or vector_sum (3). */
static bf16_t element(const cpu_call *c, bug b, int64_t i)
{
    const bf16_t *x = c->arrays[0];
    const bf16_t *y = c->arrays[1];
    float a = bf16_to_float(x[i]), v = bf16_to_float(y[i]);
    if (b == FTZ) {
        a = flush(a);
        v = flush(v);
    }
    float r;
    if (c->n_arrays == 2) {
        if (b == PRODUCT_ROUNDED)
            r = bf16_to_float(bf16_from_float(c->alpha * a)) + v;
        else
            r = fmaf(c->alpha, a, v);
    } else {
        r = a + v;
    }
    if (b == FTZ)
        r = flush(r);
    if (b == NAN_DROP && isnan(r))
        r = 0.0f;
    return b == CHOP ? chop(r) : bf16_from_float(r);
}

static int elementwise(const cpu_call *c, bug b, const char **why)
{
    bf16_t *out = c->arrays[c->n_arrays - 1];
    int64_t n = c->n, begin = 0, end = n;
    int misaligned = c->offset_elems % VEC != 0;
    switch (b) {
    case NOTHING:
        return 0;
    case FAULT_MISALIGNED:
        if (misaligned && n >= VEC) {
            *why = "cudaErrorMisalignedAddress: misaligned address (in the student's call)";
            return -1;
        }
        break;
    case NO_TAIL:
        end = n - n % VEC;
        break;
    case NO_HEAD:
        begin = misaligned ? (VEC - c->offset_elems % VEC) % VEC : 0;
        if (begin > n)
            begin = n;
        break;
    case GRID_LIMITED:
        end = n < GRID_LIMIT ? n : GRID_LIMIT;
        break;
    default:
        break;
    }
    for (int64_t i = begin; i < end; i++)
        out[i] = element(c, b, i);
    if (b == PAST_END && n % VEC != 0)
        out[n] = 0x1234;
    if (b == BEFORE_START && misaligned)
        out[-1] = 0x1234;
    if (b == INPUT_CHANGED)
        ((bf16_t *)c->arrays[0])[n / 2] = out[n / 2] ^ 1u;
    if (b == RACY && (c->run & 1u))
        out[n - 1] ^= 1u;
    return 0;
}

#define KERNEL(fname, b) \
    static int fname(const cpu_call *c, const char **why) { return elementwise(c, b, why); }
KERNEL(k_right, RIGHT)
KERNEL(k_chop, CHOP)
KERNEL(k_no_tail, NO_TAIL)
KERNEL(k_no_head, NO_HEAD)
KERNEL(k_past_end, PAST_END)
KERNEL(k_before_start, BEFORE_START)
KERNEL(k_input_changed, INPUT_CHANGED)
KERNEL(k_nothing, NOTHING)
KERNEL(k_ftz, FTZ)
KERNEL(k_product_rounded, PRODUCT_ROUNDED)
KERNEL(k_grid_limited, GRID_LIMITED)
KERNEL(k_nan_drop, NAN_DROP)
KERNEL(k_fault_misaligned, FAULT_MISALIGNED)
KERNEL(k_racy, RACY)

static const struct {
    const char *variant;
    cpu_kernel_fn fn;
} elementwise_kernels[] = {
    {"right", k_right},
    {"chop", k_chop},
    {"no_tail", k_no_tail},
    {"no_head", k_no_head},
    {"past_end", k_past_end},
    {"before_start", k_before_start},
    {"input_changed", k_input_changed},
    {"nothing", k_nothing},
    {"ftz", k_ftz},
    {"product_rounded", k_product_rounded},
    {"grid_limited", k_grid_limited},
    {"nan_drop", k_nan_drop},
    {"fault_misaligned", k_fault_misaligned},
    {"racy", k_racy},
};

cpu_kernel_fn cpu_kernel_find(const char *name)
{
    const char *dot = strchr(name, '.');
    if (dot == NULL)
        return NULL;
    size_t ex = (size_t)(dot - name);
    if (!((ex == 5 && strncmp(name, "haxpy", 5) == 0) ||
          (ex == 10 && strncmp(name, "vector_sum", 10) == 0))) {
        char exercise[64];
        snprintf(exercise, sizeof exercise, "%.*s", (int)(ex < 63 ? ex : 63), name);
        return cpu_shape_kernel_find(exercise, dot + 1);
    }
    for (size_t i = 0; i < sizeof elementwise_kernels / sizeof elementwise_kernels[0]; i++)
        if (strcmp(dot + 1, elementwise_kernels[i].variant) == 0)
            return elementwise_kernels[i].fn;
    return NULL;
}
