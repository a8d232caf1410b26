/// @file softmax_functors.cuh
/// @brief Chapter 12: how the production kernels read their input and write their output. Every
/// kernel takes a `Load` and a `Store` functor instead of raw pointers: the plain softmax uses
/// DirectLoad / DirectStore, and a fused operation is a new functor of a few lines, not a new
/// kernel (ScaleMaskLoad: attention's `x * scale`, masked positions set to -inf).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "blocks/convert.cuh"
#include "blocks/pack.cuh"

namespace ch12 {

/// [functors]
/// Elements of T in one vector access: kPack, or 16 bytes' worth when kPack of T is wider (a
/// kernel may pair a 16-bit input with an fp32 output, whose packs are then two accesses).
template <typename T, int kPack>
constexpr int kPiece = kPack * int(sizeof(T)) > 16 ? int(16 / sizeof(T)) : kPack;

/// Reads kPack elements of row `row` from column `col` (a multiple of kPack) as floats.
/// `Cache` is the narrowest type that holds what load() returns exactly: a kernel that keeps the
/// row in shared memory stores it in that type (the storage type for a plain load: half the
/// bytes of fp32 for f16 and bf16, so twice the row fits).
/// load() is fetch() then convert(): fetch() only starts the loads and returns the registers as
/// loaded (`Fetched`, the storage type); convert() does the arithmetic. The warp path holds a
/// long 16-bit row fetched (RowRegs): half the registers of fp32.
/// kReadOnly takes the read-only data path (course::load_pack_ro), for a kernel whose input no
/// thread writes while it may still be read (the kernels in paths_*.cuh say which do, and why).
template <typename T>
struct DirectLoad {
  using Cache = T;
  const T* src;
  int64_t row_size;
  template <int kPack>
  struct Fetched {
    static constexpr int kP = kPiece<T, kPack>;
    course::Pack<T, kP> piece[kPack / kP];
  };
  template <int kPack, bool kReadOnly = false>
  __device__ __forceinline__ Fetched<kPack> fetch(int64_t row, int64_t col) const {
    constexpr int kP = Fetched<kPack>::kP;
    Fetched<kPack> f;
#pragma unroll
    for (int i = 0; i < kPack / kP; ++i) {
      const T* p = src + row * row_size + col + i * kP;
      f.piece[i] = kReadOnly ? course::load_pack_ro<T, kP>(p) : course::load_pack<T, kP>(p);
    }
    return f;
  }
  template <int kPack>
  __device__ __forceinline__ void convert(const Fetched<kPack>& f, float* dst) const {
#pragma unroll
    for (int i = 0; i < kPack / Fetched<kPack>::kP; ++i)
      course::ScalarConvert<T>::to_floats(f.piece[i], dst + i * Fetched<kPack>::kP);
  }
  template <int kPack, bool kReadOnly = false>
  __device__ __forceinline__ void load(float* dst, int64_t row, int64_t col) const {
    convert<kPack>(fetch<kPack, kReadOnly>(row, col), dst);
  }
};

/// Writes kPack floats to row `row` from column `col`, rounded to the storage type.
/// kFastExp: the kernels may compute this output's exponentials with the hardware's
/// approximation (paths_common.cuh, row_exp): true for 16-bit output, whose rounding hides its error.
template <typename T>
struct DirectStore {
  static constexpr bool kFastExp = sizeof(T) < sizeof(float);
  T* dst;
  int64_t row_size;
  /// kAnyAlign (a peeled row's packs, blocks/peel.h): through course::store_pack_vector, which stays
  /// one vector store where the compiler cannot prove the alignment.
  template <int kPack, bool kAnyAlign = false>
  __device__ __forceinline__ void store(const float* src, int64_t row, int64_t col) const {
    constexpr int kP = kPiece<T, kPack>;
#pragma unroll
    for (int i = 0; i < kPack; i += kP) {
      course::Pack<T, kP> pk;
      course::ScalarConvert<T>::from_floats(src + i, pk);
      if constexpr (kAnyAlign)
        course::store_pack_vector<T, kP>(dst + row * row_size + col + i, pk);
      else
        course::store_pack<T, kP>(dst + row * row_size + col + i, pk);
    }
  }
};

/// Attention's scale-and-mask, fused into the softmax's load: x * scale (in fp32), and -inf where
/// the mask byte is nonzero. The mask is read kPack bytes at a time, in the same pack as x.
/// The scaled values are not representable in T: a cached row is kept in fp32.
template <typename T>
struct ScaleMaskLoad {
  using Cache = float;
  const T* src;
  const uint8_t* mask;
  int64_t row_size;
  float scale;
  template <int kPack>
  struct Fetched {
    typename DirectLoad<T>::template Fetched<kPack> x;
    course::Pack<uint8_t, kPack> m;
  };
  template <int kPack, bool kReadOnly = false>
  __device__ __forceinline__ Fetched<kPack> fetch(int64_t row, int64_t col) const {
    const uint8_t* m = mask + row * row_size + col;
    return {DirectLoad<T>{src, row_size}.template fetch<kPack, kReadOnly>(row, col),
            kReadOnly ? course::load_pack_ro<uint8_t, kPack>(m) : course::load_pack<uint8_t, kPack>(m)};
  }
  template <int kPack>
  __device__ __forceinline__ void convert(const Fetched<kPack>& f, float* dst) const {
    DirectLoad<T>{src, row_size}.template convert<kPack>(f.x, dst);
#pragma unroll
    for (int j = 0; j < kPack; ++j) dst[j] = f.m.elem[j] ? -INFINITY : dst[j] * scale;
  }
  template <int kPack, bool kReadOnly = false>
  __device__ __forceinline__ void load(float* dst, int64_t row, int64_t col) const {
    convert<kPack>(fetch<kPack, kReadOnly>(row, col), dst);
  }
};
/// [functors]

}  // namespace ch12
