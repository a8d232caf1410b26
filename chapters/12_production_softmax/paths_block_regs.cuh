/// @file paths_block_regs.cuh
/// @brief Chapter 12's block-registers path: a block per row, the row in registers (new here:
/// rows too long for a warp's). Its kernel, the block size from the bytes in flight (which the
/// backward's shares), and the forward's launch; the rules for taking it are the policy's
/// (policy.h). The backward's kernel and launch: 14_softmax_backward/backward_block_regs.cuh.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "blocks/occupancy.cuh"
#include "harness/errors.h"
#include "harness/launch_math.h"
#include "paths_common.cuh"
#include "block_regs_pick.h"
#include "blocks/peel.h"
#include "softmax.cuh"

namespace ch12 {

/// [block_regs_kernel]
/// A block per row with the row in registers: thread t holds packs t, t + blockDim.x, ... (kPacks
/// of them, a block apart, so that a warp's loads are contiguous), all loaded before any is used.
/// Then the warp kernel's three passes over registers, with the block's reductions in between:
/// no shared memory for the row, and every load of the row in flight at once. It serves fp32 rows
/// past the warp path's 1024 columns (a warp's registers hold no more) and 16-bit rows past its
/// 3072, packed or peeled;
/// the dispatch picks the block size that puts a given number of bytes in flight per SM.
/// The block size is chosen at run time (block_regs_shape, below): 128, 256, 384, 512, 768 or
/// policy::kBlockRegsMaxBlock (1024) threads.
/// kPeel (blocks/peel.h): rows that are not whole numbers of packs, read in packs from each row's first
/// boundary; the head and tail (edges) one element per thread, kept in a register.
template <typename Load, typename Store, int kPack, int kPacks, bool kPeel = false>
__global__ void __launch_bounds__(policy::kBlockRegsMaxBlock)
    softmax_block_regs_kernel(Load load, Store store, int64_t rows, int64_t cols, bool log, int phase = 0) {
  const int num_packs = int(cols / kPack), block = int(blockDim.x);
  auto here_whole = [&](int p) { return p * block + int(threadIdx.x) < num_packs; };
  auto col_whole = [&](int p) { return int64_t(p * block + int(threadIdx.x)) * kPack; };
  const bool keep_exp = !log;  // the softmax keeps each exponential in place of its input
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    RowPeel pl{0, num_packs, 0, 0};
    if constexpr (kPeel) pl = RowPeel::of<kPack>(phase, row, cols);
    auto here = [&](int p) { return kPeel ? p * block + int(threadIdx.x) < pl.packs : here_whole(p); };
    auto col_of = [&](int p) { return kPeel ? pl.head + col_whole(p) : col_whole(p); };
    const auto edge_in = fetch_edge<kPeel>(load, row, int(threadIdx.x) < pl.edges ? pl.edge_col(int(threadIdx.x)) : -1);
    float v[kPacks][kPack];
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(p)) load.template load<kPack>(v[p], row, col_of(p));
    const float edge = kPeel && edge_in.here() ? edge_in.value(load) : -INFINITY;  // after the packs' loads (PeelEdge)
    float m = edge;
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(p))
#pragma unroll
        for (int j = 0; j < kPack; ++j) m = fmaxf(m, v[p][j]);
    m = block_allreduce<policy::kBlockRegsMaxBlock>(m, Max{}, -INFINITY, block / 32);
    float s = 0;
    if (kPeel && edge_in.here()) s = row_exp<Store::kFastExp>(edge - m);  // computed again when written
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(p))
#pragma unroll
        for (int j = 0; j < kPack; ++j) {
          const float e = row_exp<Store::kFastExp>(v[p][j] - m);
          s += e;
          if (keep_exp) v[p][j] = e;
        }
    const float k = row_constant(block_allreduce<policy::kBlockRegsMaxBlock>(s, Sum{}, 0.0f, block / 32), log);
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(p)) {
        float out[kPack];
#pragma unroll
        for (int j = 0; j < kPack; ++j) out[j] = keep_exp ? v[p][j] * k : finish<Store::kFastExp>(v[p][j], m, k, log);
        store.template store<kPack, kPeel>(out, row, col_of(p));
      }
    if (kPeel && edge_in.here()) {
      const float out = finish<Store::kFastExp>(edge, m, k, log);
      store.template store<1>(&out, row, edge_in.col);
    }
  }
}
/// [block_regs_kernel]

