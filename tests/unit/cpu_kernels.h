/* Kernels written in C for the CPU stand-in worker (cpu_worker.c): correct
 * ones and the canonical bugs, so that bwgrade's whole test path (the RUN
 * dialogue, the checks, the diagnoses, the reports) runs in CI without a
 * GPU. A kernel sees what a student's function sees: the call's sizes and
 * scalars and a pointer to element 0 of each array. */
#ifndef BWLAB_CPU_KERNELS_H
#define BWLAB_CPU_KERNELS_H
#include <stdint.h>

typedef struct {
    const void *ex;            /* the exercise (bw_exercise), for the kernels that read its rule */
    int64_t n;                 /* elements (a matrix: rows * cols) */
    int64_t rows, cols;        /* a matrix's shape */
    float alpha;
    int offset_elems;          /* element 0's offset from a 256-byte boundary, in elements */
    int n_arrays;
    void *arrays[8];           /* element 0 of each array, in the contract's order */
    unsigned run;              /* how many calls this process made before (a race's source) */
} cpu_call;

/* 0, or -1: reply with a CUDA error (*why says which) and exit, as a
 * faulting kernel's worker does. */
typedef int (*cpu_kernel_fn)(const cpu_call *c, const char **why);

/* The kernel named "EXERCISE.VARIANT", or NULL. haxpy's and vector_sum's
 * are written out (their verdicts were recorded before the grader's core
 * was rebuilt); any other exercise's come from its rule (cpu_shapes.c). */
cpu_kernel_fn cpu_kernel_find(const char *name);
cpu_kernel_fn cpu_shape_kernel_find(const char *exercise, const char *variant);

#endif
