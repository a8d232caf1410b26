/// @file backward_uncached.cuh
/// @brief Chapter 14's uncached path: a block per row reading y and dy twice (chapter 12's
/// uncached path for the backward). The kernel and the launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backward_common.cuh"
#include "harness/errors.h"

namespace ch14 {

/// [backward_uncached]
/// A block per row, nothing cached: y and dy read for the sum (log-softmax: dy alone), then again
/// to write dx, the second time partly from L2. It runs where rows are long and few, one block of
/// 1024 threads per SM, so the loads in flight per thread cover the latency: four packs of each
/// tensor, held as loaded (kHold), which 16-bit rows need to stay within 64 registers.
/// kLog is a template parameter: softmax's instantiation carries none of log-softmax's code.
/// kPeel (blocks/peel.h): rows that are not whole numbers of packs, read in packs from each row's
/// first boundary (`head`), the head and tail (edges) one element per thread.
template <typename LoadY, typename LoadDy, typename Store, int kPack, int kBlock, bool kLog, bool kPeel = false>
__global__ void __launch_bounds__(kBlock)
    softmax_backward_uncached_kernel(LoadY load_y, LoadDy load_dy, Store store, int64_t rows, int64_t cols,
                                     int phase = 0) {
  constexpr int kUnroll = 4;
  constexpr bool kHold = true;
  const int64_t num_packs = cols / kPack;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const RowPeel pl = kPeel ? RowPeel::of<kPack>(phase, row, cols) : RowPeel{0, 0, 0, 0};
    const int64_t packs = kPeel ? int64_t(pl.packs) : num_packs, head = kPeel ? pl.head : 0;
    const int edge_col = kPeel && int(threadIdx.x) < pl.edges ? pl.edge_col(int(threadIdx.x)) : -1;  // -1: none
    const auto edge_y = fetch_edge<kPeel>(load_y, row, edge_col);  // converted after the packs' loads (PeelEdge)
    const auto edge_dy = fetch_edge<kPeel>(load_dy, row, edge_col);
    float s = 0;
    if constexpr (kLog) {  // log-softmax sums dy alone: y is read once, in the write pass
      for_each_pack<kBlock, kPack, kUnroll, false, kHold>(
          load_dy, row, 0, packs,
          [&](int64_t, const float* dy) {
#pragma unroll
            for (int j = 0; j < kPack; ++j) s += dy[j];
          },
          head);
    } else {
      for_each_pack2<kBlock, kPack, kUnroll, kHold>(
          load_y, load_dy, row, 0, packs,
          [&](int64_t, const float* y, const float* dy) {
#pragma unroll
            for (int j = 0; j < kPack; ++j) s += grad_term(y[j], dy[j], false);
          },
          head);
    }
    float ey = 0, edy = 0;  // this thread's edge of y and dy
    if (kPeel && edge_col >= 0) {
      ey = edge_y.value(load_y);
      edy = edge_dy.value(load_dy);
      s += grad_term(ey, edy, kLog);
    }
    s = block_allreduce<kBlock>(s, Sum{}, 0.0f);
    for_each_pack2<kBlock, kPack, kUnroll, kHold>(
        load_y, load_dy, row, 0, packs,
        [&](int64_t p, const float* y, const float* dy) {
          float out[kPack];
#pragma unroll
          for (int j = 0; j < kPack; ++j) out[j] = grad<Store::kFastExp>(y[j], dy[j], s, kLog);
          store.template store<kPack, kPeel>(out, row, head + p * kPack);
        },
        head);
    if (kPeel && edge_col >= 0) {
      const float dx = grad<Store::kFastExp>(ey, edy, s, kLog);
      store.template store<1>(&dx, row, edge_col);
    }
  }
}
/// [backward_uncached]

namespace detail {

template <int kPack, bool kPeel = false, typename T>
void launch_backward_uncached(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                              int64_t rows, int64_t cols, bool log, cudaStream_t stream, int phase = 0) {
  constexpr int kBlock = 1024;
  const unsigned grid = row_blocks(rows);
  if (log)
    softmax_backward_uncached_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, kBlock, true, kPeel>
        <<<grid, kBlock, 0, stream>>>(load_y, load_dy, store, rows, cols, phase);
  else
    softmax_backward_uncached_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, kBlock, false, kPeel>
        <<<grid, kBlock, 0, stream>>>(load_y, load_dy, store, rows, cols, phase);
  CUDA_CHECK_LAUNCH();
}

}  // namespace detail
}  // namespace ch14
