/// @file backward.cuh
/// @brief Chapter 12's backward kernels. From the forward output y and the upstream gradient dy:
///  softmax:     dx = y * (dy - sum(dy * y))
///  log-softmax: dx = dy - exp(y) * sum(dy)
/// One reduction per row, then an elementwise pass over both inputs: three tensors move (y and
/// dy read, dx written). The same paths as the forward: a warp with both rows in registers, a
/// block with both in registers, a block with both in shared memory, a cluster of blocks sharing
/// a row whose y and dy do not both fit in one block's shared memory, and a block that reads
/// them twice.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "blocks/warp.cuh"
#include "paths_block_regs.cuh"
#include "paths_cluster.cuh"
#include "paths_common.cuh"
#include "paths_tile.cuh"
#include "paths_warp.cuh"

namespace ch12 {

/// [backward_math]
/// The row's reduction term for one element, and the gradient from the reduced sum.
__device__ __forceinline__ float grad_term(float y, float dy, bool log) { return log ? dy : dy * y; }
template <bool kFast>
__device__ __forceinline__ float grad(float y, float dy, float sum, bool log) {
  return log ? dy - row_exp<kFast>(y) * sum : (dy - sum) * y;
}
/// [backward_math]

/// for_each_pack over two inputs read in step (y and dy), packs [first, first + count) of the
/// row: f(p, y values, dy values) with p counted from `first`; kHold as for for_each_pack.
template <int kBlock, int kPack, int kUnroll = 2, bool kHold = false, typename LoadY, typename LoadDy, typename F>
__device__ __forceinline__ void for_each_pack2(const LoadY& load_y, const LoadDy& load_dy, int64_t row, int64_t first,
                                               int64_t count, F&& f) {
  for (int64_t p0 = threadIdx.x; p0 < count; p0 += int64_t(kBlock) * kUnroll) {
    typename LoadY::template Fetched<kPack> raw_y[kUnroll];
    typename LoadDy::template Fetched<kPack> raw_dy[kUnroll];
    float y[kHold ? 1 : kUnroll][kPack], dy[kHold ? 1 : kUnroll][kPack];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p >= count) continue;
      raw_y[u] = load_y.template fetch<kPack>(row, (first + p) * kPack);
      raw_dy[u] = load_dy.template fetch<kPack>(row, (first + p) * kPack);
      if constexpr (!kHold) {
        load_y.template convert<kPack>(raw_y[u], y[u]);
        load_dy.template convert<kPack>(raw_dy[u], dy[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p >= count) continue;
      if constexpr (kHold) {
        load_y.template convert<kPack>(raw_y[u], y[0]);
        load_dy.template convert<kPack>(raw_dy[u], dy[0]);
      }
      f(p, y[kHold ? 0 : u], dy[kHold ? 0 : u]);
    }
  }
}

/// [backward_warp]
/// A group of kWidth lanes takes kRows rows (kRowStride apart, from row0) with y and dy in
/// registers: the sum of grad_term over each row, then dx.
template <int kPack, int kPacks, int kWidth, int kRows, int kRowStride, typename LoadY, typename LoadDy, typename Store>
__device__ __forceinline__ void backward_warp_rows(const LoadY& load_y, const LoadDy& load_dy, const Store& store,
                                                   int64_t row0, int64_t rows, int64_t cols, bool log) {
  constexpr int kColsPerThread = kPacks * kPack;
  const int lane = threadIdx.x % kWidth;
  const unsigned mask = course::group_mask<kWidth>();
  auto row_of = [&](int r) { return row0 + int64_t(r) * kRowStride; };  // the group's r-th row

  float y[kRows][kColsPerThread], dy[kRows][kColsPerThread];
  float s[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    s[r] = 0;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t col = (int64_t(p) * kWidth + lane) * kPack;
      if (row_of(r) < rows && col < cols) {
        load_y.template load<kPack>(&y[r][p * kPack], row_of(r), col);
        load_dy.template load<kPack>(&dy[r][p * kPack], row_of(r), col);
      } else {
#pragma unroll
        for (int j = 0; j < kPack; ++j) y[r][p * kPack + j] = dy[r][p * kPack + j] = 0;
      }
#pragma unroll
      for (int j = 0; j < kPack; ++j) s[r] += grad_term(y[r][p * kPack + j], dy[r][p * kPack + j], log);
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) s[r] = course::group_sum<kWidth>(s[r], mask);
  with_log(log, [&](auto op_log) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t col = (int64_t(p) * kWidth + lane) * kPack;
        if (row_of(r) < rows && col < cols) {
          float out[kPack];
#pragma unroll
          for (int j = 0; j < kPack; ++j)
            out[j] = grad<Store::kFastExp>(y[r][p * kPack + j], dy[r][p * kPack + j], s[r], op_log);
          store.template store<kPack>(out, row_of(r), col);
        }
      }
    }
  });
}

