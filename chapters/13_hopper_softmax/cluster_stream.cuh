/// @file cluster_stream.cuh
/// @brief Chapter 13's streamed cluster: the cluster path for rows read as stored (DirectLoad in
/// 16-byte packs, whole or peeled), its chunks brought in by the bulk copy (bulk_copy.cuh), the
/// clusters persistent, each taking row after row with the next row's chunks already on their way
/// into a second buffer while the blocks reduce and write the current one. The forward takes it for
/// very few rows, chapter 14's backward for many rows and peeled ones (policy.h, stream_rule). The
/// launch that chooses between it and the generic cluster kernel (paths_cluster.cuh).
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "12_production_softmax/paths_common.cuh"
#include "12_production_softmax/policy.h"
#include "12_production_softmax/softmax_functors.cuh"
#include "bulk_copy.cuh"
#include "harness/errors.h"
#include "harness/launch_math.h"
#include "paths_cluster.cuh"

namespace ch13 {

using ch12::DirectLoad;

/// [stream_chunk]
/// Where block `rank` of a cluster finds its chunk of row `row` (blocks/peel.h: the packs start at
/// the row's first 16-byte boundary, `head`; `phase` is the peel's element offset, pick_phase).
struct StreamChunk {
  int64_t head, first, count;  // columns before the packs; the chunk's first pack and its packs
};
template <int kPack, bool kPeel>
__device__ __forceinline__ StreamChunk stream_chunk(int64_t row, int64_t cols, int phase, int rank,
                                                    int64_t chunk_packs) {
  const ch12::RowPeel pl = kPeel ? ch12::RowPeel::of<kPack>(phase, row, cols) : ch12::RowPeel{0, 0, 0, 0};
  const int64_t packs = kPeel ? int64_t(pl.packs) : cols / kPack;
  const int64_t first = int64_t(rank) * chunk_packs, left = packs - first;
  return {pl.head, first, left < chunk_packs ? (left > 0 ? left : 0) : chunk_packs};
}

/// Thread 0 asks the TMA for the chunk `c` of `kTensors` tensors of row `row` (the bulk copy: one
/// request each, c.count 16-byte packs), into `buf[t]`, completing the phase of `bar`. Nothing for
/// an empty chunk: its block neither asks nor waits.
template <int kPack, typename T, int kTensors>
__device__ __forceinline__ void stream_fetch(const T* const (&src)[kTensors], int64_t row_size, int64_t row,
                                             const StreamChunk& c, T* const (&buf)[kTensors], uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (c.count == 0) return;
#pragma unroll
  for (int t = 0; t < kTensors; ++t)
    course::bulk_load(buf[t], src[t] + row * row_size + c.head + c.first * kPack, unsigned(c.count * 16), bar);
#endif
}
/// [stream_chunk]

/// [stream_kernel]
/// The streamed cluster (sm_90): `gridDim.x / csize` clusters, each taking rows cluster, cluster +
/// clusters, ... Block `rank` holds packs [rank * chunk_packs, ...) of a row in one of kStages
/// buffers. With two, the bulk copy of the next row's chunk is asked for before the current one is
/// reduced, so DRAM reads the next row while the blocks find the max, the sum, meet the cluster
/// (cluster_allreduce, through DSMEM) and write; the block's barrier at the end of a row frees its
/// buffer for the row after next. With one (a chunk too large for two), the next row's copy is
/// asked for after that barrier. The head and tail of a peeled row (kPeel) are the first block's,
/// one element per thread, read from global memory.
template <typename T, typename Store, int kPack, int kBlock, int kStages, bool kPeel>
__global__ void __launch_bounds__(kBlock)
    softmax_cluster_stream_kernel(DirectLoad<T> load, Store store, int64_t rows, int64_t cols, int64_t chunk_packs,
                                  bool log, int phase) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(kPack * sizeof(T) == 16, "the bulk copy brings 16-byte packs");
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int rank = int(cluster.block_rank());
  const int64_t clusters = gridDim.x / cluster.num_blocks();
  extern __shared__ __align__(128) unsigned char stream_smem[];  // its own name: other kernels align theirs to 16
  T* const base = reinterpret_cast<T*>(stream_smem);
  T* const bufs[2][1] = {{base}, {base + chunk_packs * kPack}};
  const T* const src[1] = {load.src};
  __shared__ uint64_t landed[2];  // the two buffers' mbarriers
  __shared__ course::MaxSum mine;
  if (threadIdx.x == 0) {
    course::bulk_barrier_init(&landed[0]);
    course::bulk_barrier_init(&landed[1]);
  }
  __syncthreads();  // the barriers are initialized before anyone waits on them
  int64_t row = cluster_row(cluster);
  if (threadIdx.x == 0 && row < rows)
    stream_fetch<kPack>(src, load.row_size, row, stream_chunk<kPack, kPeel>(row, cols, phase, rank, chunk_packs),
                        bufs[0], &landed[0]);
  unsigned parity = 0;  // bit b: the parity of buffer b's next phase
  for (int it = 0; row < rows; row += clusters, ++it) {
    const int b = kStages == 2 ? it & 1 : 0;
    const int64_t next = row + clusters;
    if (kStages == 2 && threadIdx.x == 0 && next < rows)  // the next row's chunk into the other buffer
      stream_fetch<kPack>(src, load.row_size, next, stream_chunk<kPack, kPeel>(next, cols, phase, rank, chunk_packs),
                          bufs[b ^ 1], &landed[b ^ 1]);
    const StreamChunk c = stream_chunk<kPack, kPeel>(row, cols, phase, rank, chunk_packs);
    const ch12::RowPeel pl = kPeel ? ch12::RowPeel::of<kPack>(phase, row, cols) : ch12::RowPeel{0, 0, 0, 0};
    const int edge_col = kPeel && rank == 0 && int(threadIdx.x) < pl.edges ? pl.edge_col(int(threadIdx.x)) : -1;
    float edge = -INFINITY;
    if (kPeel && edge_col >= 0) load.template load<1>(&edge, row, edge_col);
    if (c.count > 0) {
      course::bulk_wait(&landed[b], (parity >> b) & 1);
      parity ^= 1u << b;
    }
    const ch12::RowCache<T, kPack> cache{bufs[b][0], int(c.count)};
    float m = edge;
    for (int p = threadIdx.x; p < c.count; p += kBlock) {
      float v[kPack];
      cache.get(p, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) m = fmaxf(m, v[j]);
    }
    m = ch12::block_allreduce<kBlock>(m, ch12::Max{}, -INFINITY);
    auto term = [m](float v) { return m == -INFINITY ? (isnan(v) ? v : 0.0f) : ch12::row_exp<Store::kFastExp>(v - m); };
    float s = edge_col >= 0 ? term(edge) : 0.0f;
    for (int p = threadIdx.x; p < c.count; p += kBlock) {
      float v[kPack];
      cache.get(p, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) s += term(v[j]);
    }
    course::MaxSum t{m, ch12::block_allreduce<kBlock>(s, ch12::Sum{}, 0.0f)};  // a chunk of -inf only: (-inf, 0)
    t = cluster_allreduce(cluster, &mine, t, course::MaxSum{}, [](course::MaxSum v) { return course::warp_merge(v); });
    const float k = ch12::row_constant(t.d, log);
    for (int p = threadIdx.x; p < c.count; p += kBlock) {
      float v[kPack];
      cache.get(p, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) v[j] = ch12::finish<Store::kFastExp>(v[j], t.m, k, log);
      store.template store<kPack, kPeel>(v, row, c.head + (c.first + p) * kPack);
    }
    if (kPeel && edge_col >= 0) {
      const float out = ch12::finish<Store::kFastExp>(edge, t.m, k, log);
      store.template store<1>(&out, row, edge_col);
    }
    __syncthreads();  // every thread is done with buffer b before a later row's copy refills it
    if (kStages == 1 && threadIdx.x == 0 && next < rows)
      stream_fetch<kPack>(src, load.row_size, next, stream_chunk<kPack, kPeel>(next, cols, phase, rank, chunk_packs),
                          bufs[0], &landed[0]);
  }
#else
  __trap();  // the host never launches it below sm_90 (policy::Device::clusters)
#endif
}
/// [stream_kernel]

