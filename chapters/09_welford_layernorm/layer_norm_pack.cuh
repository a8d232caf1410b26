/// @file layer_norm_pack.cuh
/// @brief Chapter 09: the output of one pack, (v - mean) * rstd * gamma + beta, which the warp
/// kernel (layer_norm.cuh) and the block kernels (layer_norm_block.cuh) share, and the loads of
/// gamma and beta on a peeled row (blocks/peel.h).
#pragma once

#include <cstdint>
#include <type_traits>

#include "blocks/pack.cuh"

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
/// them so: its cut variant (below) measured slower there (TUNING.md).
template <typename T, int kPack>
__device__ __forceinline__ Pack<T, kPack> load_pack_anywhere(const T* p) {
  if (reinterpret_cast<uintptr_t>(p) % (sizeof(T) * kPack) == 0) return course::load_pack<T, kPack>(p);
  Pack<T, kPack> pk;
#pragma unroll
  for (int j = 0; j < kPack; ++j) pk.elem[j] = p[j];
  return pk;
}

/// [affine_cut]
/// A pack of gamma or beta on a peeled row of the block kernels (blocks/peel.h). The row's packs
/// start `head` columns in, so its packs of gamma and beta start kShift = (their phase + head) %
/// kPack elements past one of their own boundaries: the same shift for every pack of the row.
/// Loaded one element at a time (load_pack_anywhere), a 16-bit pack of each costs eight load
/// instructions, and the L1 requests for gamma and beta outnumber those for x and y eight to one.
/// Instead the pack is cut out of the two aligned packs it straddles, with the shift a template
/// argument (with_shift, once per row), so that the cut is register moves. The first pack may
/// begin up to kShift elements before the tensor (where its phase is not 0): an aligned 16-byte
/// chunk holding its first element, inside its allocation, the extra elements unused. `end` is one
/// past the tensor's last element: past it, the second pack is read element by element.
template <int kShift, typename T, int kPack>
__device__ __forceinline__ Pack<T, kPack> load_pack_cut(const T* p, const T* end) {
  const T* base = p - kShift;  // a pack boundary
  if constexpr (kShift == 0) {
    return course::load_pack<T, kPack>(base);
  } else {
    const Pack<T, kPack> lo = course::load_pack<T, kPack>(base);
    Pack<T, kPack> hi = lo;
    if (base + 2 * kPack <= end) {
      hi = course::load_pack<T, kPack>(base + kPack);
    } else {  // the tensor's last, partial pack: only the elements this pack needs
#pragma unroll
      for (int j = 0; j < kShift; ++j) hi.elem[j] = base[kPack + j];
    }
    Pack<T, kPack> out;
#pragma unroll
    for (int j = 0; j < kPack; ++j)
      out.elem[j] = j + kShift < kPack ? lo.elem[j + kShift] : hi.elem[j + kShift - kPack];
    return out;
  }
}

/// Calls f(std::integral_constant<int, S>) for the run-time shift s (0 <= s < kPack): a few
/// comparisons per row, and the row's loop compiled once per shift.
template <int kPack, int kS = 0, typename F>
__device__ __forceinline__ void with_shift(int s, F&& f) {
  if constexpr (kS + 1 < kPack) {
    if (s != kS) return with_shift<kPack, kS + 1>(s, f);
  }
  f(std::integral_constant<int, kS>{});
}
/// [affine_cut]

/// The same, loading the packs of gamma and beta at the columns of `out`.
template <typename T, int kPack>
__device__ __forceinline__ void normalize_pack(const float* v, const T* gamma, const T* beta, float mu, float rs,
                                               T* out) {
  normalize_pack<T, kPack>(v, course::load_pack<T, kPack>(gamma), course::load_pack<T, kPack>(beta), mu, rs, out);
}

}  // namespace ch09
