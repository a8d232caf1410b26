/// @file paths_cluster.cuh
/// @brief Chapter 13's cluster path: several blocks per row, a thread-block cluster, merging
/// their (m, d) pairs through distributed shared memory, when rows are too few to fill the GPU
/// (sm_90). The chunk of a row each block takes, the cluster-wide reduction, the generic kernel (any
/// load) and the cluster launch (which the backward's and the streamed cluster share); the cluster
/// size and the rule for taking the path are the policy's (12_production_softmax/policy.h), the
/// choice of kernel cluster_stream.cuh's launch_cluster. The backward's kernel and launch:
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
/// The row of a cluster's blocks: a cluster's blocks are consecutive in blockIdx.x.
__device__ __forceinline__ int64_t cluster_row(const cooperative_groups::cluster_group& cluster) {
  return int64_t(blockIdx.x / cluster.num_blocks());
}

/// The part of a row that one block of a cluster takes: block `rank` takes packs [first, first +
/// count) of the row's `num_packs`, chunk_packs of them or what is left (none for the last blocks
/// of a short row).
struct ClusterChunk {
  int64_t row, first, count;
};
__device__ __forceinline__ ClusterChunk cluster_chunk(const cooperative_groups::cluster_group& cluster,
                                                      int64_t num_packs, int64_t chunk_packs) {
  const int64_t first = int64_t(cluster.block_rank()) * chunk_packs;
  const int64_t left = num_packs - first;
  return {cluster_row(cluster), first, left < chunk_packs ? (left > 0 ? left : 0) : chunk_packs};
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
/// and write their chunk: from shared memory, or by reading it again (from L2 while the chunks in
/// flight fit in it). One launch, no workspace, no second kernel. Needs sm_90 (clusters). kPeel (blocks/peel.h):
/// a row that is not a whole number of packs is shared out from its first pack boundary; its head
/// and tail (under 2 kPack elements) are the first block's, one element per thread, kept in a register.
template <typename Load, typename Store, int kPack, int kBlock, bool kCached, bool kPeel = false>
__global__ void __launch_bounds__(kBlock)
    softmax_cluster_kernel(Load load, Store store, int64_t cols, int64_t chunk_packs, bool log, int phase = 0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const ch12::RowPeel pl = kPeel ? ch12::RowPeel::of<kPack>(phase, cluster_row(cluster), cols)
                                 : ch12::RowPeel{0, 0, 0, 0};
  const ClusterChunk chunk = cluster_chunk(cluster, kPeel ? pl.packs : cols / kPack, chunk_packs);
  const int64_t row = chunk.row, first = chunk.first, count = chunk.count, head = pl.head;
  const int edge_col = kPeel && cluster.block_rank() == 0 && int(threadIdx.x) < pl.edges
                           ? pl.edge_col(int(threadIdx.x)) : -1;  // -1: none
  float edge = -INFINITY;
  if (kPeel && edge_col >= 0) load.template load<1>(&edge, row, edge_col);
  extern __shared__ __align__(16) unsigned char smem[];
  const RowCache<typename Load::Cache, kPack> cache{reinterpret_cast<typename Load::Cache*>(smem), int(count)};
  __shared__ course::MaxSum mine;

  course::MaxSum t;
  if constexpr (kCached) {  // the max while caching, then the sum and the write from the cache
    float m = edge;
    ch12::for_each_pack<kBlock, kPack>(
        load, row, first, count,
        [&](int64_t p, const float* v) {
          cache.put(int(p), v);
#pragma unroll
          for (int j = 0; j < kPack; ++j) m = fmaxf(m, v[j]);
        },
        head);
    m = ch12::block_allreduce<kBlock>(m, ch12::Max{}, -INFINITY);
    auto term = [m](float v) { return m == -INFINITY ? (isnan(v) ? v : 0.0f) : ch12::row_exp<Store::kFastExp>(v - m); };
    float s = edge_col >= 0 ? term(edge) : 0.0f;
    for (int64_t p = threadIdx.x; p < count; p += kBlock) {
      float v[kPack];
      cache.get(p, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) s += term(v[j]);
    }
    t = {m, ch12::block_allreduce<kBlock>(s, ch12::Sum{}, 0.0f)};  // a chunk of -inf only: (-inf, 0), merged as such
  } else {
    if (edge_col >= 0) course::online_update<1>(t, &edge);
    ch12::for_each_pack<kBlock, kPack>(
        load, row, first, count, [&](int64_t, const float* v) { course::online_update<kPack>(t, v); }, head);
    t = course::block_merge<kBlock>(t);
  }
  t = cluster_allreduce(cluster, &mine, t, course::MaxSum{}, [](course::MaxSum v) { return course::warp_merge(v); });
  const float k = ch12::row_constant(t.d, log);
  for (int64_t p = threadIdx.x; p < count; p += kBlock) {
    float v[kPack];
    if constexpr (kCached)
      cache.get(p, v);
    else
      load.template load<kPack>(v, row, head + (first + p) * kPack);
#pragma unroll
    for (int j = 0; j < kPack; ++j) v[j] = ch12::finish<Store::kFastExp>(v[j], t.m, k, log);
    store.template store<kPack, kPeel>(v, row, head + (first + p) * kPack);
  }
  if (kPeel && edge_col >= 0) {
    const float out = ch12::finish<Store::kFastExp>(edge, t.m, k, log);
    store.template store<1>(&out, row, edge_col);
  }
#else
  __trap();  // the host never launches it below sm_90 (policy::Device::clusters)
#endif
}
/// [cluster_kernel]

namespace detail {

/// [launch_clusters]
/// The launch configuration of `clusters` clusters of `csize` blocks of `block` threads, each with
/// `smem` bytes of dynamic shared memory (attr: the cluster attribute it points to).
inline cudaLaunchConfig_t cluster_config(int64_t clusters, int csize, int block, size_t smem, cudaStream_t stream,
                                         cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(clusters * csize));
  cfg.blockDim = dim3(unsigned(block));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  attr->id = cudaLaunchAttributeClusterDimension;
  attr->val.clusterDim.x = unsigned(csize);
  attr->val.clusterDim.y = 1;
  attr->val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

/// How many clusters of `csize` blocks of `kernel` (`block` threads, `smem` bytes of dynamic shared
/// memory each) the GPU holds at once; 0 when not even one fits. Asked once per (kernel, cluster
/// size, block, shared memory): the query costs host time that would otherwise land in every
/// launch. The kernel is opted into clusters of more than 8 blocks at the first query.
template <typename Kernel>
int resident_clusters(Kernel kernel, int csize, int block, size_t smem) {
  const size_t static_bytes = course::allow_max_smem(kernel);
  if (smem + static_bytes > size_t(course::smem_per_block_optin())) return 0;
  const void* id = reinterpret_cast<const void*>(kernel);
  static std::map<std::tuple<const void*, int, int, size_t>, int> known;
  const auto key = std::make_tuple(id, csize, block, smem);
  if (auto it = known.find(key); it != known.end()) return it->second;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = cluster_config(1, csize, block, smem, nullptr, &attr);
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess) clusters = 0;
  cudaGetLastError();
  return known[key] = clusters;
}

/// Launches `kernel` as `clusters` clusters of `csize` blocks of `block` threads, each with `smem`
/// bytes of dynamic shared memory, passing it `args`. Returns false, launching nothing, when such a
/// cluster cannot be resident on this GPU.
template <typename Kernel, typename... Args>
bool launch_clusters(Kernel kernel, int64_t clusters, int csize, int block, size_t smem, cudaStream_t stream,
                     Args... args) {
  if (resident_clusters(kernel, csize, block, smem) == 0) return false;
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = cluster_config(clusters, csize, block, smem, stream, &attr);
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
  CUDA_CHECK_LAUNCH();
  return true;
}
/// [launch_clusters]

/// [cluster_launch]
// The generic cluster kernel (any Load: the fused scale-and-mask, rows read an element at a time)
// with `csize` blocks per row, its chunk cached (kCached) or read twice; the block from the chunk's
// packs. False, launching nothing, where such a cluster cannot be resident. kPeel, phase: the peel.
template <int kPack, int kBlock, bool kCached, bool kPeel, typename Load, typename Store>
bool try_cluster(const Load& load, const Store& store, int64_t rows, int64_t cols, int csize, bool log, int phase,
                 cudaStream_t stream) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  const size_t smem = kCached ? ch12::detail::cache_bytes<typename Load::Cache>(chunk_packs * kPack) : 0;
  return launch_clusters(softmax_cluster_kernel<Load, Store, kPack, kBlock, kCached, kPeel>, rows, csize, kBlock, smem,
                         stream, load, store, cols, chunk_packs, log, phase);
}

