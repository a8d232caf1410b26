/// Taught in chapter 06 (bank-conflict-free softmax).
/// @file occupancy.cuh
/// @brief Shared-memory opt-in and occupancy queries for kernels that cache a row in shared
/// memory (chapter 06 explains the choice of block size from occupancy).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <unordered_map>

#include "harness/errors.h"

namespace course {

/// Lets `kernel` use the device's whole opt-in shared memory per block (on the first call for
/// each kernel; later calls are free) and returns its static shared memory in bytes.
template <typename Kernel>
size_t allow_max_smem(Kernel kernel) {
  // Keyed by the kernel's address: every kernel of one signature shares the type Kernel.
  static std::unordered_map<const void*, size_t> static_bytes;
  const void* key = reinterpret_cast<const void*>(kernel);
  if (auto it = static_bytes.find(key); it != static_bytes.end()) return it->second;
  cudaFuncAttributes attr;
  CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  int dev = 0, optin = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - int(attr.sharedSizeBytes)));
  return static_bytes[key] = attr.sharedSizeBytes;
}

/// Threads of `kernel` resident on one SM with `block` threads and `smem` bytes of dynamic shared
/// memory per block (0 when the block does not fit at all). Answers are remembered: a launcher
/// that asks on every launch pays the occupancy calculator once per shape, not inside every
/// timed launch (the query costs microseconds of host time, as much as a small kernel runs).
template <typename Kernel>
int resident_threads(Kernel kernel, int block, size_t smem) {
  struct Key {
    const void* kernel;
    int block;
    size_t smem;
    bool operator==(const Key& o) const { return kernel == o.kernel && block == o.block && smem == o.smem; }
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.kernel) ^ (size_t(k.block) << 20) ^ (k.smem * 0x9E3779B97F4A7C15ull);
    }
  };
  static std::unordered_map<Key, int, Hash> known;
  const Key key{reinterpret_cast<const void*>(kernel), block, smem};
  if (auto it = known.find(key); it != known.end()) return it->second;
  allow_max_smem(kernel);
  int blocks = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block, smem));
  return known[key] = blocks * block;
}

/// [occupancy_block]
namespace detail {
// Resident threads per SM for each candidate block size (0: not a candidate, or does not fit).
template <typename KernelFor>
void occupancy_candidates(int64_t num_packs, int64_t min_packs, size_t smem, KernelFor kernel_for, int t[4]) {
  auto usable = [&](int block) { return block == 128 || int64_t(block) * min_packs <= num_packs; };
  t[0] = resident_threads(kernel_for(std::integral_constant<int, 128>{}), 128, smem);
  t[1] = usable(256) ? resident_threads(kernel_for(std::integral_constant<int, 256>{}), 256, smem) : 0;
  t[2] = usable(512) ? resident_threads(kernel_for(std::integral_constant<int, 512>{}), 512, smem) : 0;
  t[3] = usable(1024) ? resident_threads(kernel_for(std::integral_constant<int, 1024>{}), 1024, smem) : 0;
}
}  // namespace detail

/// The resident threads per SM of the block size with_occupancy_block would choose (0 if none fits).
template <typename KernelFor>
int occupancy_best_threads(int64_t num_packs, int64_t min_packs, size_t smem, KernelFor kernel_for) {
  int t[4];
  detail::occupancy_candidates(num_packs, min_packs, smem, kernel_for, t);
  return std::max(std::max(t[0], t[1]), std::max(t[2], t[3]));
}

/// Calls `launch(std::integral_constant<int, B>{})` with the block size B of 128, 256, 512 or 1024
/// threads that keeps the most threads resident per SM, where `kernel_for(B)` is the kernel that
/// would run with `smem` bytes of dynamic shared memory per block. A size qualifies when each
/// thread gets at least `min_packs` of the row's `num_packs` packs (128 always does); on a tie
/// the larger block wins (chapter 06 explains the rule). Throws UsageError when no size fits.
template <typename KernelFor, typename Launch>
void with_occupancy_block(int64_t num_packs, int64_t min_packs, size_t smem, KernelFor kernel_for, Launch&& launch) {
  int t[4];
  detail::occupancy_candidates(num_packs, min_packs, smem, kernel_for, t);
  const int best = std::max(std::max(t[0], t[1]), std::max(t[2], t[3]));
  require(best > 0, "a block with ", smem, " bytes of shared memory does not fit on this GPU");
  if (t[3] == best) return launch(std::integral_constant<int, 1024>{});
  if (t[2] == best) return launch(std::integral_constant<int, 512>{});
  if (t[1] == best) return launch(std::integral_constant<int, 256>{});
  launch(std::integral_constant<int, 128>{});
}
/// [occupancy_block]

/// Rows from which a warp per row keeps every SM busy on long rows: 32 per SM, about the warps an
/// SM holds of a warp kernel with a 16-bit row of 1025-3072 columns in registers. Chapters 09 and
/// 12 take their warp path past 1024 columns only from this many rows; fewer rows take a block
/// per row, which spreads each row over more threads. 0 without a device.
inline int64_t long_warp_rows_min() {
  static const int64_t rows = [] {
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      cudaGetLastError();
      return int64_t(0);
    }
    return 32 * int64_t(sms);
  }();
  return rows;
}

/// The device's opt-in shared memory per block, in bytes (0 without a device).
inline int smem_per_block_optin() {
  int dev = 0, optin = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return optin;
}

}  // namespace course
