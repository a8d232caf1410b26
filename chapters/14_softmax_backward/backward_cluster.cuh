/// @file backward_cluster.cuh
/// @brief Chapter 14's cluster path (sm_90): chapter 13's cluster path for the backward, a
/// cluster of blocks sharing a row, each caching its chunk of y and dy, their partial sums merged
/// through distributed shared memory. The kernel and the launch; the cluster size is the policy's
/// (backward_cluster_size).
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "13_hopper_softmax/cluster_stream.cuh"
#include "13_hopper_softmax/paths_cluster.cuh"
#include "backward_common.cuh"
#include "blocks/occupancy.cuh"
#include "blocks/warp.cuh"

namespace ch14 {

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
  const ch13::ClusterChunk chunk = ch13::cluster_chunk(cluster, cols / kPack, chunk_packs);
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
  s = ch13::cluster_allreduce(cluster, &mine, s, 0.0f, [](float v) { return course::group_sum<32>(v, 0xffffffffu); });
  for (int64_t p = threadIdx.x; p < count; p += kBlock) {
    float y[kPack], dy[kPack];
    cy.get(int(p), y);
    cdy.get(int(p), dy);
#pragma unroll
    for (int j = 0; j < kPack; ++j) y[j] = grad<Store::kFastExp>(y[j], dy[j], s, log);
    store.template store<kPack>(y, row, (first + p) * kPack);
  }
#else
  __trap();  // the host never launches it below sm_90 (policy::Device::clusters)
#endif
}
/// [backward_cluster]

/// [backward_cluster_stream]
/// The streamed cluster for the backward (chapter 13's cluster_stream.cuh): persistent clusters
/// taking row after row, block `rank` holding its chunk of y and dy in one of kStages buffer pairs,
/// the next row's chunks asked of the bulk copy (two requests, one mbarrier) before the current row
/// is summed, merged across the cluster and written (with one pair: after). 16-byte packs, whole or
/// peeled (kPeel).
template <typename T, typename Store, int kPack, int kBlock, int kStages, bool kPeel>
__global__ void __launch_bounds__(kBlock)
    softmax_backward_cluster_stream_kernel(DirectLoad<T> load_y, DirectLoad<T> load_dy, Store store, int64_t rows,
                                           int64_t cols, int64_t chunk_packs, bool log, int phase) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(kPack * sizeof(T) == 16, "the bulk copy brings 16-byte packs");
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int rank = int(cluster.block_rank());
  const int64_t clusters = gridDim.x / cluster.num_blocks();
  extern __shared__ __align__(128) unsigned char stream_smem[];  // as chapter 13's streamed kernel
  T* const base = reinterpret_cast<T*>(stream_smem);
  const int64_t n = chunk_packs * kPack;  // elements of one chunk
  T* const bufs[2][2] = {{base, base + n}, {base + 2 * n, base + 3 * n}};  // [buffer][y, dy]
  const T* const src[2] = {load_y.src, load_dy.src};
  __shared__ uint64_t landed[2];
  __shared__ float mine;
  if (threadIdx.x == 0) {
    course::bulk_barrier_init<2>(&landed[0]);
    course::bulk_barrier_init<2>(&landed[1]);
  }
  __syncthreads();
  int64_t row = ch13::cluster_row(cluster);
  if (threadIdx.x == 0 && row < rows)
    ch13::stream_fetch<kPack>(src, load_y.row_size, row,
                              ch13::stream_chunk<kPack, kPeel>(row, cols, phase, rank, chunk_packs), bufs[0],
                              &landed[0]);
  unsigned parity = 0;  // bit b: the parity of buffer b's next phase
  for (int it = 0; row < rows; row += clusters, ++it) {
    const int b = kStages == 2 ? it & 1 : 0;
    const int64_t next = row + clusters;
    if (kStages == 2 && threadIdx.x == 0 && next < rows)
      ch13::stream_fetch<kPack>(src, load_y.row_size, next,
                                ch13::stream_chunk<kPack, kPeel>(next, cols, phase, rank, chunk_packs), bufs[b ^ 1],
                                &landed[b ^ 1]);
    const ch13::StreamChunk c = ch13::stream_chunk<kPack, kPeel>(row, cols, phase, rank, chunk_packs);
    const RowPeel pl = kPeel ? RowPeel::of<kPack>(phase, row, cols) : RowPeel{0, 0, 0, 0};
    const int edge_col = kPeel && rank == 0 && int(threadIdx.x) < pl.edges ? pl.edge_col(int(threadIdx.x)) : -1;
    float ey = 0, edy = 0;  // this thread's edge of y and dy
    if (kPeel && edge_col >= 0) {
      load_y.template load<1>(&ey, row, edge_col);
      load_dy.template load<1>(&edy, row, edge_col);
    }
    if (c.count > 0) {
      course::bulk_wait(&landed[b], (parity >> b) & 1);
      parity ^= 1u << b;
    }
    const RowCache<T, kPack> cy{bufs[b][0], int(c.count)}, cdy{bufs[b][1], int(c.count)};
    float s = kPeel && edge_col >= 0 ? grad_term(ey, edy, log) : 0.0f;
    for (int p = threadIdx.x; p < c.count; p += kBlock) {
      float y[kPack], dy[kPack];
      cy.get(p, y);
      cdy.get(p, dy);
#pragma unroll
      for (int j = 0; j < kPack; ++j) s += grad_term(y[j], dy[j], log);
    }
    s = block_allreduce<kBlock>(s, Sum{}, 0.0f);
    s = ch13::cluster_allreduce(cluster, &mine, s, 0.0f, [](float v) { return course::group_sum<32>(v, 0xffffffffu); });
    for (int p = threadIdx.x; p < c.count; p += kBlock) {
      float y[kPack], dy[kPack];
      cy.get(p, y);
      cdy.get(p, dy);
#pragma unroll
      for (int j = 0; j < kPack; ++j) y[j] = grad<Store::kFastExp>(y[j], dy[j], s, log);
      store.template store<kPack, kPeel>(y, row, c.head + (c.first + p) * kPack);
    }
    if (kPeel && edge_col >= 0) {
      const float dx = grad<Store::kFastExp>(ey, edy, s, log);
      store.template store<1>(&dx, row, edge_col);
    }
    __syncthreads();  // every thread is done with buffer b before a later row's copies refill it
    if (kStages == 1 && threadIdx.x == 0 && next < rows)
      ch13::stream_fetch<kPack>(src, load_y.row_size, next,
                                ch13::stream_chunk<kPack, kPeel>(next, cols, phase, rank, chunk_packs), bufs[0],
                                &landed[0]);
  }
