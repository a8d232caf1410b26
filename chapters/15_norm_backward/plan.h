/// @file plan.h
/// @brief Chapter 15: how many partial rows the backward's column sums leave (host code: the
/// launcher and the workspace it asks the caller for agree on it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace ch15 {

/// [plan]
/// How many partial rows, and how many rows each block adds into its own. Each partial row is
/// traffic the operation does not need (written once, read once by column_sum: 8 bytes per column
/// for dgamma, 8 more for dbeta), against 3 x rows x cols elements of x, dy and dx: the fewer the
/// better, but fewer blocks than the GPU holds leave it idle. One wave (`resident`: the blocks of
/// kShapeBlock threads the GPU holds at once, or the clusters where rows are split), and never
/// fewer than kMinRowsPerBlock rows a block.
constexpr int64_t kMinRowsPerBlock = 16;  // H100: 32 read about 19% less at 4096 rows (TUNING.md)
/// The kernels' block: groups of 32-512 threads, as many as fit (row_groups.cuh). H100: blocks of 256
/// read more at 768-1024 16-bit columns but less at 4096 rows and in the forward (TUNING.md).
constexpr int kShapeBlock = 512;
constexpr int kMaxBlocksPerSm = 2048 / kShapeBlock;  // the most resident blocks of them
struct Plan {
  int64_t blocks, rows_per_block;  ///< blocks: partial rows (clusters where rows are split)
};
/// With `period` classes of rows (row_period), each block takes rows of one class: block b
/// rows b % period + i x period, for rows_per_block values of i from (b / period) x rows_per_block;
/// the GPU's one wave shared evenly between the classes.
inline Plan plan_partials(int64_t rows, int64_t resident, int period = 1) {
  const int64_t class_rows = (rows + period - 1) / period;  // the first class's, the most
  const int64_t most = std::max<int64_t>(
      1, std::min<int64_t>(resident / period, (class_rows + kMinRowsPerBlock - 1) / kMinRowsPerBlock));
  const int64_t per = (class_rows + most - 1) / most;
  return {(class_rows + per - 1) / per * period, per};
}
/// The workspace a backward needs for its partial rows, at most: a block of kShapeBlock threads
/// fits kMaxBlocksPerSm times on an SM of 2048 threads (and a cluster holds at least one block),
/// for any period of a 16-byte pack.
inline size_t backward_workspace(int64_t rows, int64_t cols, int accs, int sms) {
  int64_t blocks = 0;
  for (int period = 1; period <= 8; period *= 2)
    blocks = std::max(blocks, plan_partials(rows, int64_t(sms) * kMaxBlocksPerSm, period).blocks);
  return size_t(blocks) * size_t(accs) * size_t(cols) * sizeof(float);
}
/// [plan]

/// [period]
/// Rows of one layout. A row that is not a whole number of packs starts part-way into a pack
/// (blocks/peel.h), (phase + row x cols) % kPack elements past a boundary, so its packs cover other
/// columns than its neighbour's. But row r + period starts where row r does, with period the
/// fewest rows whose columns make whole packs: kPack / gcd(cols, kPack) (1 for whole packs, kPack
/// for an odd width). The backward gives each block rows of one class (row % period), so that
/// every row of a block has one layout and its threads keep their columns' sums in registers, as
/// for whole packs.
constexpr int row_period(int64_t cols, int pack) {
  int period = 1;
  while (cols * period % pack != 0) period *= 2;  // pack: a power of two
  return period;
}
/// [period]

/// [ahead]
/// Trips a group's rows are asked for ahead of the one it works on (rows_ahead.cuh), and the most
/// register accumulators a thread may hold where it does so.
constexpr int kTripsAhead = 1;     // H200: 2 no faster (0-1.5% slower) at 1536-8192 columns (TUNING.md)
constexpr int kAheadMaxAccs = 32;  // H200: 16-bit LayerNorm's 64 at 4 packs spill: -7% and -17% ahead
/// [ahead]

