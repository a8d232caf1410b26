/// @file paths_cluster.cuh
/// @brief Chapter 13's cluster path: several blocks per row, a thread-block cluster, merging
/// their (m, d) pairs through distributed shared memory, when rows are too few to fill the GPU
/// (sm_90). The chunk of a row each block takes, the cluster-wide reduction, the kernel, the
/// cluster launch (which the backward's shares) and the choice of cluster size; the rule for
/// taking it is the policy's (12_production_softmax/policy.h). The backward's kernel and launch:
/// 14_softmax_backward/backward_cluster.cuh.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "08_online_softmax/online_softmax.cuh"
#include "12_production_softmax/paths_common.cuh"
#include "12_production_softmax/policy.h"
#include "12_production_softmax/softmax.cuh"
#include "blocks/occupancy.cuh"
#include "harness/errors.h"
#include "harness/launch_math.h"

namespace ch13 {

using ch12::RowCache;
namespace policy = ch12::policy;

/// [cluster_chunk]
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// The part of a row that one block of a cluster takes: the row is the cluster's (a cluster's
/// blocks are consecutive in blockIdx.x), and block `rank` takes packs [first, first + count),
/// chunk_packs of them or what is left (none for the last blocks of a short row).
struct ClusterChunk {
  int64_t row, first, count;
};
__device__ __forceinline__ ClusterChunk cluster_chunk(const cooperative_groups::cluster_group& cluster,
                                                      int64_t num_packs, int64_t chunk_packs) {
  const int64_t first = int64_t(cluster.block_rank()) * chunk_packs;
  const int64_t left = num_packs - first;
  return {int64_t(blockIdx.x / cluster.num_blocks()), first, left < chunk_packs ? (left > 0 ? left : 0) : chunk_packs};
}

/// Every block's `v` (its chunk's partial result, the same in all its threads) combined over the
/// cluster, returned to every thread: thread 0 publishes it in `mine`, and each warp reads the
/// blocks' values through distributed shared memory, lane r block r's, and reduces them with
/// `warp_reduce` (`identity` in the lanes past the cluster). Every block reads them in the same
/// order, so all get the same result.
template <typename V, typename WarpReduce>
__device__ __forceinline__ V cluster_allreduce(const cooperative_groups::cluster_group& cluster, V* mine, V v,
                                               V identity, WarpReduce warp_reduce) {
  if (threadIdx.x == 0) *mine = v;
  cluster.sync();  // every block's value is published
  const unsigned lane = threadIdx.x % 32;
  v = warp_reduce(lane < cluster.num_blocks() ? *cluster.map_shared_rank(mine, lane) : identity);
  cluster.sync();  // no block leaves (freeing its `mine`) while another may still read it
  return v;
}
#endif
/// [cluster_chunk]

/// [cluster_kernel]
/// Several blocks per row: a cluster of `csize` blocks (launch attribute) shares one row, block
/// `rank` taking packs [rank * chunk_packs, (rank + 1) * chunk_packs). Each block finds its
/// chunk's (m, d) pair, from its chunk cached in shared memory (kCached) or in one online read;
/// the blocks then read each other's pairs through distributed shared memory (DSMEM), merge them,
/// and write their chunk: from shared memory, or by reading it again (an L2 hit while the chunk
/// is fresh). One launch, no workspace, no second kernel. Needs sm_90 (clusters).
template <typename Load, typename Store, int kPack, int kBlock, bool kCached>
__global__ void __launch_bounds__(kBlock)
    softmax_cluster_kernel(Load load, Store store, int64_t cols, int64_t chunk_packs, bool log) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const ClusterChunk chunk = cluster_chunk(cluster, cols / kPack, chunk_packs);
  const int64_t row = chunk.row, first = chunk.first, count = chunk.count;
  extern __shared__ __align__(16) unsigned char smem[];
  const RowCache<typename Load::Cache, kPack> cache{reinterpret_cast<typename Load::Cache*>(smem), int(count)};
  __shared__ course::MaxSum mine;

  course::MaxSum t;
  if constexpr (kCached) {  // two passes over the cached chunk: exact max, then the sum
    float m = -INFINITY;
    ch12::for_each_pack<kBlock, kPack>(load, row, first, count, [&](int64_t p, const float* v) {
      cache.put(int(p), v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) m = fmaxf(m, v[j]);
    });
    m = ch12::block_allreduce<kBlock>(m, ch12::Max{}, -INFINITY);
    float s = 0;
    for (int64_t p = threadIdx.x; p < count; p += kBlock) {
      float v[kPack];
      cache.get(p, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) s += m == -INFINITY ? (isnan(v[j]) ? v[j] : 0.0f) : ch12::row_exp<Store::kFastExp>(v[j] - m);
    }
    t = {m, ch12::block_allreduce<kBlock>(s, ch12::Sum{}, 0.0f)};  // a chunk of -inf only: (-inf, 0), merged as such
  } else {
    ch12::for_each_pack<kBlock, kPack>(load, row, first, count,
                                 [&](int64_t, const float* v) { course::online_update<kPack>(t, v); });
    t = course::block_merge<kBlock>(t);
  }
  t = cluster_allreduce(cluster, &mine, t, course::MaxSum{}, [](course::MaxSum v) { return course::warp_merge(v); });
  const float k = ch12::row_constant(t.d, log);
  for (int64_t p = threadIdx.x; p < count; p += kBlock) {
    float v[kPack];
    if constexpr (kCached)
      cache.get(p, v);
    else
      load.template load<kPack>(v, row, (first + p) * kPack);
#pragma unroll
    for (int j = 0; j < kPack; ++j) v[j] = ch12::finish<Store::kFastExp>(v[j], t.m, k, log);
    store.template store<kPack>(v, row, (first + p) * kPack);
  }
#else
  __trap();  // the host never launches it below sm_90 (policy::Device::clusters)
#endif
}
/// [cluster_kernel]

