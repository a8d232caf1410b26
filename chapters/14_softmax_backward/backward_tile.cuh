/// @file backward_tile.cuh
/// @brief Chapter 14's tile path (sm_90): chapter 13's tile path for the backward, the block's rows
/// of y and of dy brought into shared memory by two bulk copies, then the backward warp path's
/// passes on them. The kernel and the launch; the rule for taking it is the policy's
/// (backward_tile_fits: packed rows of 17-128 columns).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "13_hopper_softmax/bulk_copy.cuh"
#include "13_hopper_softmax/paths_tile.cuh"
#include "backward_common.cuh"
#include "backward_warp.cuh"
#include "harness/errors.h"
#include "harness/launch_math.h"

namespace ch14 {

using ch13::TileLoad;

/// [backward_tile]
/// The forward's tile path for the backward (sm_90 and later): one thread asks the TMA for the
/// block's tile of y and its tile of dy (kBlock / kWidth x kRows consecutive rows of each, two
/// bulk copies counted by one mbarrier), then each group of lanes runs backward_warp_rows on its
/// rows of the tiles and stores dx from registers. The same layout and conditions as
/// softmax_tile_kernel: contiguous rows, 16-byte aligned, a multiple of 16 bytes long.
template <typename T, int kPack, int kColsPerThread, int kWidth, int kRows, int kBlock>
__global__ void __launch_bounds__(kBlock)
    softmax_backward_tile_kernel(DirectLoad<T> load_y, DirectLoad<T> load_dy, DirectStore<T> store, int64_t rows,
                                 int64_t cols, bool log) {
#if __CUDA_ARCH__ >= 900
  constexpr int kGroups = kBlock / kWidth;
  constexpr int kTileRows = kGroups * kRows;
  extern __shared__ __align__(128) unsigned char tile_smem[];
  __shared__ uint64_t landed;  // the mbarrier, for both copies
  T* tile_y = reinterpret_cast<T*>(tile_smem);
  T* tile_dy = tile_y + kTileRows * int(cols);
  const int64_t first = int64_t(blockIdx.x) * kTileRows;
  if (threadIdx.x == 0) {
    course::bulk_barrier_init<2>(&landed);
    const int64_t tile_rows = rows - first < kTileRows ? rows - first : kTileRows;
    const unsigned bytes = unsigned(tile_rows * cols * int64_t(sizeof(T)));
    course::bulk_load(tile_y, load_y.src + first * cols, bytes, &landed);
    course::bulk_load(tile_dy, load_dy.src + first * cols, bytes, &landed);
  }
  __syncthreads();  // the barrier is initialized before anyone waits on it
  course::bulk_wait(&landed, 0);
  backward_warp_rows<kPack, kColsPerThread / kPack, kWidth, kRows, kGroups>(
      TileLoad<T>{tile_y, first, int(cols)}, TileLoad<T>{tile_dy, first, int(cols)}, store,
      first + threadIdx.x / kWidth, rows, cols, log);
#endif
}
/// [backward_tile]

namespace detail {

/// [backward_tile_launch]
/// The backward's tile path: the backward warp path's group shapes, each block's tiles of y and dy
/// (each within policy::kTileBytes, as the forward's tile) brought in by two bulk copies. y, dy and dx
/// must be 16-byte aligned with rows a multiple of 16 bytes: the caller's 16-byte pack says so.
template <int kPack, typename T>
void launch_backward_tile(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                          int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  static_assert(kPack * sizeof(T) == 16, "the tile path takes 16-byte packs");
  constexpr int kColsPerLane = int(policy::kBackwardTileMaxRowBytes / int64_t(sizeof(T)) / 32);
  ch12::detail::warp_shape<1, kPack, kColsPerLane>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    constexpr int kBlock = ch13::detail::tile_block(kWidth, kRows, kWidth * kCols * int(sizeof(T)));
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

}  // namespace detail
}  // namespace ch14
