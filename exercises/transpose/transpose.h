// The transpose contract. Do not edit: the grader compiles your transpose.cu
// against its own copy of this file.
//
//   out[c * rows + r] = in[r * cols + c]   for 0 <= r < rows, 0 <= c < cols:
//
//   in is a rows x cols matrix and out a cols x rows one, both row-major;
//   bf16 values are moved bit for bit (a NaN keeps its payload).
//
// - rows and cols are positive ints, and rows * cols <= 2^31 - 1.
// - in and out are device pointers aligned only to 2 bytes, but both have the
//   same offset modulo 256 bytes; they do not overlap.
// - Launch on the default stream (or a cudaStreamCreate stream) and return;
//   the grader synchronizes. Every call must do all of its work: see
//   handout/grading.md, "What the benchmark expects of a call".
// - Read only in[0..rows*cols-1], write only out[0..rows*cols-1]; never change in.
#pragma once
#include <cstdint>
#include <cuda_bf16.h>

void transpose(int rows, int cols, const nv_bfloat16* in, nv_bfloat16* out);
