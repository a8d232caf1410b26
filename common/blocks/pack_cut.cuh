/// Taught in chapter 09 (LayerNorm: gamma and beta on a peeled row); chapter 15's RMSNorm forward uses it too.
/// @file pack_cut.cuh
/// @brief A pack at any element, cut out of the two aligned packs it straddles.
#pragma once

#include <type_traits>

#include "blocks/pack.cuh"

namespace course {

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
    return load_pack<T, kPack>(base);
  } else {
    const Pack<T, kPack> lo = load_pack<T, kPack>(base);
    Pack<T, kPack> hi = lo;
    if (base + 2 * kPack <= end) {
      hi = load_pack<T, kPack>(base + kPack);
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

}  // namespace course
