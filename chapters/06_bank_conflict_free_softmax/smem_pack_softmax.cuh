/// @file smem_pack_softmax.cuh
/// @brief Chapter 06: block-per-row softmax with packed loads and a bank-conflict-free layout.
#pragma once

#include "course/harness.h"

/// Softmax of each row cached in shared memory, loaded and stored in packs of up to 16 bytes.
/// kTransposed selects the conflict-free layout; false keeps the natural one (for comparison).
template <typename T, bool kTransposed>
void softmax_smem_pack(const course::Args& a, cudaStream_t stream);

/// The longest row that fits in this GPU's shared memory (fp32 cache); 0 without a GPU.
template <typename T>
int64_t smem_pack_softmax_max_cols();
