// The reduce_sum contract. Do not edit: the grader compiles your reduce_sum.cu
// against its own copy of this file.
//
//   *sum = x[0] + x[1] + ... + x[n-1]   as one float, in device memory.
//
// - n is any positive int (1 up to 2^31 - 1).
// - x is a device pointer aligned only to 2 bytes; sum points to one float in
//   device memory (4-byte aligned) that holds garbage on entry: set it, do not
//   add to what is there.
// - Add in float, in any order (a tree, grid-stride partial sums, atomics):
//   the grader accepts any float summation; see handout/reduce_sum.md for the
//   exact bound. A bf16 running sum is not accurate enough.
// - Launch on the default stream (or a cudaStreamCreate stream) and return;
//   the grader synchronizes. Every call must do all of its work: see
//   handout/grading.md, "What the benchmark expects of a call".
// - Read only x[0..n-1], write only *sum; never change x. Scratch space: a
//   __device__ array of your own, or memory you free before returning.
#pragma once
#include <cstdint>
#include <cuda_bf16.h>

void reduce_sum(int n, const nv_bfloat16* x, float* sum);