namespace detail {

/// The block-registers path's refusal message.
inline const char* block_regs_limit_text() {
  return "the block-registers path holds cols <= 16384 in registers (16 per thread of 1024)";
}

/// [block_regs_rule]
/// The block-registers path (softmax_block_regs_kernel and the backward's): a block per row, each
/// thread holding up to policy::kBlockRegsMaxElems elements of each tensor in registers (four fp32
/// packs, two 16-bit ones, or 16 elements read one at a time), so rows of up to 1024 x 16 = 16384
/// columns. The dispatch takes it, with 16-byte packs (peeled rows too: policy.h) and from
/// policy::long_rows_min rows (enough to fill every SM with resident rows), for the forward's rows
/// of more than 4 KB of x in fp32 (to the path's limit) and past 3072 columns in 16-bit (up to
/// 16 KB), and the backward's of 4 KB to 32 KB of y and dy (fp32: to the limit)
/// (policy::block_regs_*_fits).
///
/// The block size. A block holds a whole row in flight, so an SM with r resident blocks has r rows
/// of loads in flight: r x row_bytes (the bytes a row reads). Of 128, 256, 384, 512, 768 and 1024
/// threads, each size that holds the row in at most kMaxPacks packs per thread is a candidate;
/// r comes from the occupancy of its kernel (registers grow with packs per thread). The sizes
/// that keep policy::kBlockRegsMinRowsPerSm rows (3) on an SM come first: with two, both rows can
/// be in their reductions and stores at once, nothing loading. Of those, the size whose
/// r x row_bytes is nearest `in_flight` wins, a byte short counting kBlockRegsShortfallWeight
/// (1.5) bytes past it (the smaller size on a tie): fewer bytes in flight starve DRAM, more only
/// queue. `in_flight` is the policy's kBlockRegsForwardInFlight or kBlockRegsBackwardInFlight,
/// scaled to the GPU's DRAM bandwidth per SM (in_flight_target).
struct BlockRegsShape {
  int block = 0;  // threads, 0: the row does not fit
  int packs = 0;  // packs per thread
};

template <typename Kernel, size_t kMaxPacks>
BlockRegsShape block_regs_shape(const std::array<Kernel, kMaxPacks>& kernels, int64_t num_packs, int64_t row_bytes,
                                int64_t in_flight) {
  policy::BlockRegsCandidate c[6];
  int n = 0;
  for (int block : {128, 256, 384, 512, 768, 1024}) {
    // A row of edges only: one pack.
    const int64_t packs = std::max<int64_t>(1, course::ceil_div(num_packs, int64_t(block)));
    if (packs > int64_t(kMaxPacks)) continue;
    c[n++] = {block, int(packs), course::resident_threads(kernels[packs - 1], block, 0) / block};
  }
  const int i = policy::block_regs_pick(c, n, row_bytes, in_flight);  // block_regs_pick.h: the rule, host-tested
  return i < 0 ? BlockRegsShape{} : BlockRegsShape{c[i].block, c[i].packs};
}

/// The kernels of kernel_for(std::integral_constant<int, N>{}) for N = 1 .. kMaxPacks packs per
/// thread, indexed by N - 1 (they share one signature).
template <int kMaxPacks, typename KernelFor, int... N>
auto kernels_by_packs(KernelFor kernel_for, std::integer_sequence<int, N...>) {
  using Kernel = decltype(kernel_for(std::integral_constant<int, 1>{}));
  return std::array<Kernel, kMaxPacks>{kernel_for(std::integral_constant<int, N + 1>{})...};
}
template <int kMaxPacks, typename KernelFor>
auto kernels_by_packs(KernelFor kernel_for) {
  return kernels_by_packs<kMaxPacks>(kernel_for, std::make_integer_sequence<int, kMaxPacks>{});
}

/// The forward's kernels for a pack of kPack (kPeel: the peeled ones), and the shape it launches
/// them with.
template <int kPack, typename Load, typename Store, bool kPeel = false>
auto block_regs_forward_kernels() {
  return kernels_by_packs<policy::kBlockRegsMaxElems / kPack>(
      [](auto packs) { return softmax_block_regs_kernel<Load, Store, kPack, decltype(packs)::value, kPeel>; });
}
template <int kPack, typename Load, typename Store, bool kPeel = false>
BlockRegsShape block_regs_forward_shape(int64_t cols) {
  static const auto kernels = block_regs_forward_kernels<kPack, Load, Store, kPeel>();
  return block_regs_shape(kernels, cols / kPack, cols * int64_t(sizeof(typename Load::Cache)),
                          policy::in_flight_target(device(), policy::kBlockRegsForwardInFlight));
}

template <int kPack, bool kPeel = false, typename Load, typename Store>
void launch_block_regs(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
                       cudaStream_t stream, int phase = 0) {
  static const auto kernels = block_regs_forward_kernels<kPack, Load, Store, kPeel>();
  const BlockRegsShape s = block_regs_forward_shape<kPack, Load, Store, kPeel>(cols);
  course::require(s.block > 0, block_regs_limit_text(), ", got ", cols);
  kernels[s.packs - 1]<<<row_blocks(rows), s.block, 0, stream>>>(load, store, rows, cols, log, phase);
  CUDA_CHECK_LAUNCH();
}
/// [block_regs_rule]

}  // namespace detail
}  // namespace ch12
