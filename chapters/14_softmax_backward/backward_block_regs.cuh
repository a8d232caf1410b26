/// @file backward_block_regs.cuh
/// @brief Chapter 14's block-registers path: a block per row with y and dy in registers (chapter
/// 12's block-registers path for the backward). The kernel, and the launch with the block size
/// from the bytes in flight (ch12::detail::block_regs_shape).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "12_production_softmax/paths_block_regs.cuh"
#include "backward_common.cuh"
#include "harness/errors.h"

namespace ch14 {

/// [backward_block_regs]
/// A block per row with y and dy in registers, as the forward's block-registers kernel: thread t
/// holds packs t, t + blockDim.x, ... of both, as loaded (16-bit packs in half the registers),
/// all loaded before the sum; one block reduction, then dx from registers. Each tensor read once,
/// no shared memory, every load of the row in flight at once. kPeel (blocks/peel.h): rows that are
/// not whole numbers of packs, read in packs from each row's first boundary, the head and tail
/// (edges) one element per thread.
template <typename LoadY, typename LoadDy, typename Store, int kPack, int kPacks, bool kPeel = false>
__global__ void __launch_bounds__(policy::kBlockRegsMaxBlock)
    softmax_backward_block_regs_kernel(LoadY load_y, LoadDy load_dy, Store store, int64_t rows, int64_t cols,
                                       bool log, int phase = 0) {
  const int num_packs = int(cols / kPack), block = int(blockDim.x);
  auto here_whole = [&](int p) { return p * block + int(threadIdx.x) < num_packs; };
  auto col_whole = [&](int p) { return int64_t(p * block + int(threadIdx.x)) * kPack; };
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    RowPeel pl{0, num_packs, 0, 0};
    if constexpr (kPeel) pl = RowPeel::of<kPack>(phase, row, cols);
    auto here = [&](int p) { return kPeel ? p * block + int(threadIdx.x) < pl.packs : here_whole(p); };
    auto col_of = [&](int p) { return kPeel ? pl.head + col_whole(p) : col_whole(p); };
    const int edge_col = kPeel && int(threadIdx.x) < pl.edges ? pl.edge_col(int(threadIdx.x)) : -1;  // -1: none
    const auto edge_y = fetch_edge<kPeel>(load_y, row, edge_col);  // converted after the packs' loads (PeelEdge)
    const auto edge_dy = fetch_edge<kPeel>(load_dy, row, edge_col);
    typename LoadY::template Fetched<kPack> ry[kPacks];
    typename LoadDy::template Fetched<kPack> rdy[kPacks];
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(p)) {
        ry[p] = load_y.template fetch<kPack>(row, col_of(p));
        rdy[p] = load_dy.template fetch<kPack>(row, col_of(p));
      }
    auto each_pack = [&](auto&& f) {  // f(p, y, dy) on each held pack, converted to fp32
#pragma unroll
      for (int p = 0; p < kPacks; ++p)
        if (here(p)) {
          float y[kPack], dy[kPack];
          load_y.template convert<kPack>(ry[p], y);
          load_dy.template convert<kPack>(rdy[p], dy);
          f(p, y, dy);
        }
    };
    const float ey = kPeel && edge_col >= 0 ? edge_y.value(load_y) : 0.0f;  // this thread's edge of y and dy
    const float edy = kPeel && edge_col >= 0 ? edge_dy.value(load_dy) : 0.0f;
    float s = kPeel && edge_col >= 0 ? grad_term(ey, edy, log) : 0.0f;
    each_pack([&](int, const float* y, const float* dy) {
#pragma unroll
      for (int j = 0; j < kPack; ++j) s += grad_term(y[j], dy[j], log);
    });
    s = block_allreduce<policy::kBlockRegsMaxBlock>(s, Sum{}, 0.0f, block / 32);
    each_pack([&](int p, float* y, const float* dy) {
#pragma unroll
      for (int j = 0; j < kPack; ++j) y[j] = grad<Store::kFastExp>(y[j], dy[j], s, log);
      store.template store<kPack, kPeel>(y, row, col_of(p));
    });
    if (kPeel && edge_col >= 0) {
      const float dx = grad<Store::kFastExp>(ey, edy, s, log);
      store.template store<1>(&dx, row, edge_col);
    }
  }
}
/// [backward_block_regs]

namespace detail {

/// The backward's block-registers launch: the block size as the forward's (block_regs_shape),
/// aiming at policy::kBlockRegsBackwardInFlight bytes of y and dy in flight per SM.
template <int kPack, typename T, bool kPeel = false>
auto block_regs_backward_kernels() {
  return ch12::detail::kernels_by_packs<policy::kBlockRegsMaxElems / kPack>([](auto packs) {
    return softmax_backward_block_regs_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack,
                                              decltype(packs)::value, kPeel>;
  });
}
template <int kPack, typename T, bool kPeel = false>
ch12::detail::BlockRegsShape block_regs_backward_shape(int64_t cols) {
  static const auto kernels = block_regs_backward_kernels<kPack, T, kPeel>();
  return ch12::detail::block_regs_shape(kernels, cols / kPack, 2 * cols * int64_t(sizeof(T)),
                                       policy::in_flight_target(ch12::device(), policy::kBlockRegsBackwardInFlight));
}
template <int kPack, bool kPeel = false, typename T>
void launch_backward_block_regs(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                                int64_t rows, int64_t cols, bool log, cudaStream_t stream, int phase = 0) {
  static const auto kernels = block_regs_backward_kernels<kPack, T, kPeel>();
  const ch12::detail::BlockRegsShape s = block_regs_backward_shape<kPack, T, kPeel>(cols);
  course::require(s.block > 0, ch12::detail::block_regs_limit_text(), ", got ", cols);
  kernels[s.packs - 1]<<<row_blocks(rows), s.block, 0, stream>>>(load_y, load_dy, store, rows, cols, log, phase);
  CUDA_CHECK_LAUNCH();
}

}  // namespace detail
}  // namespace ch14
