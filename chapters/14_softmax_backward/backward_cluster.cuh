/// @file backward_cluster.cuh
/// @brief Chapter 14's cluster path (sm_90): chapter 13's cluster path for the backward, a
/// cluster of blocks sharing a row, each caching its chunk of y and dy, their partial sums merged
/// through distributed shared memory. The kernel and the launch; the cluster size is the policy's
/// (backward_cluster_size).
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

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

namespace detail {

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
  course::with_occupancy_block(chunk_packs, policy::kBackwardClusterMinPacks, smem, kernel_for, [&](auto block) {
    ok = ch13::detail::launch_clusters(kernel_for(block), rows, csize, decltype(block)::value, smem, stream, true, load_y, load_dy,
                         store, cols, chunk_packs, dy_offset, log);
  });
  return ok;
}
/// [backward_cluster_launch]

}  // namespace detail
}  // namespace ch14
