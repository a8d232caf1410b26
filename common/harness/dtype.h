/// @file dtype.h
/// @brief Storage types of the course (f32, f16, bf16): names, sizes, host conversions.
///
/// Every kernel stores in one of these and computes in fp32. The host side converts through
/// double for the reference, with the CUDA headers' own host conversions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace course {

/// A storage type (f32, f16, bf16), or u8: the element of a boolean mask tensor (chapter 12's
/// masked softmax), or i32: a class index (cross-entropy's targets); u8 and i32 are never a
/// variant's storage type.
enum class DType { f32, f16, bf16, u8, i32 };

/// "f32", "f16" or "bf16".
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::u8:
      return "u8";
    case DType::i32:
      return "i32";
  }
  return "?";
}

/// Parses "f32", "f16" or "bf16" (the storage types); returns false for anything else.
inline bool parse_dtype(const std::string& s, DType* out) {
  if (s == "f32")
    *out = DType::f32;
  else if (s == "f16")
    *out = DType::f16;
  else if (s == "bf16")
    *out = DType::bf16;
  else
    return false;
  return true;
}

/// Bytes per element.
inline int dtype_size(DType t) { return t == DType::f32 || t == DType::i32 ? 4 : t == DType::u8 ? 1 : 2; }

/// The DType of a C++ storage type: DTypeOf<half>::value == DType::f16.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct DTypeOf<__half> {
  static constexpr DType value = DType::f16;
};
template <>
struct DTypeOf<__nv_bfloat16> {
  static constexpr DType value = DType::bf16;
};

/// Element i of a host buffer of type t, widened exactly to double.
inline double load_as_double(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::f32:
      return static_cast<const float*>(base)[i];
    case DType::f16:
      return __half2float(static_cast<const __half*>(base)[i]);
    case DType::bf16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case DType::u8:
      return static_cast<const uint8_t*>(base)[i];
    case DType::i32:
      return static_cast<const int32_t*>(base)[i];  // exact: every int32 is a double
  }
  return 0;
}

/// Stores v at element i of a host buffer of type t, rounded once to nearest even.
inline void store_from_double(void* base, DType t, int64_t i, double v) {
  switch (t) {
    case DType::f32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      break;
    case DType::f16:
      static_cast<__half*>(base)[i] = __double2half(v);
      break;
    case DType::bf16:
      static_cast<__nv_bfloat16*>(base)[i] = __double2bfloat16(v);
      break;
    case DType::u8:
      static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v);
      break;
    case DType::i32:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v);
      break;
  }
}

/// Raw bits of element i (for bitwise comparisons).
inline uint32_t load_bits(const void* base, DType t, int64_t i) {
  if (t == DType::f32 || t == DType::i32) {
    uint32_t u;
    std::memcpy(&u, static_cast<const char*>(base) + 4 * i, 4);
    return u;
  }
  if (t == DType::u8) return static_cast<const uint8_t*>(base)[i];
  uint16_t u;
  std::memcpy(&u, static_cast<const char*>(base) + 2 * i, 2);
  return u;
}

}  // namespace course
