/// @file convert.cuh
/// @brief Storage type <-> fp32 on the device: every kernel of the course loads its storage type,
/// computes in fp32 and rounds back to nearest even on store (chapter 01 introduces it).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace course {

/// Widens one stored element to fp32 (exact for every storage type).
__device__ __forceinline__ float to_float(float v) { return v; }
/// @copydoc to_float(float)
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
/// @copydoc to_float(float)
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Rounds an fp32 value to the storage type T, to nearest even.
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

}  // namespace course
