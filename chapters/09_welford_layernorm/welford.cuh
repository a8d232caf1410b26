/// @file welford.cuh
/// @brief Mean and variance in one pass, by Welford's update and Chan's merge: per thread, across
/// a group of lanes (`__shfl_down_sync`, then a broadcast), across a block (shared memory).
/// Chapter 09 explains it and measures why.
#pragma once

#include <cuda_runtime_api.h>

namespace course {

/// [welford]
/// Running statistics of the elements seen so far: their count, mean, and the sum of squared
/// deviations from that mean (M2; the population variance is M2 / count).
struct Welford {
  float mean = 0.0f;
  float m2 = 0.0f;
  float count = 0.0f;  // exact up to 2^24 elements per row
};

/// Adds one element. Only deviations from the running mean are squared, so a large common offset
/// never enters a square (the sum-of-squares formula squares it and then cancels it).
__device__ __forceinline__ void welford_update(Welford& w, float x) {
  w.count += 1.0f;
  const float delta = x - w.mean;
  w.mean += __fdividef(delta, w.count);
  w.m2 += delta * (x - w.mean);  // the old and the new deviation: exact in exact arithmetic
}

/// Merges the statistics of two disjoint sets (Chan et al.). Either may be empty.
__device__ __forceinline__ Welford welford_merge(const Welford& a, const Welford& b) {
  const float count = a.count + b.count;
  if (count == 0.0f) return a;
  const float wb = __fdividef(b.count, count);  // b's share of the merged set
  const float delta = b.mean - a.mean;
  return {a.mean + delta * wb, a.m2 + b.m2 + delta * delta * a.count * wb, count};
}

/// The statistics of N values held in registers (a pack), by two passes over them: the pack's
/// mean, then its squared deviations. Merging a pack at a time (welford_merge) is Welford's
/// update done N elements at a step: one division per pack instead of one per element, and a
/// short dependency chain instead of N chained updates. With N = 1 it is welford_update.
template <int N>
__device__ __forceinline__ Welford welford_of(const float* v) {
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < N; ++j) sum += v[j];
  const float mean = sum * (1.0f / N);
  float m2 = 0.0f;
#pragma unroll
  for (int j = 0; j < N; ++j) m2 += (v[j] - mean) * (v[j] - mean);
  return {mean, m2, float(N)};
}

/// Merge over a group of kWidth lanes: a tree of `__shfl_down_sync` halvings leaves the result in
/// the group's first lane, and a `__shfl_sync` from it gives every lane the same answer. Not an
/// xor butterfly: welford_merge(a, b) and welford_merge(b, a) can round differently when the
/// counts differ, so a butterfly could leave a row's lanes with statistics a bit apart (it measured
/// within 0.4% of this tree: TUNING.md).
template <int kWidth>
__device__ __forceinline__ Welford group_welford(Welford w, unsigned mask) {
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2) {
    Welford other;
    other.mean = __shfl_down_sync(mask, w.mean, offset, kWidth);
    other.m2 = __shfl_down_sync(mask, w.m2, offset, kWidth);
    other.count = __shfl_down_sync(mask, w.count, offset, kWidth);
    w = welford_merge(w, other);  // lanes past the group's end merge garbage; only lane 0 is kept
  }
  w.mean = __shfl_sync(mask, w.mean, 0, kWidth);
  w.m2 = __shfl_sync(mask, w.m2, 0, kWidth);
  w.count = __shfl_sync(mask, w.count, 0, kWidth);
  return w;
}

/// Merge over a block of kBlock threads (a multiple of 32): each warp merges its lanes, warp 0
/// merges the warps' results from shared memory, and every thread reads the total back.
template <int kBlock>
__device__ __forceinline__ Welford block_welford(Welford w) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "whole warps, at most 32");
  constexpr int kWarps = kBlock / 32;
  __shared__ Welford partial[kWarps];
  __shared__ Welford total;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  w = group_welford<32>(w, 0xffffffffu);
  if (lane == 0) partial[warp] = w;
  __syncthreads();
  if (warp == 0) {
    w = lane < kWarps ? partial[lane] : Welford{};
    w = group_welford<32>(w, 0xffffffffu);
    if (lane == 0) total = w;
  }
  __syncthreads();
  return total;  // a second call writes `partial` first and meets a barrier before `total`
}

/// The statistics LayerNorm needs: mean and 1 / sqrt(var + eps), var = M2 / count clamped at 0.
/// A NaN M2 (a NaN or an infinity in the row: inf - inf) makes the mean NaN too, so that every
/// output of such a row is NaN, as in PyTorch.
__device__ __forceinline__ void welford_finish(const Welford& w, float eps, float* mean, float* rstd) {
  const bool nan = isnan(w.m2);
  const float var = nan ? w.m2 : fmaxf(w.m2 / w.count, 0.0f);  // fmaxf would turn NaN into 0
  *mean = nan ? w.m2 : w.mean;
  *rstd = rsqrtf(var + eps);
}
/// [welford]

}  // namespace course
