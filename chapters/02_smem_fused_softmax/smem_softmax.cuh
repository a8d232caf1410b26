/// @file smem_softmax.cuh
/// @brief Chapter 02: one kernel, one block per row, the row cached in shared memory.
#pragma once

#include "course/harness.h"

/// Softmax of each row, the row cached in shared memory as fp32 (cols <= smem_softmax_max_cols()).
template <typename T>
void softmax_smem(const course::Args& a, cudaStream_t stream);

/// The longest row that fits in this device's shared memory (opt-in limit per block, less the
/// kernel's static shared memory), in fp32 elements; 0 when no GPU is present.
template <typename T>
int64_t smem_softmax_max_cols();
