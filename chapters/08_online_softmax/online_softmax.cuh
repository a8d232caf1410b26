/// @file online_softmax.cuh
/// @brief Chapter 08: chapter 07's uncached kernel with the max and the sum found in one pass.
/// Each thread keeps a running (max m, sum d) and rescales d whenever m grows; threads, warps and
/// the block merge their pairs with d = d_a * exp(m_a - m) + d_b * exp(m_b - m). The row is read
/// twice instead of three times.
///
/// The pair and its merges are in namespace course: chapter 12 merges them across a cluster too.
#pragma once

#include <cmath>

#include "blocks/convert.cuh"
#include "blocks/pack.cuh"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"

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

namespace ch08 {

// One block of 1024 threads (the most a block can have) per row: each row is done quickly, which
// the few-long-rows regime needs, and two rows fill an SM. Not A/B-measured; at 49152 x 4096 it
// leaves few bytes in flight per SM (the lesson; TUNING.md says how to re-measure).
constexpr int kBlock = 1024;

/// [write_pass]
/// The last pass of a block-per-row softmax: read the row again, write exp(x - m) * inv, in packs,
/// the block's threads striding over the row's packs.
template <typename T, int kPack>
__device__ __forceinline__ void write_softmax_row(const T* __restrict__ xr, T* __restrict__ yr, int64_t num_packs,
                                                  float m, float inv) {
  for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {
    float v[kPack];
    course::ScalarConvert<T>::to_floats(course::load_pack<T, kPack>(xr + p * kPack), v);
#pragma unroll
    for (int j = 0; j < kPack; ++j) v[j] = expf(v[j] - m) * inv;
    course::Pack<T, kPack> pk;
    course::ScalarConvert<T>::from_floats(v, pk);
    course::store_pack<T, kPack>(yr + p * kPack, pk);
  }
}
/// [write_pass]

/// [kernel]
template <typename T, int kPack>
__global__ void __launch_bounds__(kBlock)
    softmax_online_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
  using Convert = course::ScalarConvert<T>;
  const int64_t num_packs = cols / kPack;
  const T* xr = x + int64_t(blockIdx.x) * cols;
  T* yr = y + int64_t(blockIdx.x) * cols;

  course::MaxSum t;  // pass 1: max and sum together, one rescale per pack
  for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {
    float v[kPack];
    Convert::to_floats(course::load_pack<T, kPack>(xr + p * kPack), v);
    course::online_update<kPack>(t, v);
  }
  const course::MaxSum row = course::block_merge<kBlock>(t);
  const float inv = 1.0f / row.d;

  write_softmax_row<T, kPack>(xr, yr, num_packs, row.m, inv);  // pass 2: read again, write y
}
/// [kernel]

template <typename T, int kPack>
void launch(const course::Args& a, cudaStream_t stream) {
  softmax_online_kernel<T, kPack>
      <<<unsigned(a.rows), kBlock, 0, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.cols);
  CUDA_CHECK_LAUNCH();
}

/// Softmax of rows of any length: one 1024-thread block per row, the row read twice.
template <typename T>
void softmax_online(const course::Args& a, cudaStream_t stream) {
  if (!course::check_block_per_row_args(a)) return;
  course::with_widest_pack<T>(a.cols, a.x, a.y, [&](auto pack) { launch<T, decltype(pack)::value>(a, stream); });
}

}  // namespace ch08
