/// @file warp_softmax.cuh
/// @brief Chapter 03: a warp per row, the row in registers, max and sum by `__shfl_xor_sync`
/// all-reductions: no shared memory and no block barrier. Short rows take narrower groups of lanes
/// (1 to 16) and several rows per group, so that small cols still fill the GPU.
///
/// Each lane loads one element per instruction (`x[row * cols + col]`), on purpose: a 16-bit row
/// then moves 2 bytes per load and falls behind f32. The next chapter replaces these loads by
/// 16-byte packs; the group shapes, which count packs, change with them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "blocks/convert.cuh"
#include "blocks/warp.cuh"
#include "blocks/warp_dispatch.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"

namespace ch03 {

/// Threads per block: four warps, any number of groups of lanes.
/// H100, chapter 12's warp kernel: 64 or 256 threads no better than 128 at short rows (chapter 03's TUNING.md).
constexpr int kBlock = 128;
/// The longest row the kernel holds: 32 lanes x 32 registers.
constexpr int64_t kMaxCols = 1024;

/// [warp_kernel]
/// Each group of kWidth lanes owns kRows rows at a time; each lane holds kColsPerThread columns of
/// each row in registers, lane l holding columns l, l + kWidth, l + 2 kWidth, ...: the group's
/// loads of one step are neighbouring addresses (coalesced).
template <typename T, int kColsPerThread, int kWidth, int kRows>
__global__ void __launch_bounds__(kBlock)
    softmax_warp_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWidth;
  const unsigned mask = course::group_mask<kWidth>();
  const int64_t group = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWidth;
  const int64_t row_step = int64_t(gridDim.x) * blockDim.x / kWidth * kRows;

  float v[kRows][kColsPerThread];  // the rows, in registers: every index is a compile-time constant
  for (int64_t row0 = group * kRows; row0 < rows; row0 += row_step) {
    float m[kRows], s[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {  // load, and each lane's partial max
      const int64_t row = row0 + r;
      m[r] = -INFINITY;
#pragma unroll
      for (int i = 0; i < kColsPerThread; ++i) {
        const int64_t col = int64_t(i) * kWidth + lane;
        // Padding past the row (or past the last row) is -inf: its exp is 0.
        v[r][i] = row < rows && col < cols ? course::to_float(x[row * cols + col]) : -INFINITY;
        m[r] = fmaxf(m[r], v[r][i]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) m[r] = course::group_max<kWidth>(m[r], mask);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      s[r] = 0;
#pragma unroll
      for (int i = 0; i < kColsPerThread; ++i) {
        v[r][i] = expf(v[r][i] - m[r]);
        s[r] += v[r][i];
      }
    }
    float inv[kRows];  // one division per row; a multiply per element (within 1 ulp of dividing)
#pragma unroll
    for (int r = 0; r < kRows; ++r) inv[r] = 1.0f / course::group_sum<kWidth>(s[r], mask);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {  // normalize and store
      const int64_t row = row0 + r;
#pragma unroll
      for (int i = 0; i < kColsPerThread; ++i) {
        const int64_t col = int64_t(i) * kWidth + lane;
        if (row < rows && col < cols) y[row * cols + col] = course::from_float<T>(v[r][i] * inv[r]);
      }
    }
  }
}
/// [warp_kernel]

/// [launch]
template <typename T, int kColsPerThread, int kWidth>
void launch_softmax_warp(const course::Args& a, cudaStream_t stream) {
  // Several rows per group when a row gives each lane only a few loads (warp_dispatch.cuh).
  constexpr int kRows = course::rows_per_group<1, kColsPerThread>();
  constexpr int kRowsPerBlock = kBlock / kWidth * kRows;
  // At most 8 waves of blocks. H100: 64 waves were level on chapter 12's warp grids (chapter 03's TUNING.md).
  const unsigned blocks = course::resident_grid(a.rows, kRowsPerBlock, kBlock, 8);
  softmax_warp_kernel<T, kColsPerThread, kWidth, kRows>
      <<<blocks, kBlock, 0, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.rows, a.cols);
  CUDA_CHECK_LAUNCH();
}

/// Softmax of each row, cols <= 1024: the narrowest group of lanes that covers a short row, a full
/// warp and the fewest columns per lane for a longer one (warp_dispatch.cuh).
template <typename T>
void softmax_warp(const course::Args& a, cudaStream_t stream) {
  if (!course::check_rowwise_args(a, kMaxCols, "the warp path holds cols <= 1024 in registers")) return;
  course::dispatch_warp_shape<1>(a.cols, [&](auto cols_per_thread, auto width) {
    launch_softmax_warp<T, decltype(cols_per_thread)::value, decltype(width)::value>(a, stream);
  });
}
/// [launch]

}  // namespace ch03
