/// @file uncached_softmax.cuh
/// @brief Chapter 07: rows too long for shared memory. Nothing is cached: a block of 1024 threads
/// reads the row three times (max, sum, write), in 16-byte packs, relying on L2 to serve the
/// re-reads while the row is still there. Any cols, up to millions.
#pragma once

#include <cub/block/block_reduce.cuh>

#include "blocks/convert.cuh"
#include "blocks/pack.cuh"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"

namespace ch07 {

// One block of 1024 threads (the most a block can have) per row: each row is done quickly, which
// the few-long-rows regime needs, and two rows fill an SM. Not A/B-measured; at 49152 x 4096 it
// leaves few bytes in flight per SM (the lesson; TUNING.md says how to re-measure).
constexpr int kBlock = 1024;

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

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
    softmax_uncached_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
  using BlockReduce = cub::BlockReduce<float, kBlock>;
  using Convert = course::ScalarConvert<T>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float row_max, row_sum;
  const int64_t num_packs = cols / kPack;
  const T* xr = x + int64_t(blockIdx.x) * cols;
  T* yr = y + int64_t(blockIdx.x) * cols;

  float m = -INFINITY;  // pass 1: read the row for its max
  for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {
    float v[kPack];
    Convert::to_floats(course::load_pack<T, kPack>(xr + p * kPack), v);
#pragma unroll
    for (int j = 0; j < kPack; ++j) m = fmaxf(m, v[j]);
  }
  m = BlockReduce(temp).Reduce(m, MaxOp{});
  if (threadIdx.x == 0) row_max = m;
  __syncthreads();
  m = row_max;

  float s = 0;  // pass 2: read it again for the sum of exponentials
  for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {
    float v[kPack];
    Convert::to_floats(course::load_pack<T, kPack>(xr + p * kPack), v);
#pragma unroll
    for (int j = 0; j < kPack; ++j) s += expf(v[j] - m);
  }
  s = BlockReduce(temp).Sum(s);
  if (threadIdx.x == 0) row_sum = s;
  __syncthreads();
  const float inv = 1.0f / row_sum;

  write_softmax_row<T, kPack>(xr, yr, num_packs, m, inv);  // pass 3: read once more, write y
}
/// [kernel]

template <typename T, int kPack>
void launch(const course::Args& a, cudaStream_t stream) {
  softmax_uncached_kernel<T, kPack>
      <<<unsigned(a.rows), kBlock, 0, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.cols);
  CUDA_CHECK_LAUNCH();
}

/// Softmax of rows of any length: one 1024-thread block per row, the row read three times.
template <typename T>
void softmax_uncached(const course::Args& a, cudaStream_t stream) {
  if (!course::check_block_per_row_args(a)) return;
  course::with_widest_pack<T>(a.cols, a.x, a.y, [&](auto pack) { launch<T, decltype(pack)::value>(a, stream); });
}

}  // namespace ch07
