/// @file layer_norm_pack.cuh
/// @brief Chapter 09: the output of one pack, (v - mean) * rstd * gamma + beta, which the warp
/// kernel (layer_norm.cuh) and the block kernels (layer_norm_block.cuh) share, and the loads of
/// gamma and beta on a peeled row (blocks/peel.h; the cut: blocks/pack_cut.cuh).
#pragma once

#include <cstdint>
#include <type_traits>

#include "blocks/pack.cuh"
#include "blocks/pack_cut.cuh"

namespace ch09 {

using course::Pack;

/// The output of one pack: (v - mean) * rstd * gamma + beta, from packs of gamma and beta already
/// loaded. kAnyAlign (a peeled row's pack): stored through course::store_pack_vector.
template <typename T, int kPack, bool kAnyAlign = false>
__device__ __forceinline__ void normalize_pack(const float* v, const Pack<T, kPack>& gamma, const Pack<T, kPack>& beta,
                                               float mu, float rs, T* out) {
  using Convert = course::ScalarConvert<T>;
  float g[kPack], b[kPack], o[kPack];
  Convert::to_floats(gamma, g);
  Convert::to_floats(beta, b);
#pragma unroll
  for (int j = 0; j < kPack; ++j) o[j] = (v[j] - mu) * rs * g[j] + b[j];
  Pack<T, kPack> pk;
  Convert::from_floats(o, pk);
  if constexpr (kAnyAlign)
    course::store_pack_vector<T, kPack>(out, pk);
  else
    course::store_pack<T, kPack>(out, pk);
}

/// A pack of gamma or beta at any element: one load where it lies on a pack boundary, else one
/// load per element (a peeled row's packs start where x's row does; gamma's boundaries do not
/// move with the row, and both stay in L1 across the rows). The warp kernel's peeled rows load
/// them so: the cut (course::load_pack_cut, blocks/pack_cut.cuh) measured slower there (TUNING.md).
template <typename T, int kPack>
__device__ __forceinline__ Pack<T, kPack> load_pack_anywhere(const T* p) {
  if (reinterpret_cast<uintptr_t>(p) % (sizeof(T) * kPack) == 0) return course::load_pack<T, kPack>(p);
  Pack<T, kPack> pk;
#pragma unroll
  for (int j = 0; j < kPack; ++j) pk.elem[j] = p[j];
  return pk;
}

// A pack of gamma or beta on a peeled row of the block kernels: course::load_pack_cut, once per
// row's shift through course::with_shift (blocks/pack_cut.cuh; taught here, used by chapter 15 too).
using course::load_pack_cut;
using course::with_shift;


/// The same, loading the packs of gamma and beta at the columns of `out`.
template <typename T, int kPack>
__device__ __forceinline__ void normalize_pack(const float* v, const T* gamma, const T* beta, float mu, float rs,
                                               T* out) {
  normalize_pack<T, kPack>(v, course::load_pack<T, kPack>(gamma), course::load_pack<T, kPack>(beta), mu, rs, out);
}

}  // namespace ch09
