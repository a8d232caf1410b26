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
/// better, but fewer blocks than the GPU holds leave it idle. One wave (`per_sm` resident blocks
/// of kShapeBlock threads on each of `sms`), and never fewer than kMinRowsPerBlock rows a block.
constexpr int64_t kMinRowsPerBlock = 16;  // H100: 32 read about 19% less at 4096 rows (TUNING.md)
/// The kernels' block: groups of 32-512 threads, as many as fit (row_groups.cuh). H100: blocks of 256
/// read more at 768-1024 16-bit columns but less at 4096 rows and in the forward (TUNING.md).
constexpr int kShapeBlock = 512;
constexpr int kMaxBlocksPerSm = 2048 / kShapeBlock;  // the most resident blocks of them
struct Plan {
  int64_t blocks, rows_per_block;
};
inline Plan plan_partials(int64_t rows, int sms, int per_sm) {
  const int64_t most =
      std::max<int64_t>(1, std::min<int64_t>(int64_t(sms) * per_sm, (rows + kMinRowsPerBlock - 1) / kMinRowsPerBlock));
  const int64_t per = (rows + most - 1) / most;
  return {(rows + per - 1) / per, per};
}
/// The workspace a backward needs for its partial rows, at most: a block of kShapeBlock threads
/// fits kMaxBlocksPerSm times on an SM of 2048 threads.
inline size_t backward_workspace(int64_t rows, int64_t cols, int accs, int sms) {
  return size_t(plan_partials(rows, sms, kMaxBlocksPerSm).blocks) * size_t(accs) * size_t(cols) * sizeof(float);
}
/// [plan]

/// A peeled row's accumulators in shared memory: one float skipped after every kPack columns, so
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
/// The longest peeled row whose `accs` accumulator rows stay in shared memory.
template <int kPack>
constexpr int64_t acc_smem_max_cols(int accs) {
  int64_t c = 1;
  while (size_t(accs) * size_t(padded_cols<kPack>(c + 1)) * sizeof(float) <= kAccSmemMax) ++c;
  return c;
}

}  // namespace ch15
