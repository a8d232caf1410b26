/// @file backward_warp.cuh
/// @brief Chapter 14's warp path: a group of lanes per row with y and dy in registers (chapter
/// 12's warp path for the backward): the group's passes (which the tile path shares), the kernel
/// and the launch, with the forward's group shapes (one pack per lane).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "12_production_softmax/paths_warp.cuh"
#include "backward_common.cuh"
#include "blocks/warp.cuh"
#include "harness/errors.h"
#include "harness/launch_math.h"

namespace ch14 {

/// [backward_warp]
/// A group of kWidth lanes takes kRows rows (kRowStride apart, from row0) with y and dy in
/// registers: the sum of grad_term over each row, then dx. kPeel (blocks/peel.h): rows that are not whole
/// numbers of packs, read in packs from each row's first boundary, the head and tail (edges) one
/// element per lane, kEdges slots a lane.
template <int kPack, int kPacks, int kWidth, int kRows, int kRowStride, bool kPeel = false, typename LoadY,
          typename LoadDy, typename Store>
__device__ __forceinline__ void backward_warp_rows(const LoadY& load_y, const LoadDy& load_dy, const Store& store,
                                                   int64_t row0, int64_t rows, int64_t cols, bool log, int phase = 0) {
  constexpr int kColsPerThread = kPacks * kPack;
  const int lane = threadIdx.x % kWidth;
  const unsigned mask = course::group_mask<kWidth>();
  auto row_of = [&](int r) { return row0 + int64_t(r) * kRowStride; };  // the group's r-th row
  RowPeel pl[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) pl[r] = kPeel ? RowPeel::of<kPack>(phase, row_of(r), cols) : RowPeel{0, 0, 0, 0};
  auto col_of = [&](int r, int p) { return (kPeel ? pl[r].head : 0) + (int64_t(p) * kWidth + lane) * kPack; };
  auto here = [&](int r, int p) { return row_of(r) < rows && p * kWidth + lane < pl[r].packs; };  // kPeel
  constexpr int kEdges = kPeel ? (2 * kPack - 2 + kWidth - 1) / kWidth : 0;  // edge slots per lane
  auto edge_here = [&](int r, int e) { return row_of(r) < rows && e * kWidth + lane < pl[r].edges; };
  float ey[kRows][kEdges > 0 ? kEdges : 1], edy[kRows][kEdges > 0 ? kEdges : 1];

  float y[kRows][kColsPerThread], dy[kRows][kColsPerThread];
  float s[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    s[r] = 0;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t col = kPeel ? col_of(r, p) : (int64_t(p) * kWidth + lane) * kPack;
      if (kPeel ? here(r, p) : row_of(r) < rows && col < cols) {
        load_y.template load<kPack>(&y[r][p * kPack], row_of(r), col);
        load_dy.template load<kPack>(&dy[r][p * kPack], row_of(r), col);
      } else {
#pragma unroll
        for (int j = 0; j < kPack; ++j) y[r][p * kPack + j] = dy[r][p * kPack + j] = 0;
      }
#pragma unroll
      for (int j = 0; j < kPack; ++j) s[r] += grad_term(y[r][p * kPack + j], dy[r][p * kPack + j], log);
    }
#pragma unroll
    for (int e = 0; e < kEdges; ++e) {
      ey[r][e] = edy[r][e] = 0;
      if (edge_here(r, e)) {
        const int c = pl[r].edge_col(e * kWidth + lane);
        load_y.template load<1>(&ey[r][e], row_of(r), c);
        load_dy.template load<1>(&edy[r][e], row_of(r), c);
      }
      s[r] += grad_term(ey[r][e], edy[r][e], log);
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) s[r] = course::group_sum<kWidth>(s[r], mask);
  with_log(log, [&](auto op_log) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t col = kPeel ? col_of(r, p) : (int64_t(p) * kWidth + lane) * kPack;
        if (kPeel ? here(r, p) : row_of(r) < rows && col < cols) {
          float out[kPack];
#pragma unroll
          for (int j = 0; j < kPack; ++j)
            out[j] = grad<Store::kFastExp>(y[r][p * kPack + j], dy[r][p * kPack + j], s[r], op_log);
          store.template store<kPack, kPeel>(out, row_of(r), col);
        }
      }
#pragma unroll
      for (int e = 0; e < kEdges; ++e)
        if (edge_here(r, e)) {
          const float out = grad<Store::kFastExp>(ey[r][e], edy[r][e], s[r], op_log);
          store.template store<1>(&out, row_of(r), pl[r].edge_col(e * kWidth + lane));
        }
    }
  });
}

/// The backward's warp kernel: each group of lanes grid-strides over the rows, kRows at a time.
template <typename LoadY, typename LoadDy, typename Store, int kPack, int kColsPerThread, int kWidth, int kRows,
          bool kPeel = false>
__global__ void __launch_bounds__(policy::kWarpPathBlock)
    softmax_backward_warp_kernel(LoadY load_y, LoadDy load_dy, Store store, int64_t rows, int64_t cols, bool log,
                                 int phase = 0) {
  const int64_t group = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWidth;
  const int64_t row_step = int64_t(gridDim.x) * blockDim.x / kWidth * kRows;
  for (int64_t row0 = group * kRows; row0 < rows; row0 += row_step)
    backward_warp_rows<kPack, kColsPerThread / kPack, kWidth, kRows, 1, kPeel>(load_y, load_dy, store, row0, rows, cols,
                                                                              log, phase);
}
/// [backward_warp]

namespace detail {

template <int kPack, bool kPeel = false, typename T>
void launch_backward_warp(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                          int64_t rows, int64_t cols, bool log, cudaStream_t stream, int phase = 0) {
  ch12::detail::warp_shape<1, kPack, kWarpColsPerLane<T>>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    const unsigned blocks = course::resident_grid(rows, policy::kWarpPathBlock / kWidth * kRows, policy::kWarpPathBlock, 8);
    softmax_backward_warp_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, kCols, kWidth, kRows, kPeel>
        <<<blocks, policy::kWarpPathBlock, 0, stream>>>(load_y, load_dy, store, rows, cols, log, phase);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace detail
}  // namespace ch14
