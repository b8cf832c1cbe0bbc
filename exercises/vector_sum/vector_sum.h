// The vector_sum contract. Do not edit: the grader compiles your
// vector_sum.cu against its own copy of this file.
//
//   c[i] = a[i] + b[i]   for 0 <= i < n, bf16 in and out.
//
// - n is any positive int (1 up to 2^31 - 1).
// - a, b and c are device pointers aligned only to 2 bytes, but all three
//   have the same offset modulo 256 bytes.
// - c overlaps neither a nor b.
// - Launch on the default stream (or a cudaStreamCreate stream) and return;
//   the grader synchronizes. Every call must do all of its work: see
//   handout/grading.md, "What the benchmark expects of a call".
// - Read only a[0..n-1] and b[0..n-1], write only c[0..n-1]; never change a or b.
#pragma once
#include <cstdint>
#include <cuda_bf16.h>

void vector_sum(int n, const nv_bfloat16* a, const nv_bfloat16* b, nv_bfloat16* c);
