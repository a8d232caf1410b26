/// @file online_softmax.cuh
/// @brief The online softmax's running pair (m, d): the largest value seen and the sum of
/// exp(x - m) over the values seen, and its merges across a warp and a block (chapter 08
/// explains them; chapter 12's several-blocks-per-row kernel merges across a cluster too).
#pragma once

#include <cmath>

namespace course {

/// [merge]
// (m, d): the largest value seen and the sum of exp(x - m) over the values seen. Merging two of
// them rescales each sum to the common maximum. While the maximum is still -inf there is nothing
// to rescale: the sums just add (0 + 0, or a NaN that must reach the result) instead of computing
// exp(-inf - -inf) = NaN from -inf entries, which must give 0.
struct MaxSum {
  float m = -INFINITY;
  float d = 0.0f;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, a.d + b.d};
  return {m, a.d * expf(a.m - m) + b.d * expf(b.m - m)};
}

// Every lane of the warp gets the warp's merged pair.
__device__ __forceinline__ MaxSum warp_merge(MaxSum v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const MaxSum o{__shfl_xor_sync(0xffffffffu, v.m, offset), __shfl_xor_sync(0xffffffffu, v.d, offset)};
    v = merge(v, o);
  }
  return v;
}

// Every thread of the block gets the block's merged pair: warps merge, warp 0 merges the warps.
template <int kBlock>
__device__ MaxSum block_merge(MaxSum v) {
  __shared__ MaxSum warp_result[kBlock / 32];
  __shared__ MaxSum block_result;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_merge(v);
  __syncthreads();  // a previous call's readers of block_result are done
  if (lane == 0) warp_result[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kBlock / 32 ? warp_result[lane] : MaxSum{};
    v = warp_merge(v);
    if (lane == 0) block_result = v;
  }
  __syncthreads();
  return block_result;
}
/// [merge]

/// [online_update]
// Adds a pack of values to a thread's running pair: one rescale per pack. fmaxf skips NaN, so a
// NaN element is caught by hand while the maximum is still -inf (exp(NaN - m) poisons the sum
// once it is finite).
template <int kPack>
__device__ __forceinline__ void online_update(MaxSum& t, const float* v) {
  float pack_max = v[0];
#pragma unroll
  for (int j = 1; j < kPack; ++j) pack_max = fmaxf(pack_max, v[j]);
  const float m = fmaxf(t.m, pack_max);
  if (m == -INFINITY) {  // only -inf so far (which adds 0) or NaN (which must poison the sum)
#pragma unroll
    for (int j = 0; j < kPack; ++j)
      if (isnan(v[j])) t.d = NAN;
    return;
  }
  float d = t.d * expf(t.m - m);
#pragma unroll
  for (int j = 0; j < kPack; ++j) d += expf(v[j] - m);
  t = {m, d};
}
/// [online_update]

}  // namespace course
