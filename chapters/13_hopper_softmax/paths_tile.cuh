/// @file paths_tile.cuh
/// @brief Chapter 13's tile path: chapter 12's warp path, its groups' rows brought into shared
/// memory by one bulk copy per block (bulk_copy.cuh; sm_90: short rows). Its load functor over the
/// tile, the kernel and the forward's launch (HopperPaths::tile, dispatch.cuh); the rule for
/// taking it is the policy's (12_production_softmax/policy.h, tile_fits). The backward's tile
/// kernel and launch: 14_softmax_backward/backward_tile.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "12_production_softmax/paths_common.cuh"
#include "12_production_softmax/paths_warp.cuh"
#include "12_production_softmax/policy.h"
#include "12_production_softmax/softmax_functors.cuh"
#include "bulk_copy.cuh"
#include "harness/errors.h"
#include "harness/launch_math.h"

namespace ch13 {

using ch12::DirectLoad;
namespace policy = ch12::policy;

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

/// The warp path's rows brought in by the block at once (sm_90 and later). One thread asks the TMA
/// (the Tensor Memory Accelerator) for the block's tile of kBlock / kWidth x kRows consecutive
/// rows, a single contiguous span of global memory (course::bulk_load), and the block waits for it
/// on an mbarrier; then each group of lanes runs the warp path's passes (warp_rows) on its rows of
/// the tile, reading them from shared memory, and stores its results from registers. The group's
/// rows are `kGroups` apart in the tile, so a warp's groups hold consecutive rows and each store
/// instruction of a warp writes one contiguous span. One tile per block, no grid-stride loop: the
/// launcher gives every tile a block (a loop's barrier between tiles cost about 1% at 32 and 64
/// fp32 columns). The rows must be contiguous (a row stride of `cols`) with x 16-byte aligned and
/// rows a multiple of 16 bytes long: the dispatch takes this path with 16-byte packs only.
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
  ch12::warp_rows<kPack, kColsPerThread / kPack, kWidth, kRows, kGroups>(TileLoad<T>{tile, first, int(cols)}, store,
                                                                         first + threadIdx.x / kWidth, rows, cols, log);
#endif
}
/// [tile_kernel]

namespace detail {

/// [tile_rule]
/// The tile path (softmax_tile_kernel): the warp path's group shapes, the block's rows brought in
/// by one bulk copy. The dispatch takes it for the forward's rows of more than
/// policy::kTileMinRowBytes and at most policy::kTileMaxRowBytes read through DirectLoad with
/// 16-byte packs, where the warp path would take them, on GPUs with the bulk copy. A block takes
/// about policy::kTileBytes of rows: the most threads, from 128 to 512, whose tile of full-width
/// rows stays within it.
constexpr int tile_block(int width, int rows_per_group, int row_bytes) {
  int block = 128;
  while (block < 512 && 2 * block / width * rows_per_group * row_bytes <= policy::kTileBytes) block *= 2;
  return block;
}

/// x's rows must be contiguous (load.row_size == cols), x 16-byte aligned and cols a multiple of
/// 16 bytes: the caller's 16-byte pack says so.
template <int kMinPacks, int kPack, typename T, typename Store>
void launch_tile(const DirectLoad<T>& load, const Store& store, int64_t rows, int64_t cols, bool log,
                 cudaStream_t stream) {
  static_assert(kPack * sizeof(T) == 16, "the tile path takes 16-byte packs");
  constexpr int kColsPerLane = int(policy::kTileMaxRowBytes / int64_t(sizeof(T)) / 32);
  ch12::detail::warp_shape<kMinPacks, kPack, kColsPerLane>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    constexpr int kBlock = tile_block(kWidth, kRows, kWidth * kCols * int(sizeof(T)));
    constexpr int kTileRows = kBlock / kWidth * kRows;
    const size_t smem = size_t(kTileRows) * size_t(cols) * sizeof(T);
    const int64_t tiles = course::ceil_div(rows, int64_t(kTileRows));  // a block per tile
    if (tiles > INT32_MAX)  // over 2^37 rows: more tiles than a grid has blocks
      return ch12::detail::launch_warp<kMinPacks, kPack, kColsPerLane>(load, store, rows, cols, log, stream);
    softmax_tile_kernel<T, Store, kPack, kCols, kWidth, kRows, kBlock>
        <<<unsigned(tiles), kBlock, smem, stream>>>(load, store, rows, cols, log);
    CUDA_CHECK_LAUNCH();
  });
}
/// [tile_rule]

}  // namespace detail
}  // namespace ch13