/// The backward's warp kernel: each group of lanes grid-strides over the rows, kRows at a time.
template <typename LoadY, typename LoadDy, typename Store, int kPack, int kColsPerThread, int kWidth, int kRows>
__global__ void __launch_bounds__(kWarpBlock)
    softmax_backward_warp_kernel(LoadY load_y, LoadDy load_dy, Store store, int64_t rows, int64_t cols, bool log) {
  const int64_t group = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWidth;
  const int64_t row_step = int64_t(gridDim.x) * blockDim.x / kWidth * kRows;
  for (int64_t row0 = group * kRows; row0 < rows; row0 += row_step)
    backward_warp_rows<kPack, kColsPerThread / kPack, kWidth, kRows, 1>(load_y, load_dy, store, row0, rows, cols, log);
}
/// [backward_warp]

/// [backward_tile]
/// The forward's tile path for the backward (sm_90 and later): one thread asks the copy engine for
/// the block's tile of y and its tile of dy (kBlock / kWidth x kRows consecutive rows of each, two
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

/// [backward_block_regs]
/// A block per row with y and dy in registers, as the forward's block-registers kernel: thread t
/// holds packs t, t + blockDim.x, ... of both, as loaded (16-bit packs in half the registers),
/// all loaded before the sum; one block reduction, then dx from registers. Each tensor read once,
/// no shared memory, every load of the row in flight at once.
template <typename LoadY, typename LoadDy, typename Store, int kPack, int kPacks>
__global__ void __launch_bounds__(kBlockRegsMaxBlock)
    softmax_backward_block_regs_kernel(LoadY load_y, LoadDy load_dy, Store store, int64_t rows, int64_t cols,
                                       bool log) {
  const int num_packs = int(cols / kPack), block = int(blockDim.x);
  auto here = [&](int p) { return p * block + int(threadIdx.x) < num_packs; };
  auto col_of = [&](int p) { return int64_t(p * block + int(threadIdx.x)) * kPack; };
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
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
    float s = 0;
    each_pack([&](int, const float* y, const float* dy) {
#pragma unroll
      for (int j = 0; j < kPack; ++j) s += grad_term(y[j], dy[j], log);
    });
    s = block_allreduce<kBlockRegsMaxBlock>(s, Sum{}, 0.0f, block / 32);
    each_pack([&](int p, float* y, const float* dy) {
#pragma unroll
      for (int j = 0; j < kPack; ++j) y[j] = grad<Store::kFastExp>(y[j], dy[j], s, log);
      store.template store<kPack>(y, row, col_of(p));
    });
  }
}
/// [backward_block_regs]

/// [backward_smem]
/// What the backward's shared-memory kernel keeps of a row (profilers print the number).
enum class BackwardCache {
  y_dy = 0,  // both: each read once, the write pass from shared memory
  y = 1,     // y alone, when both do not fit: dy read again in the write pass (from L2 while fresh)
  dy = 2,    // dy alone, for log-softmax when both do not fit: its sum needs dy only, so the sum
             // pass reads dy and the write pass reads y, each once
};

/// A block per row, caching what kCache names in shared memory (each in its Load::Cache type):
/// sum the row's grad_term, then write dx.
template <typename LoadY, typename LoadDy, typename Store, int kPack, int kBlock, BackwardCache kCache>
__global__ void __launch_bounds__(kBlock)
    softmax_backward_smem_kernel(LoadY load_y, LoadDy load_dy, Store store, int64_t rows, int64_t cols,
                                 size_t dy_offset, bool log) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int64_t num_packs = cols / kPack;
  const RowCache<typename LoadY::Cache, kPack> cy{reinterpret_cast<typename LoadY::Cache*>(smem), int(num_packs)};
  const RowCache<typename LoadDy::Cache, kPack> cdy{reinterpret_cast<typename LoadDy::Cache*>(smem + dy_offset),
                                                    int(num_packs)};
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float s = 0;
    if constexpr (kCache == BackwardCache::dy) {  // log-softmax: y is not needed until the write
      for_each_pack<kBlock, kPack>(load_dy, row, 0, num_packs, [&](int64_t p, const float* dy) {
        cdy.put(int(p), dy);
#pragma unroll
        for (int j = 0; j < kPack; ++j) s += dy[j];
      });
      s = block_allreduce<kBlock>(s, Sum{}, 0.0f);
      for_each_pack<kBlock, kPack>(load_y, row, 0, num_packs, [&](int64_t p, const float* y) {
        float dy[kPack];
        cdy.get(int(p), dy);
#pragma unroll
        for (int j = 0; j < kPack; ++j) dy[j] = grad<Store::kFastExp>(y[j], dy[j], s, true);
        store.template store<kPack>(dy, row, p * kPack);
      });
      continue;
    }
    for_each_pack2<kBlock, kPack>(load_y, load_dy, row, 0, num_packs, [&](int64_t p, const float* y, const float* dy) {
      cy.put(int(p), y);
      if constexpr (kCache == BackwardCache::y_dy) cdy.put(int(p), dy);
#pragma unroll
      for (int j = 0; j < kPack; ++j) s += grad_term(y[j], dy[j], log);
    });
    s = block_allreduce<kBlock>(s, Sum{}, 0.0f);
    for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {
      float y[kPack], dy[kPack];
      cy.get(p, y);
      if constexpr (kCache == BackwardCache::y_dy)
        cdy.get(p, dy);
      else
        load_dy.template load<kPack>(dy, row, p * kPack);
#pragma unroll
      for (int j = 0; j < kPack; ++j) y[j] = grad<Store::kFastExp>(y[j], dy[j], s, log);
      store.template store<kPack>(y, row, p * kPack);
    }
  }
}
/// [backward_smem]