namespace detail {

/// [launch_clusters]
/// Launches `kernel` (when `launch` is set) as `rows` clusters of `csize` blocks of `block` threads,
/// each with `smem` bytes of dynamic shared memory, passing it `args`. Returns false, launching
/// nothing, when such a cluster cannot be resident on this GPU. Whether it can is asked once per
/// (kernel, cluster size, grid, shared memory): the query costs host time that would otherwise
/// land in every launch. Clusters of more than 8 blocks are opted into once per kernel.
template <typename Kernel, typename... Args>
bool launch_clusters(Kernel kernel, int64_t rows, int csize, int block, size_t smem, cudaStream_t stream, bool launch,
                     Args... args) {
  const size_t static_bytes = course::allow_max_smem(kernel);
  if (smem + static_bytes > size_t(course::smem_per_block_optin())) return false;
  const void* id = reinterpret_cast<const void*>(kernel);
  static std::map<const void*, bool> opted;
  if (!opted[id]) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    opted[id] = true;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(rows * csize));
  cfg.blockDim = dim3(unsigned(block));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(csize);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  static std::map<std::tuple<const void*, int, unsigned, size_t>, bool> fits;
  const auto key = std::make_tuple(id, csize, cfg.gridDim.x, smem);
  auto known = fits.find(key);
  if (known == fits.end()) {
    int clusters = 0;
    const bool ok = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) == cudaSuccess && clusters > 0;
    cudaGetLastError();
    known = fits.emplace(key, ok).first;
  }
  if (!known->second) return false;
  if (launch) {
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
    CUDA_CHECK_LAUNCH();
  }
  return true;
}
/// [launch_clusters]

/// [cluster_launch]
// The cluster size: the smallest power of two that gives at least one block per SM over the
// rows, doubled further (up to 16) until a block's chunk fits in shared memory. If it never
// fits, the chunk is read twice instead (the second read mostly from L2). The occupancy API
// confirms that such a cluster can be resident, else the size is halved.
template <int kPack, int kBlock, bool kCached, typename Load, typename Store>
bool try_cluster(const Load& load, const Store& store, int64_t rows, int64_t cols, int csize, bool log,
                 cudaStream_t stream, bool launch) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  const size_t smem = kCached ? ch12::detail::cache_bytes<typename Load::Cache>(chunk_packs * kPack) : 0;
  return launch_clusters(softmax_cluster_kernel<Load, Store, kPack, kBlock, kCached>, rows, csize, kBlock, smem,
                         stream, launch, load, store, cols, chunk_packs, log);
}

template <int kPack, bool kCached, typename Load, typename Store>
bool cluster_with_block(const Load& load, const Store& store, int64_t rows, int64_t cols, int csize, bool log,
                        cudaStream_t stream, bool launch) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  if (chunk_packs >= policy::kClusterBlock1024MinPacks)
    return try_cluster<kPack, 1024, kCached>(load, store, rows, cols, csize, log, stream, launch);
  if (chunk_packs >= policy::kClusterBlock256MinPacks)
    return try_cluster<kPack, 256, kCached>(load, store, rows, cols, csize, log, stream, launch);
  return try_cluster<kPack, 128, kCached>(load, store, rows, cols, csize, log, stream, launch);
}

template <int kPack, typename Load, typename Store>
void launch_cluster(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
                    cudaStream_t stream) {
  const int csize = policy::cluster_start_size(ch12::device(), rows);  // enough blocks for one per SM
  for (int c = csize; c <= policy::kMaxClusterBlocks; c *= 2)  // the smallest cluster whose chunks fit on chip
    if (cluster_with_block<kPack, true>(load, store, rows, cols, c, log, stream, true)) return;
  for (int c = csize; c >= 2; c /= 2)  // too long for shared memory: read each chunk twice
    if (cluster_with_block<kPack, false>(load, store, rows, cols, c, log, stream, true)) return;
  throw course::UsageError("no thread-block cluster of 2 or more blocks fits on this GPU");
}
/// [cluster_launch]

}  // namespace detail
}  // namespace ch13
