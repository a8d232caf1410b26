/// Taught in chapter 01 (naive softmax); Pair in chapter 05 (half2).
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

/// [pair]
/// Pairs of 16-bit values <-> float2 (chapter 05). Narrowing is one paired instruction
/// (`__float22half2_rn`: cvt.rn.f16x2.f32, sm_80 on; bf16 likewise); widening is two scalar
/// conversions in CUDA 13.0's headers (`__half22float2`: two cvt.f32.f16), as element by element.
template <typename T>
struct Pair;
template <>
struct Pair<__half> {
  using T2 = __half2;
  __device__ static float2 to_float2(T2 v) { return __half22float2(v); }
  __device__ static T2 from_float2(float2 v) { return __float22half2_rn(v); }
};
template <>
struct Pair<__nv_bfloat16> {
  using T2 = __nv_bfloat162;
  __device__ static float2 to_float2(T2 v) { return __bfloat1622float2(v); }
  __device__ static T2 from_float2(float2 v) { return __float22bfloat162_rn(v); }
};
/// [pair]

}  // namespace course