#else
  __trap();  // the host never launches it below sm_90 (policy::Device::clusters)
#endif
}
/// [backward_cluster_stream]

namespace detail {

/// [backward_cluster_launch]
/// A cluster of `csize` blocks per row, each caching its chunk of y and dy: streamed (the bulk
/// copy, persistent clusters) where policy::backward_cluster_streams says, else the generic kernel,
/// a cluster per row; the block size from occupancy as on the shared-memory path. False, launching
/// nothing, when such a cluster cannot be resident. kPeel, phase: the peel (blocks/peel.h).
template <int kPack, bool kPeel = false, typename T>
bool launch_backward_cluster(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                             int64_t rows, int64_t cols, int csize, bool log, cudaStream_t stream, int phase = 0) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  if constexpr (kPack * sizeof(T) == 16) {  // the streamed cluster: the bulk copy brings y and dy
    if (kPeel || policy::backward_cluster_streams(ch12::device(), rows, csize, false)) {
      auto kernel_for = [](auto block, auto stages) {
        return softmax_backward_cluster_stream_kernel<T, DirectStore<T>, kPack, decltype(block)::value,
                                                      decltype(stages)::value, kPeel>;
      };
      return ch13::detail::launch_stream(kernel_for, rows, chunk_packs, 2, policy::kBackwardClusterMinPacks, csize,
                                         stream, load_y, load_dy, store, rows, cols, chunk_packs, log, phase);
    }
  }
  if constexpr (kPeel) {
    return false;  // unreachable: peeled rows stream
  } else {
    const size_t dy_offset = cache_bytes<T>(chunk_packs * kPack);
    const size_t smem = 2 * dy_offset;
    auto kernel_for = [](auto block) {
      return softmax_backward_cluster_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack,
                                             decltype(block)::value>;
    };
    bool ok = false;
    course::with_occupancy_block(chunk_packs, policy::kBackwardClusterMinPacks, smem, kernel_for, [&](auto block) {
      ok = ch13::detail::launch_clusters(kernel_for(block), rows, csize, decltype(block)::value, smem, stream, load_y,
                                         load_dy, store, cols, chunk_packs, dy_offset, log);
    });
    return ok;
  }
}
/// [backward_cluster_launch]

}  // namespace detail
}  // namespace ch14
