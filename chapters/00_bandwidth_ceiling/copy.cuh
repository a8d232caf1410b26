/// @file copy.cuh
/// @brief Chapter 00: the ceiling. A device-to-device copy reads and writes every byte once,
/// exactly what a fused row-wise kernel must do; nothing memory-bound can beat it.
///
/// Two copies: the driver's `cudaMemcpyAsync` and our own kernel moving 16 bytes per thread
/// per step. The kernel is the pattern every later chapter starts from.
#pragma once

#include "course/harness.h"

/// Copy through the CUDA driver's device-to-device `cudaMemcpyAsync`.
template <typename T>
void copy_memcpy(const course::Args& a, cudaStream_t stream);

/// Copy with copy_vec16_kernel when both pointers are 16-byte aligned, else copy_scalar_kernel.
template <typename T>
void copy_vec16(const course::Args& a, cudaStream_t stream);
