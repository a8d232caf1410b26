/// @file copy.cuh
/// @brief Chapter 00: the ceiling. A device-to-device copy reads and writes every byte once,
/// exactly what a fused row-wise kernel must do; nothing memory-bound can beat it.
///
/// Two copies: the driver's `cudaMemcpyAsync` and our own kernel moving 16 bytes per thread
/// per step. The kernel is the pattern every later chapter starts from.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"

namespace ch00 {

constexpr int kThreads = 256;

/// [vec16]
// Each thread moves 16 bytes (one uint4: 4 floats or 8 halves) per step, and the grid strides
// over the tensor, so that any size runs on a grid sized to the GPU rather than to the data.
// The 16-byte load/store is the widest a thread can execute: a quarter of the instructions of
// 4-byte accesses for the same bytes.
template <typename T>
__global__ void copy_vec16_kernel(const T* __restrict__ src, T* __restrict__ dst, int64_t n) {
  constexpr int kPack = 16 / sizeof(T);
  const int64_t n_vec = n / kPack;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint4* s = reinterpret_cast<const uint4*>(src);
  uint4* d = reinterpret_cast<uint4*>(dst);
  for (int64_t i = tid; i < n_vec; i += stride) d[i] = s[i];
  for (int64_t i = n_vec * kPack + tid; i < n; i += stride) dst[i] = src[i];  // < kPack left over
}
/// [vec16]

// The fallback for views whose start is not 16-byte aligned: one element per thread per step.
template <typename T>
__global__ void copy_scalar_kernel(const T* __restrict__ src, T* __restrict__ dst, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// Copy through the CUDA driver's device-to-device `cudaMemcpyAsync`.
template <typename T>
void copy_memcpy(const course::Args& a, cudaStream_t stream) {
  if (!course::check_rowwise_args(a)) return;
  CUDA_CHECK(cudaMemcpyAsync(a.y, a.x, size_t(a.rows * a.cols) * sizeof(T), cudaMemcpyDeviceToDevice, stream));
}

/// Copy with copy_vec16_kernel when both pointers are 16-byte aligned, else copy_scalar_kernel.
template <typename T>
void copy_vec16(const course::Args& a, cudaStream_t stream) {
  if (!course::check_rowwise_args(a)) return;
  const int64_t n = a.rows * a.cols;
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  // One block per 256 packs, at most 4 waves of blocks (every SM full), then each thread loops.
  // H100: not tuned; 1 or 2 waves read lower at 64-192 MB, no loop level with cudaMemcpy (TUNING.md).
  const int64_t per_block = kThreads * (aligned16(x) && aligned16(y) ? 16 / sizeof(T) : 1);
  const unsigned blocks = course::resident_grid(n, per_block, kThreads, 4);
  if (aligned16(x) && aligned16(y))
    copy_vec16_kernel<<<blocks, kThreads, 0, stream>>>(x, y, n);
  else
    copy_scalar_kernel<<<blocks, kThreads, 0, stream>>>(x, y, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch00
