/// @file occupancy.cuh
/// @brief Shared-memory opt-in and occupancy queries for kernels that cache a row in shared
/// memory (chapter 06 explains the choice of block size from occupancy).
#pragma once

#include <cuda_runtime_api.h>

#include <unordered_map>

#include "course/errors.h"

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
/// memory per block (0 when the block does not fit at all).
template <typename Kernel>
int resident_threads(Kernel kernel, int block, size_t smem) {
  allow_max_smem(kernel);
  int blocks = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block, smem));
  return blocks * block;
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
