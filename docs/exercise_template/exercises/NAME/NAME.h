// The NAME contract. Do not edit: the grader compiles your NAME.cu
// against its own copy of this file.
//
//   y[i] = a * x[i]   for 0 <= i < n, fp16 in and out.
//
// - n is any positive int (1 up to 2^31 - 1).
// - a is finite.
// - x and y are device pointers aligned only to 2 bytes, but both have the
//   same offset modulo 256 bytes; y does not overlap x.
// - Launch on the default stream (or a cudaStreamCreate stream) and return;
//   the grader synchronizes. Every call must do all of its work: see
//   handout/grading.md, "What the benchmark expects of a call".
// - Read only x[0..n-1], write only y[0..n-1]; never change x.
#pragma once
#include <cstdint>
#include <cuda_fp16.h>

void NAME(int n, float a, const __half* x, __half* y);