/// Whether the `rows` clusters of `csize` blocks of kBlock threads (the generic kernel, its chunk
/// cached or not) are all on the GPU at once: one wave.
template <int kPack, int kBlock, bool kCached, bool kPeel, typename Load, typename Store>
bool one_wave(int64_t rows, int64_t cols, int csize) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  const size_t smem = kCached ? ch12::detail::cache_bytes<typename Load::Cache>(chunk_packs * kPack) : 0;
  return resident_clusters(softmax_cluster_kernel<Load, Store, kPack, kBlock, kCached, kPeel>, csize, kBlock, smem) >=
         rows;
}

/// The block: 1024 threads from policy::kClusterBlock1024MinPacks packs a chunk, 256 from
/// policy::kClusterBlock256MinPacks, else 128. An SM holds two blocks of 1024 threads at most (one
/// past 32 registers a thread: the chunk read twice takes 39), and a cluster's blocks share a GPC.
/// Where the occupancy API says the rows' clusters of 1024-thread blocks are not all on the GPU at
/// once, 512 threads, else 256, if that makes one wave (smaller blocks pack an SM more finely: three
/// of 512 at 40 registers); H200: +18% to +49% at 32-65 rows cached, +6% to +20% at 16 rows read
/// twice. Where neither makes one wave (chunks that fill shared memory, a forced cluster at many
/// rows), 1024 still.
template <int kPack, bool kCached, bool kPeel, typename Load, typename Store>
bool cluster_with_block(const Load& load, const Store& store, int64_t rows, int64_t cols, int csize, bool log,
                        int phase, cudaStream_t stream) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  if (chunk_packs >= policy::kClusterBlock1024MinPacks) {
    if (!one_wave<kPack, 1024, kCached, kPeel, Load, Store>(rows, cols, csize)) {
      if (one_wave<kPack, 512, kCached, kPeel, Load, Store>(rows, cols, csize))
        return try_cluster<kPack, 512, kCached, kPeel>(load, store, rows, cols, csize, log, phase, stream);
      if (one_wave<kPack, 256, kCached, kPeel, Load, Store>(rows, cols, csize))
        return try_cluster<kPack, 256, kCached, kPeel>(load, store, rows, cols, csize, log, phase, stream);
    }
    return try_cluster<kPack, 1024, kCached, kPeel>(load, store, rows, cols, csize, log, phase, stream);
  }
  if (chunk_packs >= policy::kClusterBlock256MinPacks)
    return try_cluster<kPack, 256, kCached, kPeel>(load, store, rows, cols, csize, log, phase, stream);
  return try_cluster<kPack, 128, kCached, kPeel>(load, store, rows, cols, csize, log, phase, stream);
}

/// [cluster_launch]

}  // namespace detail
}  // namespace ch13
