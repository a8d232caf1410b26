/// Taught in chapter 04 (Pack vectorization).
/// @file pack.cuh
/// @brief `Pack<T, N>`: N elements moved by one vector instruction (chapter 04 explains it).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <type_traits>

#include "blocks/convert.cuh"
#include "harness/launch_math.h"

namespace course {

/// The unsigned type as wide as `Bytes`: the register type of one vector load or store.
template <int Bytes>
struct VecStorage;
template <>
struct VecStorage<1> {
  using type = unsigned char;
};
template <>
struct VecStorage<2> {
  using type = unsigned short;
};
template <>
struct VecStorage<4> {
  using type = unsigned int;
};
template <>
struct VecStorage<8> {
  using type = uint2;
};
template <>
struct VecStorage<16> {
  using type = uint4;
};

/// [pack]
/// N elements of T seen either one by one (`elem`) or as one machine word (`storage`): loading
/// `storage` through a pointer aligned to sizeof(Pack) is a single LDG.E.128 for 16 bytes,
/// a quarter of the memory instructions of four 4-byte loads.
template <typename T, int N>
union Pack {
  static_assert(sizeof(T) * N <= 16 && (sizeof(T) * N & (sizeof(T) * N - 1)) == 0,
                "a pack is a power of two of at most 16 bytes");
  using Storage = typename VecStorage<sizeof(T) * N>::type;
  Storage storage;
  T elem[N];
};

/// Loads N elements at p (p must be aligned to sizeof(Pack<T, N>)).
template <typename T, int N>
__device__ __forceinline__ Pack<T, N> load_pack(const T* p) {
  Pack<T, N> pk;
  pk.storage = *reinterpret_cast<const typename Pack<T, N>::Storage*>(p);
  return pk;
}

/// Stores N elements at p (p must be aligned to sizeof(Pack<T, N>)).
template <typename T, int N>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, N>& pk) {
  *reinterpret_cast<typename Pack<T, N>::Storage*>(p) = pk.storage;
}
/// [pack]

/// store_pack as one vector instruction whatever the compiler can prove about p (from 4 bytes up,
/// through `__stwb`, the default write-back policy). A plain store of the union may be split into
/// one store per element when p's alignment is not provable, as in a peeled row (blocks/peel.h,
/// chapter 12): four times the store instructions, the kernel at 62% of its packed twin's speed
/// (chapter 12's TUNING.md). A plain store through `__builtin_assume_aligned` instead: every peeled
/// 16-bit kernel timed ran at 0.6-0.9x on the H200 (not profiled). Chapters 09 and 12-16 store through it.
template <typename T, int N>
__device__ __forceinline__ void store_pack_vector(T* p, const Pack<T, N>& pk) {
  using Storage = typename Pack<T, N>::Storage;
  if constexpr (sizeof(Storage) >= 4)
    __stwb(reinterpret_cast<Storage*>(p), pk.storage);
  else
    *reinterpret_cast<Storage*>(p) = pk.storage;
}

/// load_pack through the read-only data path (`ld.global.nc`, as `__ldg`), for data that nothing
/// writes while the kernel runs. A plain load through a pointer the compiler cannot prove
/// unaliased (a functor's member, say) takes the coherent path instead. Chapter 12's functors use it.
template <typename T, int N>
__device__ __forceinline__ Pack<T, N> load_pack_ro(const T* p) {
  Pack<T, N> pk;
  pk.storage = __ldg(reinterpret_cast<const typename Pack<T, N>::Storage*>(p));
  return pk;
}

/// Element-by-element conversion of a pack, the loop chapter 04's kernel writes inline (chapter 06 on).
template <typename T>
struct ScalarConvert {
  template <int N>
  __device__ __forceinline__ static void to_floats(const Pack<T, N>& p, float* out) {
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = to_float(p.elem[j]);
  }
  template <int N>
  __device__ __forceinline__ static void from_floats(const float* in, Pack<T, N>& p) {
#pragma unroll
    for (int j = 0; j < N; ++j) p.elem[j] = from_float<T>(in[j]);
  }
};

/// [widest_pack]
/// Calls f(std::integral_constant<int, N>{}) with N the largest pack, up to kMaxPack elements (16
/// bytes of T by default), that divides cols and to which every pointer of `ptrs` is aligned: a misaligned
/// view or an odd cols falls back to narrower packs, down to one element (host side).
template <typename T, int kMaxPack = 16 / sizeof(T), typename F>
void with_widest_pack(int64_t cols, std::initializer_list<const void*> ptrs, F&& f) {
  const int pack = max_aligned_pack(sizeof(T), kMaxPack, cols, ptrs);
  if constexpr (kMaxPack >= 8) {
    if (pack == 8) return f(std::integral_constant<int, 8>{});
  }
  if constexpr (kMaxPack >= 4) {
    if (pack == 4) return f(std::integral_constant<int, 4>{});
  }
  if constexpr (kMaxPack >= 2) {
    if (pack == 2) return f(std::integral_constant<int, 2>{});
  }
  f(std::integral_constant<int, 1>{});
}
/// [widest_pack]

/// The same for the usual pair of pointers, input and output.
template <typename T, int kMaxPack = 16 / sizeof(T), typename F>
void with_widest_pack(int64_t cols, const void* x, const void* y, F&& f) {
  with_widest_pack<T, kMaxPack>(cols, {x, y}, std::forward<F>(f));
}

}  // namespace course
