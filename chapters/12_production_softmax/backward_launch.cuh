/// @file backward_launch.cuh
/// @brief Chapter 12's backward launchers, one per path (the kernels: backward.cuh), with each
/// path's launch configuration; the backward's dispatch is in dispatch.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backward.cuh"
#include "blocks/occupancy.cuh"
#include "harness/errors.h"
#include "harness/launch_math.h"
#include "paths_block_regs.cuh"
#include "paths_cluster.cuh"
#include "paths_common.cuh"
#include "paths_smem.cuh"
#include "paths_tile.cuh"
#include "paths_warp.cuh"
#include "softmax_functors.cuh"

namespace ch12 {

namespace detail {

template <int kPack, typename T>
void launch_backward_warp(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                          int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  warp_shape<1, kPack, kWarpColsPerLane<T>>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    const unsigned blocks = course::resident_grid(rows, kWarpBlock / kWidth * kRows, kWarpBlock, 8);
    softmax_backward_warp_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, kCols, kWidth, kRows>
        <<<blocks, kWarpBlock, 0, stream>>>(load_y, load_dy, store, rows, cols, log);
    CUDA_CHECK_LAUNCH();
  });
}

/// [backward_tile_launch]
/// The backward's tile path: the backward warp path's group shapes, each block's tiles of y and dy
/// (each within kTileBytes, as the forward's tile) brought in by two bulk copies. y, dy and dx
/// must be 16-byte aligned with rows a multiple of 16 bytes: the caller's 16-byte pack says so.
template <int kPack, typename T>
void launch_backward_tile(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                          int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  static_assert(kPack * sizeof(T) == 16, "the tile path takes 16-byte packs");
  constexpr int kColsPerLane = int(kBackwardTileMaxRowBytes / int64_t(sizeof(T)) / 32);
  warp_shape<1, kPack, kColsPerLane>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    constexpr int kBlock = tile_block(kWidth, kRows, kWidth * kCols * int(sizeof(T)));
    constexpr int kTileRows = kBlock / kWidth * kRows;
    const size_t smem = 2 * size_t(kTileRows) * size_t(cols) * sizeof(T);  // y's tile, then dy's
    const int64_t tiles = course::ceil_div(rows, int64_t(kTileRows));    // a block per tile
    if (tiles > INT32_MAX)  // over 2^37 rows: more tiles than a grid has blocks
      return launch_backward_warp<kPack>(load_y, load_dy, store, rows, cols, log, stream);
    softmax_backward_tile_kernel<T, kPack, kCols, kWidth, kRows, kBlock>
        <<<unsigned(tiles), kBlock, smem, stream>>>(load_y, load_dy, store, rows, cols, log);
    CUDA_CHECK_LAUNCH();
  });
}
/// [backward_tile_launch]

/// The backward's block-registers launch: the block size as the forward's (block_regs_shape),
/// aiming at kBlockRegsBackwardInFlight bytes of y and dy in flight per SM.
template <int kPack, typename T>
auto block_regs_backward_kernels() {
  return kernels_by_packs<kBlockRegsMaxElems / kPack>([](auto packs) {
    return softmax_backward_block_regs_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack,
                                              decltype(packs)::value>;
  });
}
template <int kPack, typename T>
BlockRegsShape block_regs_backward_shape(int64_t cols) {
  static const auto kernels = block_regs_backward_kernels<kPack, T>();
  return block_regs_shape(kernels, cols / kPack, 2 * cols * int64_t(sizeof(T)), kBlockRegsBackwardInFlight);
}
template <int kPack, typename T>
void launch_backward_block_regs(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                                int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  static const auto kernels = block_regs_backward_kernels<kPack, T>();
  const BlockRegsShape s = block_regs_backward_shape<kPack, T>(cols);
  course::require(s.block > 0, block_regs_limit_text(), ", got ", cols);
  kernels[s.packs - 1]<<<row_blocks(rows), s.block, 0, stream>>>(load_y, load_dy, store, rows, cols, log);
  CUDA_CHECK_LAUNCH();
}

/// [backward_smem_launch]
/// The shared-memory path's cache: y and dy while both fit; past that, dy alone for log-softmax
/// (its sum needs nothing else: each tensor is still read once) and y alone for softmax (dy read
/// twice). Where both fit, dy alone was no faster for log-softmax (A/B on the H100, not kept as
/// data: level or up to 1.4% slower at rows = 49152, 7-28% slower at 128 rows, where its write
/// pass waits on DRAM for y instead of reading shared memory).
template <int kPack, typename T>
void launch_backward_smem(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                          int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  using L = DirectLoad<T>;
  using S = DirectStore<T>;
  auto launch = [&](auto cache) {
    constexpr BackwardCache kCache = decltype(cache)::value;
    const size_t row_bytes = cache_bytes<T>(cols);
    const size_t dy_offset = kCache == BackwardCache::dy ? 0 : row_bytes;  // dy after y, when y is cached
    const size_t smem = kCache == BackwardCache::y_dy ? 2 * row_bytes : row_bytes;
    auto kernel_for = [&](auto block) {
      return softmax_backward_smem_kernel<L, L, S, kPack, decltype(block)::value, kCache>;
    };
    course::with_occupancy_block(cols / kPack, kBackwardMinPacks, smem, kernel_for, [&](auto block) {
      constexpr int kBlock = decltype(block)::value;
      kernel_for(block)<<<row_blocks(rows), kBlock, smem, stream>>>(load_y, load_dy, store, rows, cols, dy_offset,
                                                                    log);
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

/// [backward_cluster_launch]
/// A cluster of `csize` blocks per row, each caching its chunk of y and dy; the block size from
/// occupancy as on the shared-memory path. False, launching nothing, when such a cluster cannot
/// be resident.
template <int kPack, typename T>
bool launch_backward_cluster(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                             int64_t rows, int64_t cols, int csize, bool log, cudaStream_t stream) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  const size_t dy_offset = cache_bytes<T>(chunk_packs * kPack);
  const size_t smem = 2 * dy_offset;
  auto kernel_for = [](auto block) {
    return softmax_backward_cluster_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, decltype(block)::value>;
  };
  bool ok = false;
  course::with_occupancy_block(chunk_packs, 4, smem, kernel_for, [&](auto block) {
    ok = launch_clusters(kernel_for(block), rows, csize, decltype(block)::value, smem, stream, true, load_y, load_dy,
                         store, cols, chunk_packs, dy_offset, log);
  });
  return ok;
}
/// [backward_cluster_launch]

template <int kPack, typename T>
void launch_backward_uncached(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                              int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  constexpr int kBlock = 1024;
  const unsigned grid = row_blocks(rows);
  if (log)
    softmax_backward_uncached_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, kBlock, true>
        <<<grid, kBlock, 0, stream>>>(load_y, load_dy, store, rows, cols);
  else
    softmax_backward_uncached_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, kBlock, false>
        <<<grid, kBlock, 0, stream>>>(load_y, load_dy, store, rows, cols);
  CUDA_CHECK_LAUNCH();
}

/// Largest cols of the backward's cluster path: 16 blocks, each caching its chunk of y and dy.
template <typename T>
int64_t backward_cluster_max_cols() {
  return 16 * cols_in_smem<T>(2);
}

}  // namespace detail
}  // namespace ch12
