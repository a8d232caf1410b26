/// @file paths_tile.cuh
/// @brief Chapter 12's tile path: the warp path's groups, the block's rows brought into shared
/// memory by one bulk copy (new here, sm_90: short rows). Its kernel, the forward's and the
/// backward's rules for taking it, and the forward's launch (beside the warp path's:
/// launch_warp_path). The backward's tile kernel is in backward.cuh, its launch in
/// backward_launch.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "bulk_copy.cuh"
#include "harness/errors.h"
#include "harness/launch_math.h"
#include "paths_common.cuh"
#include "paths_warp.cuh"
#include "softmax.cuh"
#include "softmax_functors.cuh"

namespace ch12 {

/// [tile_kernel]
/// A load functor over a tile of whole rows in shared memory: rows `first` onwards of a row-major
/// tensor of `row_size` columns, as the bulk copy of softmax_tile_kernel lays them out. It fetches
/// and converts exactly as DirectLoad<T> does, from shared memory instead of global.
template <typename T>
struct TileLoad {
  using Cache = T;
  template <int kPack>
  using Fetched = typename DirectLoad<T>::template Fetched<kPack>;
  const T* tile;
  int64_t first;
  int row_size;  // a tile holds a few KB: 32-bit offsets
  template <int kPack, bool kReadOnly = false>
  __device__ __forceinline__ Fetched<kPack> fetch(int64_t row, int64_t col) const {
    return DirectLoad<T>{tile + int(row - first) * row_size, 0}.template fetch<kPack>(0, col);
  }
  template <int kPack>
  __device__ __forceinline__ void convert(const Fetched<kPack>& f, float* dst) const {
    DirectLoad<T>{}.template convert<kPack>(f, dst);
  }
  template <int kPack, bool kReadOnly = false>
  __device__ __forceinline__ void load(float* dst, int64_t row, int64_t col) const {
    convert<kPack>(fetch<kPack>(row, col), dst);
  }
};

/// The warp path's rows brought in by the block at once (sm_90 and later). One thread asks the copy
/// engine for the block's tile of kBlock / kWidth x kRows consecutive rows, a single contiguous
/// span of global memory (course::bulk_load), and the block waits for it on an mbarrier; then each
/// group of lanes runs the warp path's passes (warp_rows) on its rows of the tile, reading them from
/// shared memory, and stores its results from registers. The group's rows are `kGroups` apart in
/// the tile, so a warp's groups hold consecutive rows and each store instruction of a warp writes
/// one contiguous span. One tile per block, no grid-stride loop: the launcher gives every tile a
/// block (a loop's barrier between tiles cost about 1% at 32 and 64 fp32 columns). The rows must be
/// contiguous (a row stride of `cols`) with x 16-byte aligned and rows a multiple of 16 bytes
/// long: the dispatch takes this path with 16-byte packs only.
template <typename T, typename Store, int kPack, int kColsPerThread, int kWidth, int kRows, int kBlock>
__global__ void __launch_bounds__(kBlock)
    softmax_tile_kernel(DirectLoad<T> load, Store store, int64_t rows, int64_t cols, bool log) {
#if __CUDA_ARCH__ >= 900
  constexpr int kGroups = kBlock / kWidth;
  constexpr int kTileRows = kGroups * kRows;
  extern __shared__ __align__(128) unsigned char tile_smem[];
  __shared__ uint64_t landed;  // the mbarrier
  T* tile = reinterpret_cast<T*>(tile_smem);
  const int64_t first = int64_t(blockIdx.x) * kTileRows;
  if (threadIdx.x == 0) {
    course::bulk_barrier_init(&landed);
    const int64_t tile_rows = rows - first < kTileRows ? rows - first : kTileRows;
    course::bulk_load(tile, load.src + first * cols, unsigned(tile_rows * cols * int64_t(sizeof(T))), &landed);
  }
  __syncthreads();  // the barrier is initialized before anyone waits on it
  course::bulk_wait(&landed, 0);
  warp_rows<kPack, kColsPerThread / kPack, kWidth, kRows, kGroups>(TileLoad<T>{tile, first, int(cols)}, store,
                                                                   first + threadIdx.x / kWidth, rows, cols, log);
#endif
}
/// [tile_kernel]

namespace detail {

/// [tile_rule]
/// The tile path (softmax_tile_kernel): the warp path's group shapes, the block's rows brought in
/// by one bulk copy. The dispatch takes it for the forward's rows of more than kTileMinRowBytes
/// and at most kTileMaxRowBytes (softmax.cuh) read through DirectLoad with 16-byte packs, where
/// the warp path would take them, on GPUs with the bulk copy. A block takes about kTileBytes of
/// rows: the most threads, from 128 to 512, whose tile of full-width rows stays within it.
/// Measured on the H100 (2026-11):
///  - the tile's size, in a stand-alone program: fp32 rows of 32 columns read 4-6% faster than
///    the warp kernel with 8 KB tiles (256 threads) and 3-4% with 4 KB, rows of 64 columns 1-3%
///    faster with 8 KB (128 threads) and level with 16 KB;
///  - the rows it takes, in the harness (the medians of six processes): +2.8-3.2% at 32 fp32
///    columns and +1.4-3.1% on 16-bit rows of 64 and 128 columns, level at 64 fp32 columns; 5-8%
///    slower on 16-bit rows of 32 columns (64 bytes), and from 1.1% slower to 1.4% faster past
///    256 bytes in a first sweep.
constexpr int kTileBytes = 8 * 1024;

constexpr int tile_block(int width, int rows_per_group, int row_bytes) {
  int block = 128;
  while (block < 512 && 2 * block / width * rows_per_group * row_bytes <= kTileBytes) block *= 2;
  return block;
}

template <typename Load>
struct IsDirectLoad : std::false_type {};
template <typename T>
struct IsDirectLoad<DirectLoad<T>> : std::true_type {};

/// Whether the dispatch takes the tile path for a row of `cols` columns stored as T (16-byte packs
/// assumed).
template <typename T>
bool tile_fits(int64_t cols) {
  const int64_t bytes = cols * int64_t(sizeof(T));
  return bytes > kTileMinRowBytes && bytes <= kTileMaxRowBytes;
}

/// x's rows must be contiguous (load.row_size == cols), x 16-byte aligned and cols a multiple of
/// 16 bytes: the caller's 16-byte pack says so.
template <int kMinPacks, int kPack, typename T, typename Store>
void launch_tile(const DirectLoad<T>& load, const Store& store, int64_t rows, int64_t cols, bool log,
                 cudaStream_t stream) {
  static_assert(kPack * sizeof(T) == 16, "the tile path takes 16-byte packs");
  constexpr int kColsPerLane = int(kTileMaxRowBytes / int64_t(sizeof(T)) / 32);
  warp_shape<kMinPacks, kPack, kColsPerLane>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    constexpr int kBlock = tile_block(kWidth, kRows, kWidth * kCols * int(sizeof(T)));
    constexpr int kTileRows = kBlock / kWidth * kRows;
    const size_t smem = size_t(kTileRows) * size_t(cols) * sizeof(T);
    const int64_t tiles = course::ceil_div(rows, int64_t(kTileRows));  // a block per tile
    if (tiles > INT32_MAX)  // over 2^37 rows: more tiles than a grid has blocks
      return launch_warp<kMinPacks, kPack, kColsPerLane>(load, store, rows, cols, log, stream);
    softmax_tile_kernel<T, Store, kPack, kCols, kWidth, kRows, kBlock>
        <<<unsigned(tiles), kBlock, smem, stream>>>(load, store, rows, cols, log);
    CUDA_CHECK_LAUNCH();
  });
}

