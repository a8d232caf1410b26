/// @file row_groups.cuh
/// @brief Chapter 15: a block as groups of threads, one row per group at a time, the row held in
/// registers (or read again past what registers hold), and the group's sums of each row. The
/// RMSNorm forward (rms_norm.cuh) and both backwards (norm_backward.cuh) are built on it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "blocks/pack.cuh"
#include "blocks/pack_cut.cuh"
#include "blocks/peel.h"
#include "blocks/warp.cuh"
#include "plan.h"

namespace ch15 {

using course::load_pack_cut;  // chapter 09 (blocks/pack_cut.cuh)
using course::with_shift;

/// [shape]
/// How a kernel covers its rows: kGroup threads per row (a warp or more), kGroups rows at a time
/// per block of kBlockThreads, each thread holding `held` packs of a row in registers; held = 0
/// reads the row again for its second pass (rows longer than 512 x kBackwardHeldMax packs).
struct Shape {
  int group;   ///< threads per row: 32 to 512
  int groups;  ///< rows at a time per block
  int held;    ///< packs per thread held in registers, 0: read twice
};
// Register accumulators (norm_backward.cuh) and the forward's groups under 512 threads stop at
// 4 packs a thread: 64 B of each tensor.
constexpr int kHeldMax = 4;
static_assert(kSplitSlicePacks == 512 * kHeldMax, "plan.h: a split row's slice, a thread of 512 at kHeldMax");
// The RMSNorm forward's most packs a thread of 512 (rms_norm.cuh: forward_shape_for): 32768 fp32
// columns held. H100: 4 read 9-23% less past 2048 packs (TUNING.md).
constexpr int kForwardHeldMax = 16;
// The backward's most packs a thread of 512 (8: 4096 packs, 16384 fp32 columns), its column sums
// in shared memory past kHeldMax. H100: against reading twice past 2048 packs, +32% to +58% at
// 12288-16384 fp32 columns and +52% at 32768 16-bit RMSNorm columns (TUNING.md).
constexpr int kBackwardHeldMax = 8;
constexpr int kBlockThreads = kShapeBlock;  // groups of up to 512 threads share a block of 512 (plan.h)

/// A block's threads: kGroups groups of kGroup.
template <int kGroup, int kGroups>
constexpr int kBlockOf = int(kGroup) * kGroups;

/// One pack per thread where a group of up to 512 holds the row (the most threads per row: the
/// fewest registers per thread, so the most resident), then 2, 4 or 8 packs per thread of 512.
inline Shape shape_for(int64_t packs) {
  for (int g = 32; g <= 512; g *= 2)
    if (packs <= g) return {g, kBlockThreads / g, 1};
  for (int h = 2; h <= kBackwardHeldMax; h *= 2)
    if (packs <= 512 * h) return {512, 1, h};
  return {512, 1, 0};
}
/// [shape]

/// [group_sums]
/// A barrier for group g's kGroup threads alone (a named barrier, `bar.sync g + 1, kGroup`: 0 is
/// __syncthreads'), so that the block's groups do not wait for each other between rows; with one
/// group, __syncthreads. It orders shared and global memory among the group's threads as
/// __syncthreads does among the block's. H100: __syncthreads for every group read 4-8% less at
/// 768-1024 columns (TUNING.md).
template <int kGroup, int kGroups>
__device__ __forceinline__ void group_barrier(int g) {
  static_assert(kGroups <= 15 && kGroup % 32 == 0, "named barriers 1-15, whole warps");
  if constexpr (kGroups == 1)
    __syncthreads();
  else
    asm volatile("bar.sync %0, %1;" ::"r"(g + 1), "n"(kGroup) : "memory");
}

/// The sums of each of v[0..N) over the kGroup threads of each group (kGroup consecutive threads;
/// the block's groups all call it, the same number of times, `trip` counting the calls): N values,
/// one barrier. The warps' sums go to one of two buffers by the trip's parity: a thread writing
/// trip t + 2's has passed trip t + 1's barrier, which every thread of its group reached only
/// after reading trip t's, so no second barrier is needed before the writes (with one buffer, a
/// fast warp could overwrite sums a slow one is still reading). H200: the earlier barrier pair
/// read 7% less in the RMSNorm forward at 32768 fp32 columns (TUNING.md). Every thread
/// of a group adds the same warp sums in the same order: the group's threads and every run get
/// the same bits.
template <int kGroup, int kGroups, int N>
__device__ __forceinline__ void group_sums(float (&v)[N], int64_t trip) {
#pragma unroll
  for (int n = 0; n < N; ++n) v[n] = course::group_sum<(kGroup < 32 ? kGroup : 32)>(v[n], 0xffffffffu);
  if constexpr (kGroup > 32) {
    constexpr int kWarps = kGroup / 32;
    __shared__ float part[2][kGroups][kWarps][N];
    const int g = threadIdx.x / kGroup, w = (threadIdx.x % kGroup) / 32, b = int(trip & 1);
    if (threadIdx.x % 32 == 0)
#pragma unroll
      for (int n = 0; n < N; ++n) part[b][g][w][n] = v[n];
    group_barrier<kGroup, kGroups>(g);
#pragma unroll
    for (int n = 0; n < N; ++n) {
      v[n] = part[b][g][0][n];
#pragma unroll
      for (int i = 1; i < kWarps; ++i) v[n] += part[b][g][i][n];
    }
  }
}
/// The sums of (a, b) over each group.
template <int kGroup, int kGroups>
__device__ __forceinline__ float2 group_sum2(float a, float b, int64_t trip) {
  float v[2] = {a, b};
  group_sums<kGroup, kGroups>(v, trip);
  return {v[0], v[1]};
}
/// [group_sums]

/// The elements of a pack: 16 bytes. H100: 8-byte packs for the 16-bit types read 4-27% less in
/// the backward at 768-8192 columns (twice the rows' fixed costs per element; TUNING.md).
template <typename T>
constexpr int kPackOf = 16 / int(sizeof(T));

/// The tensors' common peel phase (blocks/peel.h) for kPackOf<T>-element packs, or -1: then the
/// kernels run with one-element packs (any alignment).
template <typename T>
int common_phase(int64_t cols, std::initializer_list<std::pair<const void*, int>> ptrs) {
  return course::pick_phase<kPackOf<T>>(cols, ptrs);
}

/// A pack of gamma at column `col` (any element: one load on a pack boundary, else one per element).
template <typename T, int kPack>
__device__ __forceinline__ course::Pack<T, kPack> load_gamma(const T* gamma, int64_t col) {
  const T* p = gamma + col;
  if (reinterpret_cast<uintptr_t>(p) % (sizeof(T) * kPack) == 0) return course::load_pack_ro<T, kPack>(p);
  course::Pack<T, kPack> pk;
#pragma unroll
  for (int j = 0; j < kPack; ++j) pk.elem[j] = __ldg(p + j);
  return pk;
}

}  // namespace ch15
