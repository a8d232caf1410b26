/// @file plan.h
/// @brief Chapter 16's choice for the fused kernel, as plain host code (tests/unit/test_ce_plan.cpp
/// checks it without a GPU): which blocks cache a row of a given number of 16-byte packs, from the
/// shared memory a block may take.
#pragma once

#include <cstdint>

namespace ch16 {

/// The most shared memory a fused block caches where clusters can share a row (sm_90): two
/// blocks an SM, so that one block's read overlaps the other's writing (a block alone on its SM
/// alternates between them); longer rows are split over a cluster.
constexpr int64_t kChunkMaxBytes = 112 * 1024;
constexpr int kMaxClusterBlocks = 16;  // chapter 13's largest cluster (ch12::policy::kMaxClusterBlocks)

/// [fused_plan]
/// Who caches a row of `packs` 16-byte packs: `blocks` = 1, one block caching all of them; 2, 4, 8
/// or 16, a cluster whose blocks cache `chunk_packs` each (the last block what is left); 0, nobody
/// (the row is read twice). `block_bytes` and `cluster_bytes`: the shared memory one block of the
/// block-per-row kernel and of the cluster kernel may take (the opt-in maximum less the kernel's
/// static shared memory); `clusters`: whether the GPU launches clusters. Where it does, a block
/// caches at most kChunkMaxBytes.
struct FusedPlan {
  int blocks;
  int64_t chunk_packs;
};
constexpr FusedPlan fused_plan(int64_t packs, int64_t block_bytes, int64_t cluster_bytes, bool clusters) {
  const int64_t one = clusters && block_bytes > kChunkMaxBytes ? kChunkMaxBytes : block_bytes;
  if (packs * 16 <= one) return {1, packs};
  if (!clusters) return {0, 0};
  const int64_t most = (cluster_bytes < kChunkMaxBytes ? cluster_bytes : kChunkMaxBytes) / 16;
  for (int c = 2; c <= kMaxClusterBlocks; c *= 2) {
    const int64_t chunk = (packs + c - 1) / c;
    if (chunk <= most) return {c, chunk};
  }
  return {0, 0};
}
/// [fused_plan]

/// The largest number of packs each choice of fused_plan takes, in order: one block, then each
/// cluster size (0 where there is none): the dispatch's thresholds, which the suite checks +-1.
struct FusedLimits {
  int64_t one_block;
  int64_t cluster[4];  // clusters of 2, 4, 8 and 16 blocks
};
constexpr FusedLimits fused_limits(int64_t block_bytes, int64_t cluster_bytes, bool clusters) {
  const int64_t one = clusters && block_bytes > kChunkMaxBytes ? kChunkMaxBytes : block_bytes;
  const int64_t most = (cluster_bytes < kChunkMaxBytes ? cluster_bytes : kChunkMaxBytes) / 16;
  FusedLimits l{one > 0 ? one / 16 : 0, {0, 0, 0, 0}};
  for (int i = 0, c = 2; clusters && most > 0 && i < 4; ++i, c *= 2) l.cluster[i] = most * c;
  return l;
}

}  // namespace ch16