namespace detail {

/// [stream_launch]
/// The streamed cluster with `csize` blocks per row: as many clusters as the GPU holds at once, up
/// to one per row; two buffers where they fit in a block's shared memory, else one. `tensors`
/// chunks a buffer (the backward: y and dy); `kernel_for(block, stages)` gives the kernel. The
/// block: `min_packs` 0, 128 threads under policy::kClusterBlock256MinPacks packs a chunk, else 256
/// (the forward's few rows; 512 and 1024 threads lost at 1 and 8 rows, but for 512 at fp32 262144
/// columns, TUNING.md); else chapter 06's occupancy rule, the most resident threads with at least
/// `min_packs` packs each (the backward).
/// False, launching nothing, where no such cluster can be resident.
template <typename KernelFor, typename... Args>
bool launch_stream(KernelFor kernel_for, int64_t rows, int64_t chunk_packs, int tensors, int min_packs, int csize,
                   cudaStream_t stream, Args... args) {
  const size_t stage = size_t(tensors) * size_t(chunk_packs) * 16;
  auto go = [&](auto block, auto stages) {
    auto kernel = kernel_for(block, stages);
    const size_t smem = stage * decltype(stages)::value;
    const int resident = resident_clusters(kernel, csize, decltype(block)::value, smem);
    if (resident == 0) return false;
    return launch_clusters(kernel, std::min<int64_t>(rows, resident), csize, decltype(block)::value, smem, stream,
                           args...);
  };
  auto with_stages = [&](auto stages) {
    const size_t smem = stage * decltype(stages)::value;
    if (smem + size_t(policy::kSmemReservedBytes) > size_t(course::smem_per_block_optin())) return false;
    if (min_packs == 0)
      return chunk_packs >= policy::kClusterBlock256MinPacks ? go(std::integral_constant<int, 256>{}, stages)
                                                             : go(std::integral_constant<int, 128>{}, stages);
    bool ok = false;
    course::with_occupancy_block(chunk_packs, min_packs, smem, [&](auto block) { return kernel_for(block, stages); },
                                 [&](auto block) { ok = go(block, stages); });
    return ok;
  };
  return with_stages(std::integral_constant<int, 2>{}) || with_stages(std::integral_constant<int, 1>{});
}

template <int kPack, bool kPeel, typename T, typename Store>
bool launch_cluster_stream(const DirectLoad<T>& load, const Store& store, int64_t rows, int64_t cols, int csize,
                           bool log, int phase, cudaStream_t stream) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  auto kernel_for = [](auto block, auto stages) {
    return softmax_cluster_stream_kernel<T, Store, kPack, decltype(block)::value, decltype(stages)::value, kPeel>;
  };
  return launch_stream(kernel_for, rows, chunk_packs, 1, 0, csize, stream, load, store, rows, cols, chunk_packs, log,
                       phase);
}
/// [stream_launch]

