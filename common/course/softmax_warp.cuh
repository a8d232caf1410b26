/// @file softmax_warp.cuh
/// @brief Softmax with the row in registers and one warp (or a narrower group of lanes) per row:
/// chapter 03 explains the warp path, chapter 04 the packs, chapter 05 the paired conversions.
///
/// Each group of `kWidth` lanes owns `kRows` rows at a time; each lane holds `kColsPerThread`
/// columns of each row in registers, loaded `kPack` at a time. The row max and sum are group
/// all-reductions through shuffles (warp.cuh), so the row is read once and written once.
/// `Convert` turns packs of the storage type into floats and back (ScalarConvert here; chapter
/// 05 adds paired half2 conversions).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "course/convert.cuh"
#include "course/device.h"
#include "course/errors.h"
#include "course/harness.h"
#include "course/launch_math.h"
#include "course/pack.cuh"
#include "course/warp.cuh"
#include "course/warp_dispatch.cuh"

namespace course {

/// Threads per block of the warp-per-row kernels.
constexpr int kWarpSoftmaxBlock = 128;
/// The largest cols the warp path handles: 32 lanes x 32 registers.
constexpr int64_t kWarpSoftmaxMaxCols = 1024;

/// [warp_kernel]
template <typename T, typename Convert, int kPack, int kColsPerThread, int kWidth, int kRows>
__global__ void __launch_bounds__(kWarpSoftmaxBlock)
    softmax_warp_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols) {
  static_assert(kColsPerThread % kPack == 0, "whole packs per thread");
  constexpr int kPacks = kColsPerThread / kPack;
  const int lane = threadIdx.x % kWidth;
  const unsigned mask = group_mask<kWidth>();
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
      for (int p = 0; p < kPacks; ++p) {
        const int64_t col = (int64_t(p) * kWidth + lane) * kPack;  // packs interleaved across lanes
        if (row < rows && col < cols) {
          Convert::to_floats(load_pack<T, kPack>(x + row * cols + col), &v[r][p * kPack]);
        } else {
#pragma unroll
          for (int j = 0; j < kPack; ++j) v[r][p * kPack + j] = -INFINITY;  // padding: exp gives 0
        }
#pragma unroll
        for (int j = 0; j < kPack; ++j) m[r] = fmaxf(m[r], v[r][p * kPack + j]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) m[r] = group_max<kWidth>(m[r], mask);
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
    for (int r = 0; r < kRows; ++r) inv[r] = 1.0f / group_sum<kWidth>(s[r], mask);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {  // normalize and store
      const int64_t row = row0 + r;
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t col = (int64_t(p) * kWidth + lane) * kPack;
        if (row < rows && col < cols) {
          float out[kPack];
#pragma unroll
          for (int j = 0; j < kPack; ++j) out[j] = v[r][p * kPack + j] * inv[r];
          Pack<T, kPack> pk;
          Convert::from_floats(out, pk);
          store_pack<T, kPack>(y + row * cols + col, pk);
        }
      }
    }
  }
}
/// [warp_kernel]

namespace detail {

template <typename T, typename Convert, int kPack, int kColsPerThread, int kWidth>
void launch_softmax_warp(const Args& a, cudaStream_t stream) {
  // Several rows per group when a row gives each lane only a few loads (warp_dispatch.cuh).
  constexpr int kRows = rows_per_group<kPack, kColsPerThread>();
  constexpr int kRowsPerBlock = kWarpSoftmaxBlock / kWidth * kRows;
  const unsigned blocks = resident_grid(a.rows, kRowsPerBlock, kWarpSoftmaxBlock, 8);
  softmax_warp_kernel<T, Convert, kPack, kColsPerThread, kWidth, kRows>
      <<<blocks, kWarpSoftmaxBlock, 0, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.rows, a.cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace detail

/// Softmax of each row, cols <= 1024, one group of lanes per row, in the widest pack (up to
/// kMaxPack elements) that cols and both pointers allow (pack.cuh: with_widest_pack).
template <typename T, typename Convert, int kMaxPack>
void softmax_warp(const Args& a, cudaStream_t stream) {
  if (!check_rowwise_args(a, kWarpSoftmaxMaxCols, "the warp path holds cols <= 1024 in registers")) return;
  with_widest_pack<T, kMaxPack>(a.cols, a.x, a.y, [&](auto pack) {
    constexpr int kPack = decltype(pack)::value;
    dispatch_warp_shape<kPack>(a.cols, [&](auto cols_per_thread, auto width) {
      detail::launch_softmax_warp<T, Convert, kPack, decltype(cols_per_thread)::value, decltype(width)::value>(a,
                                                                                                              stream);
    });
  });
}

}  // namespace course
