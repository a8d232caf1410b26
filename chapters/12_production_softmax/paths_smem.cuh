/// @file paths_smem.cuh
/// @brief Chapter 12's shared-memory path: a block per row, the row in shared memory as stored
/// or as fp32 (chapter 06). Its kernel, the occupancy rule's floor of packs per thread,
/// and the launch with its choice of cache type. The backward's kernel and launch:
/// 14_softmax_backward/backward_smem.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "blocks/occupancy.cuh"
#include "harness/errors.h"
#include "paths_common.cuh"
#include "blocks/peel.h"

namespace ch12 {

/// [smem_kernel]
/// A block per row (grid-stride over rows), the row cached in shared memory as C: read once from
/// global memory, then twice from shared memory (sum, write). C is Load::Cache (the storage type
/// for a plain load: half the shared memory of fp32 for 16-bit rows) or float. With a float cache
/// the softmax writes each exponential back in the sum pass (chapter 06), so the write pass only
/// multiplies; with a narrower cache it computes the exponential again. Each thread revisits only
/// its own packs, so the only barriers are the two reductions'. The launch bound asks for 1536
/// resident threads (at most 40 registers), measured to spill nothing where 2048 (32) spills.
/// The row is read through the read-only data path (x must not overlap y), each element once,
/// into shared memory: fp32 at 16384 columns +0.8% on the H100; the warp kernel with the same
/// change lost up to 1% at 512 columns, so it keeps plain loads. The plain peeled fp32 kernel is held to
/// 1536 resident threads too: unbounded it took 44-48 registers (40 without the peel), which left
/// two 64 KB blocks of 512 threads on an SM where three fit (fp32 at 16383 columns: 0.6x).
template <typename C, typename Load, typename Store, int kPack, int kBlock, bool kPeel = false>
__global__ void __launch_bounds__(kBlock, kPack >= 8 || (kPeel && std::is_same_v<Load, DirectLoad<float>>) ? 1536 / kBlock : 1)
    softmax_smem_kernel(Load load, Store store, int64_t rows, int64_t cols, bool log, int phase = 0) {
  constexpr bool kKeepExp = std::is_same_v<C, float>;  // the cache holds the exponentials exactly
  extern __shared__ __align__(16) unsigned char smem[];
  const int num_packs = int(cols / kPack);  // a row in shared memory: 32-bit indices (fewer registers)
  const RowCache<C, kPack> cache{reinterpret_cast<C*>(smem), num_packs};
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    // The peel (kPeel: cols not a whole number of packs, blocks/peel.h): the packs start at the row's
    // first 16-byte boundary; its head and tail take one element per thread (threads 0 .. edges
    // - 1), which keeps its element in a register through the three passes.
    const RowPeel pl = kPeel ? RowPeel::of<kPack>(phase, row, cols) : RowPeel{0, num_packs, 0, 0};
    const int packs = pl.packs, head = pl.head;
    const auto edge_in = fetch_edge<kPeel>(load, row, int(threadIdx.x) < pl.edges ? pl.edge_col(int(threadIdx.x)) : -1);
    // With an fp32 cache the edge is converted after the packs' loads (PeelEdge); with a 16-bit one
    // at once: converted later, 16-bit log-softmax rows of 8193-32769 columns lost 2-9% (TUNING.md).
    constexpr bool kLateEdge = std::is_same_v<C, float>;
    float edge = kPeel && !kLateEdge && edge_in.here() ? edge_in.value(load) : -INFINITY;
    float m = edge;
    // A 16-bit row cached as fp32 loads one pack at a time: two would spill at 40 registers, and
    // four at 64 registers (fewer blocks) measured slower from 3072 to 16384 columns.
    constexpr int kUnroll = kKeepExp && kPack >= 8 ? 1 : (kPack >= 8 ? 2 : 4);
    for_each_pack<kBlock, kPack, kUnroll, true>(
        load, row, 0, packs,
        [&](int64_t p, const float* v) {
          cache.put(int(p), v);
#pragma unroll
          for (int j = 0; j < kPack; ++j) m = fmaxf(m, v[j]);
        },
        head);
    if (kPeel && kLateEdge && edge_in.here()) edge = edge_in.value(load);
    m = block_allreduce<kBlock>(fmaxf(m, edge), Max{}, -INFINITY);
    const bool keep_exp = kKeepExp && !log;
    float s = 0;
    if (kPeel && edge_in.here()) s = row_exp<Store::kFastExp>(edge - m);  // computed again when written
#pragma unroll 1  // one pack at a time: unrolling costs registers, and occupancy is what hides latency here
    for (int p = threadIdx.x; p < packs; p += kBlock) {
      float v[kPack];
      cache.get(p, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) {
        const float e = row_exp<Store::kFastExp>(v[j] - m);
        s += e;
        v[j] = e;
      }
      if (keep_exp) cache.put(p, v);
    }
    const float k = row_constant(block_allreduce<kBlock>(s, Sum{}, 0.0f), log);
#pragma unroll 1
    for (int p = threadIdx.x; p < packs; p += kBlock) {
      float v[kPack];
      cache.get(p, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) v[j] = keep_exp ? v[j] * k : finish<Store::kFastExp>(v[j], m, k, log);
      store.template store<kPack, kPeel>(v, row, head + int64_t(p) * kPack);
    }
    if (kPeel && edge_in.here()) {
      const float out = finish<Store::kFastExp>(edge, m, k, log);
      store.template store<1>(&out, row, edge_in.col);
    }
  }
}
/// [smem_kernel]

