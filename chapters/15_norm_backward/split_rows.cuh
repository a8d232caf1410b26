/// @file split_rows.cuh
/// @brief Chapter 15: rows shared by a cluster of blocks. Past 2048 packs (8192 fp32 columns) one
/// block of 512 threads cannot keep a row's column sums in registers, past 4096 it reads the row
/// twice, and LayerNorm's two rows of sums leave shared memory from about 20000 fp32 columns; a
/// cluster of 2-8 blocks (chapter 13) keeps them on chip. Block k of the cluster takes slice k of
/// every row, adds its slice's row sums with the other blocks' through distributed shared memory,
/// and keeps its slice's column sums in registers (a block's rows of one layout: plan.h, row_period).
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "13_hopper_softmax/paths_cluster.cuh"
#include "harness/device.h"
#include "plan.h"

namespace ch15 {

/// [cluster_sums]
/// The sums of v[0..N) over the blocks of the cluster, returned to every thread of each (every
/// thread of a block holds the block's sums, as group_sums leaves them). Thread 0 publishes its
/// block's values in `mine[trip % 2]`; after one cluster barrier every thread reads the blocks'
/// values through distributed shared memory and adds them in rank order: every block, every run,
/// the same bits. Two buffers, one barrier a trip: a block writes a buffer again two trips later,
/// past a barrier that every other block reaches only after reading it.
template <int N>
__device__ __forceinline__ void cluster_sums(float (&v)[N], float (*mine)[N], int64_t trip) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  float* const buf = mine[trip % 2];
  if (threadIdx.x == 0)
#pragma unroll
    for (int n = 0; n < N; ++n) buf[n] = v[n];
  cluster.sync();
#pragma unroll
  for (int n = 0; n < N; ++n) v[n] = 0.0f;
  for (unsigned b = 0; b < cluster.num_blocks(); ++b) {
    const float* theirs = cluster.map_shared_rank(buf, b);
#pragma unroll
    for (int n = 0; n < N; ++n) v[n] += theirs[n];
  }
#endif
}

/// Block k's slice of every row: columns [k * slice, k * slice + width), the last block's width
/// all the columns left (up to kPack - 1 more than `slice`, or fewer). 0 and the whole row outside
/// a cluster.
struct Slice {
  int64_t first, width;
};
template <bool kSplit>
__device__ __forceinline__ Slice slice_of(int64_t cols, int64_t slice) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kSplit) {
    const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int64_t first = int64_t(cluster.block_rank()) * slice;
    return {first, cluster.block_rank() + 1 == cluster.num_blocks() ? cols - first : slice};
  }
#endif
  return {0, cols};
}

/// The block's partial row: its cluster's index among the kernel's clusters (chapter 13's
/// cluster_row), or its own index outside one.
template <bool kSplit>
__device__ __forceinline__ int64_t part_of() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kSplit) return ch13::cluster_row(cooperative_groups::this_cluster());
#endif
  return blockIdx.x;
}

/// The cluster barrier no block may leave before: the others may still read its buffers.
template <bool kSplit>
__device__ __forceinline__ void cluster_done() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kSplit) cooperative_groups::this_cluster().sync();
#endif
}
/// [cluster_sums]

/// Whether this GPU and build can split rows across a cluster: sm_90 device code (clusters).
inline bool split_available() { return course::device_code_version() >= 90; }

}  // namespace ch15