/// The forward's warp path: its group shape for short rows (warp_min_packs), the rows loaded by
/// each group's lanes (launch_warp) or, with `tile`, by the block's bulk copy (launch_tile; a
/// DirectLoad with 16-byte packs only, else the lanes load).
template <int kPack, int kColsPerLane, typename Load, typename Store>
void launch_warp_path(bool tile, const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
                      cudaStream_t stream) {
  auto go = [&](auto min_packs) {
    constexpr int kMinPacks = decltype(min_packs)::value;
    if constexpr (IsDirectLoad<Load>::value && kPack * sizeof(typename Load::Cache) == 16) {
      if (tile) return launch_tile<kMinPacks, kPack>(load, store, rows, cols, log, stream);
    }
    launch_warp<kMinPacks, kPack, kColsPerLane>(load, store, rows, cols, log, stream);
  };
  if constexpr (kPack == 4) {
    const int packs = warp_min_packs<kPack>(cols);
    if (packs == 2) return go(std::integral_constant<int, 2>{});
    if (packs == 4) return go(std::integral_constant<int, 4>{});
  }
  go(std::integral_constant<int, 1>{});
}
/// [tile_rule]

/// [backward_tile_rule]
/// Whether the backward dispatch takes the tile path for a row of `cols` columns (16-byte packs
/// assumed): more than kBackwardTileMinCols and at most kBackwardTileEndCols, in every dtype. The
/// forward's rule counts bytes; the backward's ends are where its A/Bs turned, in columns.
/// Measured on the H100, 2026-11 (both paths forced, medians of 6-12
/// rounds of alternating processes), the tile path against the warp path:
///  - fp32 rows of 20-128 columns: +0.2% to +12.5% (the most at 20-24 columns);
///  - 16-bit rows of 24-56, 72, 96 and 128 columns: +0.0% to +5.0%;
///  - 16-bit rows of 64 columns: level to 1.8% slower; kept in the band: one band is the rule;
///  - 16 columns or fewer: level (fp32 16) to 6.3% slower, in every dtype;
///  - past 128 columns: 16-bit rows of 144 columns 3.4-4.3% slower, 192 level (-1.2% to +0.5%),
///    240 and 256 +0.5% to +1.2%; rows of 1 KB (fp32 256, 16-bit 512) level (-0.7% to +1.1%).
inline bool backward_tile_fits(int64_t cols) {
  return cols > kBackwardTileMinCols && cols <= kBackwardTileEndCols;
}
/// [backward_tile_rule]

}  // namespace detail
}  // namespace ch12