/// [cluster_launch_rule]
// The cluster size is the policy's (policy::cluster_size: from the size that gives each SM a block,
// the first whose chunks fit in a block's shared memory). The very few rows that one block would
// hold (policy::forward_cluster_streams), read as stored in 16-byte packs, take the streamed
// cluster; the others the generic kernel (softmax_cluster_kernel) with its chunk cached. Rows no
// cluster holds take the generic kernel at the start size, each chunk read twice (the second read
// from L2 only while the chunks in flight fit in it). Where the GPU cannot hold such a cluster, the
// size grows (cached) or halves (read twice). kPeel, phase: the peel (blocks/peel.h).
template <int kPack, bool kPeel = false, typename Load, typename Store>
void launch_cluster(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
                    cudaStream_t stream, int phase = 0) {
  const policy::Device& d = ch12::device();
  using C = typename Load::Cache;
  constexpr bool kStream = std::is_same_v<Load, DirectLoad<C>> && kPack * sizeof(C) == 16;
  const bool stream_it = kStream && policy::forward_cluster_streams(d, rows, cols, int(sizeof(C)));
  const int cached = policy::cluster_size(d, rows, cols, kPack, sizeof(C), 1);
  for (int c = cached; c > 0 && c <= policy::kMaxClusterBlocks; c *= 2) {  // the row on chip
    if constexpr (kStream)
      if (stream_it && launch_cluster_stream<kPack, kPeel>(load, store, rows, cols, c, log, phase, stream)) return;
    if (cluster_with_block<kPack, true, kPeel>(load, store, rows, cols, c, log, phase, stream)) return;
  }
  for (int c = policy::cluster_start_size(d, rows); c >= 2; c /= 2)  // too long for shared memory: read twice
    if (cluster_with_block<kPack, false, kPeel>(load, store, rows, cols, c, log, phase, stream)) return;
  throw course::UsageError("no thread-block cluster of 2 or more blocks fits on this GPU");
}
/// [cluster_launch_rule]

}  // namespace detail
}  // namespace ch13
