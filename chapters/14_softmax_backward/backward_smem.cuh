/// @file backward_smem.cuh
/// @brief Chapter 14's shared-memory path: a block per row caching y and dy (or one of them) in
/// shared memory (chapter 12's shared-memory path for the backward). The kernel, and the launch
/// with its choice of what to cache.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backward_common.cuh"
#include "blocks/occupancy.cuh"
#include "harness/errors.h"

namespace ch14 {

/// [backward_smem]
/// What the backward's shared-memory kernel keeps of a row (profilers print the number).
enum class BackwardCache {
  y_dy = 0,  // both: each read once, the write pass from shared memory
  y = 1,     // y alone, when both do not fit: dy read again in the write pass (from L2 while fresh)
  dy = 2,    // dy alone, for log-softmax when both do not fit: its sum needs dy only, so the sum
             // pass reads dy and the write pass reads y, each once
};

/// A block per row, caching what kCache names in shared memory (each in its Load::Cache type):
/// sum the row's grad_term, then write dx. kPeel (blocks/peel.h): rows that are not whole numbers of
/// packs, read in packs from each row's first boundary; the head and tail (edges) one element per
/// thread, y and dy of it kept in registers.
template <typename LoadY, typename LoadDy, typename Store, int kPack, int kBlock, BackwardCache kCache,
          bool kPeel = false>
__global__ void __launch_bounds__(kBlock)
    softmax_backward_smem_kernel(LoadY load_y, LoadDy load_dy, Store store, int64_t rows, int64_t cols,
                                 size_t dy_offset, bool log, int phase = 0) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int64_t num_packs = cols / kPack;
  const RowCache<typename LoadY::Cache, kPack> cy{reinterpret_cast<typename LoadY::Cache*>(smem), int(num_packs)};
  const RowCache<typename LoadDy::Cache, kPack> cdy{reinterpret_cast<typename LoadDy::Cache*>(smem + dy_offset),
                                                    int(num_packs)};
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const RowPeel pl = kPeel ? RowPeel::of<kPack>(phase, row, cols) : RowPeel{0, int(num_packs), 0, 0};
    const int64_t packs = kPeel ? pl.packs : num_packs, head = pl.head;
    const int edge_col = int(threadIdx.x) < pl.edges ? pl.edge_col(int(threadIdx.x)) : -1;  // -1: none
    float ey = 0, edy = 0;  // this thread's edge element of y and dy
    const auto edge_dy = fetch_edge<kPeel>(load_dy, row, edge_col);  // converted after the packs' loads (PeelEdge)
    float s = 0;
    if constexpr (kCache == BackwardCache::dy) {  // log-softmax: y is not needed until the write
      for_each_pack<kBlock, kPack>(
          load_dy, row, 0, packs,
          [&](int64_t p, const float* dy) {
            cdy.put(int(p), dy);
#pragma unroll
            for (int j = 0; j < kPack; ++j) s += dy[j];
          },
          head);
      if (kPeel && edge_col >= 0) {
        edy = edge_dy.value(load_dy);
        s += edy;
      }
      s = block_allreduce<kBlock>(s, Sum{}, 0.0f);
      for_each_pack<kBlock, kPack>(
          load_y, row, 0, packs,
          [&](int64_t p, const float* y) {
            float dy[kPack];
            cdy.get(int(p), dy);
#pragma unroll
            for (int j = 0; j < kPack; ++j) dy[j] = grad<Store::kFastExp>(y[j], dy[j], s, true);
            store.template store<kPack, kPeel>(dy, row, head + p * kPack);
          },
          head);
      if (kPeel && edge_col >= 0) {
        load_y.template load<1>(&ey, row, edge_col);
        const float dx = grad<Store::kFastExp>(ey, edy, s, true);
        store.template store<1>(&dx, row, edge_col);
      }
      continue;
    }
    const auto edge_y = fetch_edge<kPeel>(load_y, row, edge_col);
    for_each_pack2<kBlock, kPack>(
        load_y, load_dy, row, 0, packs,
        [&](int64_t p, const float* y, const float* dy) {
          cy.put(int(p), y);
          if constexpr (kCache == BackwardCache::y_dy) cdy.put(int(p), dy);
#pragma unroll
          for (int j = 0; j < kPack; ++j) s += grad_term(y[j], dy[j], log);
        },
        head);
    if (kPeel && edge_col >= 0) {
      ey = edge_y.value(load_y);
      edy = edge_dy.value(load_dy);
      s += grad_term(ey, edy, log);
    }
    s = block_allreduce<kBlock>(s, Sum{}, 0.0f);
    for (int64_t p = threadIdx.x; p < packs; p += kBlock) {
      float y[kPack], dy[kPack];
      cy.get(p, y);
      if constexpr (kCache == BackwardCache::y_dy)
        cdy.get(p, dy);
      else
        load_dy.template load<kPack>(dy, row, head + p * kPack);
#pragma unroll
      for (int j = 0; j < kPack; ++j) y[j] = grad<Store::kFastExp>(y[j], dy[j], s, log);
      store.template store<kPack, kPeel>(y, row, head + p * kPack);
    }
    if (kPeel && edge_col >= 0) {
      const float dx = grad<Store::kFastExp>(ey, edy, s, log);
      store.template store<1>(&dx, row, edge_col);
    }
  }
}
/// [backward_smem]

namespace detail {

/// [backward_smem_launch]
/// The shared-memory path's cache: y and dy while both fit; past that, dy alone for log-softmax
/// (its sum needs nothing else: each tensor is still read once) and y alone for softmax (dy read
/// twice). Where both fit, dy alone was no faster for log-softmax (H100: level or up to 1.4%
/// slower at rows = 49152, 7-28% slower at 128 rows, where its write pass waits on DRAM for y
/// instead of reading shared memory).
template <int kPack, bool kPeel = false, typename T>
void launch_backward_smem(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                          int64_t rows, int64_t cols, bool log, cudaStream_t stream, int phase = 0) {
  using L = DirectLoad<T>;
  using S = DirectStore<T>;
  auto launch = [&](auto cache) {
    constexpr BackwardCache kCache = decltype(cache)::value;
    const size_t row_bytes = cache_bytes<T>(cols);
    const size_t dy_offset = kCache == BackwardCache::dy ? 0 : row_bytes;  // dy after y, when y is cached
    const size_t smem = kCache == BackwardCache::y_dy ? 2 * row_bytes : row_bytes;
    auto kernel_for = [&](auto block) {
      return softmax_backward_smem_kernel<L, L, S, kPack, decltype(block)::value, kCache, kPeel>;
    };
    course::with_occupancy_block(cols / kPack, policy::kBackwardSmemMinPacks, smem, kernel_for, [&](auto block) {
      constexpr int kBlock = decltype(block)::value;
      kernel_for(block)<<<row_blocks(rows), kBlock, smem, stream>>>(load_y, load_dy, store, rows, cols, dy_offset,
                                                                    log, phase);
      CUDA_CHECK_LAUNCH();
    });
  };
  using Cache = BackwardCache;
  if (cols <= cols_in_smem<T>(2))
    launch(std::integral_constant<Cache, Cache::y_dy>{});
  else if (log)
    launch(std::integral_constant<Cache, Cache::dy>{});
  else
    launch(std::integral_constant<Cache, Cache::y>{});
}
/// [backward_smem_launch]

}  // namespace detail
}  // namespace ch14