/// [split]
/// Rows too long for one block are shared by a cluster of blocks (split_rows.cuh): block k of the
/// cluster takes slice k of every row and keeps its slice and the slice's column sums on chip.
/// Split where one block would read the row twice or keep its column sums in its partial row in
/// global memory (`on_chip` false), and rows past kSplitFixedMinPacks even where one block would
/// hold them (peeled rows too: a block's rows share one layout, row_period), and rows where one
/// block's threads would hold more than kSplitRegAccs register accumulators (16-bit LayerNorm at
/// 1025-2048 packs: 4 packs a thread, 64 sums, spilled). The slices: at most
/// kSplitRegAccs register accumulators a thread of 512 (1024 packs for 16-bit LayerNorm: two sums
/// of 8 elements a pack; 2048 otherwise); the fewest blocks of 2, 4 and 8 that give such slices,
/// else 8.
constexpr int64_t kSplitFixedMinPacks = 3072;  // H200: fp32 RMSNorm at 3072 packs -17% split, 4096 +4%
constexpr int kSplitRegAccs = 32;              // H200: 16-bit LayerNorm +14% at 32768 columns (TUNING.md)
constexpr int64_t kSplitSlicePacks = 2048;     // 512 x kHeldMax (row_groups.cuh)
constexpr int kSplitMaxBlocks = 8;             // the portable cluster size
/// accs_per_pack: a pack's register accumulators (accumulator rows x elements a pack).
inline int64_t split_slice_packs(int accs_per_pack) {
  return std::min<int64_t>(kSplitSlicePacks, 512 * std::max(1, kSplitRegAccs / accs_per_pack));
}
/// The blocks a row of `packs` packs is split across (1: not split). Slices always exceed 512
/// packs (a group of 512 a slice): rows of 1024 packs or fewer are never split (on_chip holds up
/// to 2048 packs, `spilled` starts past 1024, kSplitFixedMinPacks > 1024).
inline int split_blocks(int64_t packs, bool on_chip, int accs_per_pack) {
  // A block of 512 holds 1025-2048 packs at 4 a thread in registers (row_groups.cuh: shape_for).
  // H200: 16-bit LayerNorm split there, +16% to +31% at 12288-16384 columns (TUNING.md).
  const bool spilled = packs > kSplitSlicePacks / 2 && packs <= kSplitSlicePacks &&
                       kSplitSlicePacks / 512 * accs_per_pack > kSplitRegAccs;
  if (on_chip && packs <= kSplitFixedMinPacks && !spilled) return 1;
  const int64_t most = split_slice_packs(accs_per_pack);
  int c = 2;
  while (c < kSplitMaxBlocks && packs > c * most) c *= 2;
  return c;
}
/// [split]

/// A shared-memory accumulator row (8 packs a thread, or rows read twice): one float skipped after every kPack columns, so
/// the lanes of a warp, a pack of kPack columns apart each, fall on distinct banks (chapter 06's
/// layout); a row of cols columns takes padded_cols(cols) floats.
template <int kPack>
constexpr int64_t padded_cols(int64_t cols) {
  return cols + cols / kPack + 1;
}
/// Shared memory for those accumulators (and for rows read twice), at most this much per block:
/// LayerNorm's two rows of fp32 to about 20000 columns, RMSNorm's one to 40000. Longer rows
/// accumulate in the block's partial row in global memory, a read and a write of L2 per element
/// and accumulator. H100: 49152 x 12288 fp32 LayerNorm at 26% of the copy with a 96 KB bound
/// (TUNING.md).
constexpr size_t kAccSmemMax = 200 * 1024;
/// The longest row whose `accs` padded accumulator rows stay in shared memory.
template <int kPack>
constexpr int64_t acc_smem_max_cols(int accs) {
  int64_t c = 1;
  while (size_t(accs) * size_t(padded_cols<kPack>(c + 1)) * sizeof(float) <= kAccSmemMax) ++c;
  return c;
}

}  // namespace ch15