/// [backward_cluster]
/// Rows whose y and dy do not both fit in one block's shared memory: a cluster of `csize` blocks
/// (launch attribute) shares a row, block `rank` caching packs [rank * chunk_packs, (rank + 1) *
/// chunk_packs) of both. Each block sums its chunk; the blocks then read each other's partial
/// sums through distributed shared memory (every block adds them in the same order, so all get
/// the same sum) and write dx from their caches. y and dy are read once, in one launch: the
/// alternative, y cached and dy read a second time, moves a fourth tensor. Needs sm_90.
template <typename LoadY, typename LoadDy, typename Store, int kPack, int kBlock>
__global__ void __launch_bounds__(kBlock)
    softmax_backward_cluster_kernel(LoadY load_y, LoadDy load_dy, Store store, int64_t cols, int64_t chunk_packs,
                                    size_t dy_offset, bool log) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const ClusterChunk chunk = cluster_chunk(cluster, cols / kPack, chunk_packs);
  const int64_t row = chunk.row, first = chunk.first, count = chunk.count;
  extern __shared__ __align__(16) unsigned char smem[];
  const RowCache<typename LoadY::Cache, kPack> cy{reinterpret_cast<typename LoadY::Cache*>(smem), int(count)};
  const RowCache<typename LoadDy::Cache, kPack> cdy{reinterpret_cast<typename LoadDy::Cache*>(smem + dy_offset),
                                                    int(count)};
  __shared__ float mine;

  float s = 0;
  for_each_pack2<kBlock, kPack>(load_y, load_dy, row, first, count, [&](int64_t p, const float* y, const float* dy) {
    cy.put(int(p), y);
    cdy.put(int(p), dy);
#pragma unroll
    for (int j = 0; j < kPack; ++j) s += grad_term(y[j], dy[j], log);
  });
  s = block_allreduce<kBlock>(s, Sum{}, 0.0f);
  s = cluster_allreduce(cluster, &mine, s, 0.0f, [](float v) { return course::group_sum<32>(v, 0xffffffffu); });
  for (int64_t p = threadIdx.x; p < count; p += kBlock) {
    float y[kPack], dy[kPack];
    cy.get(int(p), y);
    cdy.get(int(p), dy);
#pragma unroll
    for (int j = 0; j < kPack; ++j) y[j] = grad<Store::kFastExp>(y[j], dy[j], s, log);
    store.template store<kPack>(y, row, (first + p) * kPack);
  }
#else
  __trap();  // the host never launches it below sm_90 (see cluster_path_available)
#endif
}
/// [backward_cluster]

/// [backward_uncached]
/// A block per row, nothing cached: y and dy read for the sum (log-softmax: dy alone), then again
/// to write dx, the second time partly from L2. It runs where rows are long and few, one block of
/// 1024 threads per SM, so the loads in flight per thread cover the latency: four packs of each
/// tensor, held as loaded (kHold), which 16-bit rows need to stay within 64 registers.
/// kLog is a template parameter: softmax's instantiation carries none of log-softmax's code.
template <typename LoadY, typename LoadDy, typename Store, int kPack, int kBlock, bool kLog>
__global__ void __launch_bounds__(kBlock)
    softmax_backward_uncached_kernel(LoadY load_y, LoadDy load_dy, Store store, int64_t rows, int64_t cols) {
  constexpr int kUnroll = 4;
  constexpr bool kHold = true;
  const int64_t num_packs = cols / kPack;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float s = 0;
    if constexpr (kLog) {  // log-softmax sums dy alone: y is read once, in the write pass
      for_each_pack<kBlock, kPack, kUnroll, false, kHold>(load_dy, row, 0, num_packs, [&](int64_t, const float* dy) {
#pragma unroll
        for (int j = 0; j < kPack; ++j) s += dy[j];
      });
    } else {
      for_each_pack2<kBlock, kPack, kUnroll, kHold>(load_y, load_dy, row, 0, num_packs,
                                                    [&](int64_t, const float* y, const float* dy) {
#pragma unroll
                                                      for (int j = 0; j < kPack; ++j) s += grad_term(y[j], dy[j], false);
                                                    });
    }
    s = block_allreduce<kBlock>(s, Sum{}, 0.0f);
    for_each_pack2<kBlock, kPack, kUnroll, kHold>(load_y, load_dy, row, 0, num_packs,
                                                  [&](int64_t p, const float* y, const float* dy) {
                                                    float out[kPack];
#pragma unroll
                                                    for (int j = 0; j < kPack; ++j) out[j] = grad<Store::kFastExp>(y[j], dy[j], s, kLog);
                                                    store.template store<kPack>(out, row, p * kPack);
                                                  });
  }
}
/// [backward_uncached]

}  // namespace ch12