namespace detail {

/// [smem_min_packs]
/// The occupancy rule's floor of packs per thread on the shared-memory path (below it a block
/// size is not a candidate): chapter 06 asked for four; with a block per row (row_blocks) two were
/// faster for fp32, and 16-bit rows keep four (policy::smem_min_packs).
template <int kPack>
constexpr int kSmemMinPacks = policy::smem_min_packs(kPack);
/// [smem_min_packs]

/// [smem_launch]
// Chapter 06's rule for the block size (occupancy.cuh): the most resident threads for this
// row's shared memory, at least kSmemMinPacks packs per thread. The cache type: fp32 (one
// exponential per element, one pack in flight per thread) unless the narrower Load::Cache keeps
// more threads resident, or the row is at most policy::kSmemNarrowCacheMaxPacks packs (two per
// thread of a 128-thread block): the narrow cache's two packs in flight then read the row in one
// round trip, which outweighs the second exponential. Log-softmax always takes the narrow cache:
// it keeps no exponential, so the fp32 cache buys nothing (16-bit at 3072 columns: 2.85-2.89
// against 2.76-2.79 TB/s on the H100).
// kPeel: the peeled kernel, for rows that are not a whole number of packs (phase: pick_phase).
// The packs the block is sized for: the row's, or for a peeled fp32 row its fewest,
// (cols - kPack + 1) / kPack (cols / kPack counts a pack that half the rows of 4097 columns do
// not hold). H100: fp32 2049/4097 +14-18%, fused 2049-8193 +36-53%; 16-bit rows keep cols / kPack
// (fused -6-12% at 16385/32769 with the fewest; TUNING.md).
template <int kPack, bool kPeel>
constexpr int64_t sized_packs(int64_t cols) {
  constexpr bool kFewest = kPeel && kPack == 4;  // a peeled row's packs are 16 bytes: fp32
  return kFewest ? (cols - kPack + 1) / kPack : cols / kPack;
}

template <typename C, int kPack, typename Load, typename Store, bool kPeel = false>
auto smem_kernel_for() {
  return [](auto block) { return softmax_smem_kernel<C, Load, Store, kPack, decltype(block)::value, kPeel>; };
}

template <typename C, int kPack, bool kPeel, typename Load, typename Store>
void launch_smem_as(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log, int phase,
                    cudaStream_t stream) {
  const size_t smem = cache_bytes<C>(cols);
  auto kernel_for = smem_kernel_for<C, kPack, Load, Store, kPeel>();
  const int64_t packs = sized_packs<kPack, kPeel>(cols);
  course::with_occupancy_block(packs, kSmemMinPacks<kPack>, smem, kernel_for, [&](auto block) {
    constexpr int kBlock = decltype(block)::value;
    kernel_for(block)<<<row_blocks(rows), kBlock, smem, stream>>>(load, store, rows, cols, log, phase);
    CUDA_CHECK_LAUNCH();
  });
}

template <int kPack, bool kPeel = false, typename Load, typename Store>
void launch_smem(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log, cudaStream_t stream,
                 int phase = 0) {
  using C = typename Load::Cache;
  if constexpr (!std::is_same_v<C, float>) {
    const int64_t packs = cols / kPack;
    const bool fits = cols <= cols_in_smem<float>(1);
    const int wide = fits ? course::occupancy_best_threads(packs, kSmemMinPacks<kPack>, cache_bytes<float>(cols),
                                                           smem_kernel_for<float, kPack, Load, Store, kPeel>())
                          : 0;
    const int narrow = course::occupancy_best_threads(packs, kSmemMinPacks<kPack>, cache_bytes<C>(cols),
                                                      smem_kernel_for<C, kPack, Load, Store, kPeel>());
    if (log || wide < narrow || packs <= policy::kSmemNarrowCacheMaxPacks)
      return launch_smem_as<C, kPack, kPeel>(load, store, rows, cols, log, phase, stream);
  }
  launch_smem_as<float, kPack, kPeel>(load, store, rows, cols, log, phase, stream);
}
/// [smem_launch]

}  // namespace detail
}  // namespace ch12
