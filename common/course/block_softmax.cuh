/// @file block_softmax.cuh
/// @brief Pieces shared by the block-per-row softmax kernels (chapters 06-08): the pack width
/// dispatch, and the final pass that writes exp(x - max) / sum (chapter 07 explains it).
#pragma once

#include <type_traits>

#include "course/convert.cuh"
#include "course/harness.h"
#include "course/launch_math.h"
#include "course/pack.cuh"
#include "course/softmax_warp.cuh"  // ScalarConvert

namespace course {

/// Calls f(std::integral_constant<int, N>{}) with N the largest pack (up to 16 bytes of T) that
/// divides cols and to which both a.x and a.y are aligned: 8, 4, 2 or 1 elements.
template <typename T, typename F>
void with_widest_pack(const Args& a, F&& f) {
  const int pack = max_aligned_pack(sizeof(T), 16 / sizeof(T), a.cols, {a.x, a.y});
  if constexpr (sizeof(T) == 2) {
    if (pack == 8) return f(std::integral_constant<int, 8>{});
  }
  if (pack == 4) return f(std::integral_constant<int, 4>{});
  if (pack == 2) return f(std::integral_constant<int, 2>{});
  f(std::integral_constant<int, 1>{});
}

/// [write_pass]
/// The last pass of a block-per-row softmax: read the row again, write exp(x - m) * inv, in packs,
/// the block's threads striding over the row's packs.
template <typename T, int kPack, int kBlock>
__device__ __forceinline__ void write_softmax_row(const T* __restrict__ xr, T* __restrict__ yr, int64_t num_packs,
                                                  float m, float inv) {
  for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {
    float v[kPack];
    ScalarConvert<T>::to_floats(load_pack<T, kPack>(xr + p * kPack), v);
#pragma unroll
    for (int j = 0; j < kPack; ++j) v[j] = expf(v[j] - m) * inv;
    Pack<T, kPack> pk;
    ScalarConvert<T>::from_floats(v, pk);
    store_pack<T, kPack>(yr + p * kPack, pk);
  }
}
/// [write_pass]

}  // namespace course
