/// @file reduce_scale.cuh
/// @brief Chapter 10: divide each row by its largest absolute value, in place. First the baseline
/// (a block per row, CUB's BlockReduce, the row read twice), then a warp per row with the row held
/// in registers and loaded in 16-byte packs: read once, written once.
///
/// x and y may be the same tensor (the in-place use), so neither pointer is `__restrict__`.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <string>

#include "blocks/convert.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"
#include "blocks/pack.cuh"
#include "blocks/warp.cuh"

namespace ch10 {

/// [block]
// The baseline's block, not tuned: at 128 columns half of it idles (TUNING.md).
constexpr int kBlock = 256;

template <typename T>
__global__ void __launch_bounds__(kBlock) reduce_scale_block_kernel(const T* x, T* y, int64_t cols) {
  using BlockReduce = cub::BlockReduce<float, kBlock>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float row_amax;
  const T* xr = x + int64_t(blockIdx.x) * cols;
  T* yr = y + int64_t(blockIdx.x) * cols;
  float m = 0;  // pass 1: read the row for max |x| (NaN-propagating, as torch.amax)
  for (int64_t c = threadIdx.x; c < cols; c += kBlock) m = course::NanMax{}(m, fabsf(course::to_float(xr[c])));
  m = BlockReduce(temp).Reduce(m, course::NanMax{});
  if (threadIdx.x == 0) row_amax = m;
  __syncthreads();
  m = row_amax;
  for (int64_t c = threadIdx.x; c < cols; c += kBlock)  // pass 2: read it again, divide, write
    yr[c] = course::from_float<T>(course::to_float(xr[c]) / m);
}
/// [block]

/// [warp]
// One warp per row, kPacks packs of kPack elements per lane, all in registers.
template <typename T, int kPack, int kPacks>
__global__ void __launch_bounds__(128) reduce_scale_warp_kernel(const T* x, T* y, int64_t rows, int64_t cols) {
  using Convert = course::ScalarConvert<T>;
  const int lane = threadIdx.x % 32;
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  for (int64_t row = warp; row < rows; row += warps) {
    float v[kPacks][kPack];
    float m = 0;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {  // read once
      const int64_t col = (int64_t(p) * 32 + lane) * kPack;
      if (col < cols) {
        Convert::to_floats(course::load_pack<T, kPack>(x + row * cols + col), v[p]);
#pragma unroll
        for (int j = 0; j < kPack; ++j) m = course::NanMax{}(m, fabsf(v[p][j]));
      }
    }
    m = course::group_reduce<32>(m, 0xffffffffu, course::NanMax{});
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {  // write once
      const int64_t col = (int64_t(p) * 32 + lane) * kPack;
      if (col < cols) {
#pragma unroll
        for (int j = 0; j < kPack; ++j) v[p][j] /= m;
        course::Pack<T, kPack> pk;
        Convert::from_floats(v[p], pk);
        course::store_pack<T, kPack>(y + row * cols + col, pk);
      }
    }
  }
}
/// [warp]

// 128 threads, four rows per block, at most 8 waves of resident blocks: chapters 03-05's grid,
// not re-tuned here (TUNING.md).
template <typename T, int kPack, int kPacks>
void launch_warp(const course::Args& a, cudaStream_t stream) {
  const unsigned blocks = course::resident_grid(a.rows, 4, 128, 8);
  reduce_scale_warp_kernel<T, kPack, kPacks>
      <<<blocks, 128, 0, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.rows, a.cols);
  CUDA_CHECK_LAUNCH();
}

// The fewest packs per lane (1 to 32) that cover the row: 1024 columns are 8 packs of 4 floats,
// or 32 single elements when an odd cols or a misaligned view forces packs of one.
template <typename T, int kPack>
void dispatch_packs(const course::Args& a, cudaStream_t stream) {
  const int64_t per_lane = course::ceil_div(a.cols, 32 * kPack);
  if (per_lane <= 1) return launch_warp<T, kPack, 1>(a, stream);
  if (per_lane <= 2) return launch_warp<T, kPack, 2>(a, stream);
  if (per_lane <= 4) return launch_warp<T, kPack, 4>(a, stream);
  if (per_lane <= 8) return launch_warp<T, kPack, 8>(a, stream);
  if constexpr (kPack <= 2) {
    if (per_lane <= 16) return launch_warp<T, kPack, 16>(a, stream);
  }
  if constexpr (kPack == 1) return launch_warp<T, kPack, 32>(a, stream);
  throw course::UsageError("reduce_scale_warp: cols = " + std::to_string(a.cols) + " does not fit in registers");
}


/// Baseline: one 256-thread block per row, the row read twice.
template <typename T>
void reduce_scale_block(const course::Args& a, cudaStream_t stream) {
  if (!course::check_block_per_row_args(a)) return;
  reduce_scale_block_kernel<T>
      <<<unsigned(a.rows), kBlock, 0, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.cols);
  CUDA_CHECK_LAUNCH();
}

/// A warp per row, the row in registers: cols <= 1024 (32 values per lane).
/// H100: at 1024 f32 columns the block baseline is already ahead (TUNING.md).
template <typename T>
void reduce_scale_warp(const course::Args& a, cudaStream_t stream) {
  if (!course::check_rowwise_args(a, 1024, "the warp path holds cols <= 1024 in registers")) return;
  course::with_widest_pack<T>(a.cols, a.x, a.y,
                              [&](auto pack) { dispatch_packs<T, decltype(pack)::value>(a, stream); });
}

}  // namespace ch10
