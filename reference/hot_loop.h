/* BW_HOT_LOOP marks a function whose loops run over every element of a case
 * (up to 2^31 of them): GCC compiles it for x86-64-v4 (AVX-512), v3 (AVX2,
 * FMA) and the baseline, and the loader picks the best the CPU has. The
 * baseline cannot vectorize 64-bit multiplies (the input hash) nor fmaf (a
 * libm call); the clones ran the fused check about 7x faster (issue 12).
 * Results are bit-identical: integer operations, and fmaf rounds once on
 * every path. Elsewhere (other compilers, other CPUs) it is a no-op. */
#ifndef BWLAB_HOT_LOOP_H
#define BWLAB_HOT_LOOP_H

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && defined(__x86_64__) && \
    defined(__linux__) && !defined(BW_NO_CLONES)
#define BW_HOT_LOOP __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BW_HOT_LOOP
#endif

#endif
