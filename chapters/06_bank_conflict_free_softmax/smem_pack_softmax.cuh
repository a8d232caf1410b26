/// @file smem_pack_softmax.cuh
/// @brief Chapter 06: block-per-row softmax with packed loads and a bank-conflict-free layout.
#pragma once

#include "course/harness.h"

/// Softmax of each row cached in shared memory (fp32), loaded and stored in packs of up to 16
/// bytes; each pack stored contiguously in shared memory (the natural layout).
template <typename T>
void softmax_smem_natural(const course::Args& a, cudaStream_t stream);

/// The same, element j of pack p at j * num_packs + p: bank-conflict-free, 4 bytes per access.
template <typename T>
void softmax_smem_transposed(const course::Args& a, cudaStream_t stream);

/// The same, transposed in 16-byte chunks: bank-conflict-free and 16 bytes per access.
template <typename T>
void softmax_smem_transposed16(const course::Args& a, cudaStream_t stream);

/// The longest row that fits in this GPU's shared memory (fp32 cache); 0 without a GPU.
template <typename T>
int64_t smem_pack_softmax_max_cols();
