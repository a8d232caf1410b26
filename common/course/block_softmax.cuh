/// @file block_softmax.cuh
/// @brief The final pass shared by the block-per-row softmax kernels (chapters 07-08): read the
/// row again and write exp(x - max) / sum (chapter 07 explains it).
#pragma once

#include "course/convert.cuh"
#include "course/pack.cuh"

namespace course {

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
