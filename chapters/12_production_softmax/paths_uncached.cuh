/// @file paths_uncached.cuh
/// @brief Chapter 12's uncached path: a block per row, the row read twice with the online (m, d)
/// pair (chapters 07-08). Its kernel and launch. The backward's kernel and launch:
/// 14_softmax_backward/backward_uncached.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "08_online_softmax/online_softmax.cuh"
#include "harness/errors.h"
#include "paths_common.cuh"

namespace ch12 {

/// A block per row, nothing cached: the online pair in one read, then a second read to write
/// (chapter 08), for rows too long for shared memory when there are enough of them. kPeel
/// (blocks/peel.h): rows that are not whole numbers of packs, read in packs from each row's first
/// boundary, the head and tail (edges) one element per thread, kept in a register.
template <typename Load, typename Store, int kPack, int kBlock, bool kPeel = false>
__global__ void __launch_bounds__(kBlock)
    softmax_uncached_kernel(Load load, Store store, int64_t rows, int64_t cols, bool log, int phase = 0) {
  const int64_t num_packs = cols / kPack;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    course::MaxSum t;
    if constexpr (kPeel) {
      const RowPeel pl = RowPeel::of<kPack>(phase, row, cols);
      const int edge_col = int(threadIdx.x) < pl.edges ? pl.edge_col(int(threadIdx.x)) : -1;  // -1: none
      const auto edge_in = fetch_edge<kPeel>(load, row, edge_col);
      for_each_pack<kBlock, kPack>(
          load, row, 0, pl.packs, [&](int64_t, const float* v) { course::online_update<kPack>(t, v); }, pl.head);
      const float edge = edge_in.here() ? edge_in.value(load) : 0.0f;  // converted after the packs' loads
      if (edge_in.here()) course::online_update<1>(t, &edge);
      t = course::block_merge<kBlock>(t);
      const float k = row_constant(t.d, log);
      for_each_pack<kBlock, kPack>(
          load, row, 0, pl.packs,
          [&](int64_t p, const float* v) {
            float out[kPack];
#pragma unroll
            for (int j = 0; j < kPack; ++j) out[j] = finish<Store::kFastExp>(v[j], t.m, k, log);
            store.template store<kPack, kPeel>(out, row, pl.head + p * kPack);
          },
          pl.head);
      if (edge_in.here()) {
        const float out = finish<Store::kFastExp>(edge, t.m, k, log);
        store.template store<1>(&out, row, edge_in.col);
      }
      continue;
    }
    for_each_pack<kBlock, kPack>(load, row, 0, num_packs,
                                 [&](int64_t, const float* v) { course::online_update<kPack>(t, v); });
    t = course::block_merge<kBlock>(t);
    const float k = row_constant(t.d, log);
    for_each_pack<kBlock, kPack>(load, row, 0, num_packs, [&](int64_t p, const float* v) {
      float out[kPack];
#pragma unroll
      for (int j = 0; j < kPack; ++j) out[j] = finish<Store::kFastExp>(v[j], t.m, k, log);
      store.template store<kPack>(out, row, p * kPack);
    });
  }
}

namespace detail {

template <int kPack, bool kPeel = false, typename Load, typename Store>
void launch_uncached(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
                     cudaStream_t stream, int phase = 0) {
  constexpr int kBlock = 1024;
  softmax_uncached_kernel<Load, Store, kPack, kBlock, kPeel>
      <<<row_blocks(rows), kBlock, 0, stream>>>(load, store, rows, cols, log, phase);
  CUDA_CHECK_LAUNCH();
}

}  // namespace detail
}  // namespace ch12
