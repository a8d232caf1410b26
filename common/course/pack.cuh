/// @file pack.cuh
/// @brief `Pack<T, N>`: N elements moved by one vector instruction (chapter 04 explains it).
#pragma once

#include <cstdint>

namespace course {

/// The unsigned type as wide as `Bytes`: the register type of one vector load or store.
template <int Bytes>
struct VecStorage;
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

}  // namespace course
