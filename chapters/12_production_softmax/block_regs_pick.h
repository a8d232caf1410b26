/// @file block_regs_pick.h
/// @brief The block-registers path's block-size rule (paths_block_regs.cuh, block_regs_shape; chapter
/// 14's backward launches through it too). Host-only C++ on the policy's constants, so that
/// tests/unit/test_softmax_policy.cpp checks the choices without a GPU.
#pragma once

#include <cstdint>

#include "policy.h"

namespace ch12 {
namespace policy {

/// A block size the block-registers launcher may take (block_regs_shape in paths_block_regs.cuh):
/// its threads, packs per thread, and the rows of it an SM holds (from the kernel's occupancy).
struct BlockRegsCandidate {
  int block = 0;
  int packs = 0;
  int64_t rows_per_sm = 0;
};
/// [block_regs_pick]
/// The block size's rule: the index of the candidate the launcher takes for rows of `row_bytes`
/// bytes read and a target of `in_flight` bytes per SM, -1 when none has a resident row. Those
/// with kBlockRegsMinRowsPerSm rows come first; then the least gap between rows x row_bytes and
/// the target, a byte short weighing kBlockRegsShortfallWeight bytes past; the first (smaller
/// block) on a tie.
constexpr int block_regs_pick(const BlockRegsCandidate* c, int n, int64_t row_bytes, int64_t in_flight) {
  int best = -1;
  double best_gap = 0;
  bool best_few = true;
  for (int i = 0; i < n; ++i) {
    if (c[i].rows_per_sm <= 0) continue;
    const int64_t bytes = c[i].rows_per_sm * row_bytes;
    const double gap = bytes >= in_flight ? double(bytes - in_flight)
                                          : kBlockRegsShortfallWeight * double(in_flight - bytes);
    const bool few = c[i].rows_per_sm < kBlockRegsMinRowsPerSm;
    if (best < 0 || few < best_few || (few == best_few && gap < best_gap))
      best = i, best_gap = gap, best_few = few;
  }
  return best;
}
/// [block_regs_pick]

}  // namespace policy
}  // namespace ch12
