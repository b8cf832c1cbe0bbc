// The saxpy contract. Do not edit: the grader compiles your saxpy.cu against
// its own copy of this file.
//
//   y[i] = a * x[i] + y[i]   for 0 <= i < n, in place, fp32 in and out.
//
// - n is any positive int (1 up to 2^31 - 1).
// - a is finite.
// - x and y are device pointers aligned only to 4 bytes, but both have the
//   same offset modulo 256 bytes: (uintptr_t)x % 256 == (uintptr_t)y % 256.
// - Launch on the default stream (or a cudaStreamCreate stream) and return;
//   the grader synchronizes. Every call must do all of its work: see
//   handout/grading.md, "What the benchmark expects of a call".
// - Read and write only x[0..n-1] and y[0..n-1]; never change x.
#pragma once
#include <cstdint>

void saxpy(int n, float a, const float* x, float* y);
