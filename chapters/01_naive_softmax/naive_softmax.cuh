/// @file naive_softmax.cuh
/// @brief Chapter 01: softmax as five separate kernels (row max, subtract, exp, row sum,
/// divide), each reading its input from and writing its output to device memory.
#pragma once

#include "course/harness.h"

/// Softmax of each row of a.x into a.y through an fp32 scratch tensor in a.workspace.
template <typename T>
void naive_softmax(const course::Args& a, cudaStream_t stream);

/// Scratch bytes naive_softmax needs: an fp32 rows x cols tensor, two fp32 per-row vectors
/// and CUB's temporary storage.
size_t naive_softmax_workspace(int64_t rows, int64_t cols, course::DType t);
