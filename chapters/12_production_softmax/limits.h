/// @file limits.h
/// @brief What the suite checks of each registered variant of chapters 12-14 (course::Limits):
/// each path's longest row, and the shapes on each side of each boundary of the policy's rules,
/// computed from the policy (policy.h) and a device, so that a rule and its checks cannot drift
/// apart. Host-only; the chapters' main.cu register with it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "blocks/warp_dispatch.cuh"
#include "harness/harness.h"
#include "harness/launch_math.h"
#include "policy.h"

namespace ch12::limits {

using Shapes = std::vector<std::pair<int64_t, int64_t>>;

/// course::Op as the policy tells it apart.
inline policy::Op policy_op(course::Op op) {
  switch (op) {
    case course::Op::log_softmax: return policy::Op::log_softmax;
    case course::Op::scale_mask_softmax: return policy::Op::scale_mask_softmax;
    case course::Op::softmax_backward: return policy::Op::softmax_backward;
    case course::Op::log_softmax_backward: return policy::Op::log_softmax_backward;
    default: return policy::Op::softmax;
  }
}

inline std::string cols_text(int64_t max_cols) {
  return max_cols > 0 ? std::to_string(max_cols) : std::string("the GPU's shared memory");
}

inline void append(Shapes& to, const Shapes& from) { to.insert(to.end(), from.begin(), from.end()); }

/// Where the warp path changes shape (group width, then columns per lane), below `below`.
inline std::vector<int64_t> warp_shapes(int elem_bytes, int64_t below = INT64_MAX) {
  std::vector<int64_t> v;
  for (int64_t c : {8, 16, 32, 64, 128, 256, 512})
    if (c < below) v.push_back(c);
  for (int64_t c = 1024; c < policy::warp_max_cols(elem_bytes) && c < below; c += 512) v.push_back(c);
  return v;
}

/// Rows from which groups of kPack x kColsPerLane shapes take two rows of `cols` columns (half_wave).
template <int kPack, int kColsPerLane>
int64_t two_rows_min(const policy::Device& d, int64_t cols, int min_packs) {
  int64_t first = 0;
  auto line = [&](auto cpt, auto width) {
    constexpr int kRows = course::rows_per_group<kPack, decltype(cpt)::value, policy::kMaxRowsPerGroup>();
    // half_wave(rows, width, kRows) holds from ceil(rows / kRows) x width >= half a wave.
    if (kRows > 1) first = kRows * (course::ceil_div(policy::half_wave_threads(d), decltype(width)::value) - 1) + 1;
  };
  if (min_packs == 2)
    course::dispatch_warp_shape_min<kPack, 2, kColsPerLane>(cols, line);
  else if (min_packs == 4)
    course::dispatch_warp_shape_min<kPack, 4, kColsPerLane>(cols, line);
  else
    course::dispatch_warp_shape_min<kPack, 1, kColsPerLane>(cols, line);
  return first;
}

/// Rows from which the warp path gives each group of lanes two rows of `cols` columns (the forward's
/// group shape, or the backward's); 0 where a group takes one row at any rows, or without a GPU.
inline int64_t warp_two_rows_min(const policy::Device& d, int elem_bytes, int64_t cols, bool backward) {
  if (d.sm_count == 0 || cols < 1 || cols > policy::warp_max_cols(elem_bytes)) return 0;
  const int pack = 16 / elem_bytes;
  const int packs = backward ? 1 : policy::warp_min_packs(pack, cols);
  return pack == 8 ? two_rows_min<8, policy::kWarpColsPerLane16Bit>(d, cols, packs)
                   : two_rows_min<4, policy::kWarpColsPerLaneF32>(d, cols, packs);
}

/// The half-wave line at -1 and 0: at 32 and 64 columns (where it falls near the sweep's rows) and
/// at 256 (the fp32 forward's four packs per lane). The other widths' lines come from the same
/// arithmetic; at 1-4 million elements a case, all of them would add minutes to the full suite.
inline Shapes half_wave_boundary(const policy::Device& d, int elem_bytes, bool backward) {
  Shapes v;
  for (int64_t c : {32, 64, 256})
    if (const int64_t r = warp_two_rows_min(d, elem_bytes, c, backward); r > 1) {
      v.push_back({r - 1, c});
      v.push_back({r, c});
    }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

/// The cluster path's rows boundary for rows just past `smem_max` (with and without 16-byte packs).
inline Shapes cluster_rows_boundary(const policy::Device& d, int64_t smem_max) {
  const int64_t r = policy::cluster_rows_below(d);
  if (r == 0 || smem_max == 0) return {};
  return {{r - 1, smem_max + 8}, {r, smem_max + 8}, {r + 1, smem_max + 3}};
}

/// The very-few-rows rule (policy::few_long_rows): a row of kClusterFewRowsMinBytes of each tensor at
/// the last rows it takes and the first it does not, one column short of it, and one past it (odd:
/// the peel on the cluster path).
inline Shapes few_rows_boundary(const policy::Device& d, int elem_bytes) {
  const int64_t r = policy::few_rows_below(d), c = policy::kClusterFewRowsMinBytes / elem_bytes;
  if (r <= 1) return {};
  return {{r - 1, c}, {r, c}, {r - 1, c - 1}, {1, c + 1}};
}

/// The forward cluster kernel's smaller block (13_hopper_softmax/paths_cluster.cuh, cluster_with_block):
/// chunks of policy::kClusterBlock1024MinPacks packs, cached, in clusters of 4 and 8 blocks at the
/// most rows that start at that size (more blocks than SMs), whole packs and one column more (the peel).
inline Shapes cluster_block_shapes(const policy::Device& d, int elem_bytes) {
  if (!d.clusters) return {};
  const int64_t pack = 16 / elem_bytes;
  Shapes v;
  for (int64_t size : {4, 8}) {
    const int64_t rows = course::ceil_div(d.sm_count, size / 2) - 1;
    const int64_t cols = size * policy::kClusterBlock1024MinPacks * pack;
    append(v, {{rows, cols}, {rows, cols + 1}});
  }
  return v;
}

/// The warp path's rows condition past kWarpAnyRowsMaxCols (16-bit), at the first and last columns.
inline Shapes long_warp_boundary(const policy::Device& d, int elem_bytes) {
  const int64_t r = policy::long_rows_min(d), warp_max = policy::warp_max_cols(elem_bytes);
  if (warp_max <= policy::kWarpAnyRowsMaxCols || r == 0) return {};
  Shapes v;
  for (int64_t c : {policy::kWarpAnyRowsMaxCols + 1, warp_max}) {
    v.push_back({r - 1, c});
    v.push_back({r, c});
  }
  return v;
}

/// The first packed cols of the block-registers path, and the first packed cols past it.
inline std::pair<int64_t, int64_t> block_regs_cols(int elem_bytes, bool backward) {
  if (backward)
    return {policy::kBlockRegsBackwardMinBytes / 2 / elem_bytes,
            policy::block_regs_backward_end_bytes(elem_bytes) / 2 / elem_bytes};
  return {(policy::block_regs_forward_min_bytes(elem_bytes) + 16) / elem_bytes,
          (policy::block_regs_forward_max_bytes(elem_bytes) + 16) / elem_bytes};
}

/// The first and last cols of a peeled row (not whole packs) that the block-registers path takes:
/// from more than 4 KB of each tensor (the 16-bit forward's past the warp path's 3072 columns), to
/// 8 KB in 16-bit; fp32 rows to 12287 forward (the last such cols under
/// policy::kBlockRegsForwardF32PeeledMaxCols) and to the path's limit backward.
inline std::pair<int64_t, int64_t> block_regs_peeled_cols(int elem_bytes, bool backward = false) {
  const int64_t last = elem_bytes != 4 ? policy::kBlockRegsPeeledMaxBytes / elem_bytes - 1
                       : backward     ? policy::kBlockRegsMaxCols - 1
                                      : policy::kBlockRegsForwardF32PeeledMaxCols - 1;
  const int64_t first = !backward && elem_bytes != 4 ? policy::warp_max_cols(elem_bytes) + 1
                                                     : policy::kBlockRegsForwardMinBytes / elem_bytes + 1;
  return {first, last};
}

/// The block-registers path's boundaries: its first and last packed cols and those beside them, at
/// the rows where it starts (one row fewer at its first cols), and its first cols + 1 (unpacked).
inline Shapes block_regs_boundary(const policy::Device& d, int elem_bytes, bool backward) {
  const int64_t r = policy::long_rows_min(d), pack = 16 / elem_bytes;
  if (r == 0) return {};
  const auto [first, last] = block_regs_cols(elem_bytes, backward);
  Shapes v{{r - 1, first}, {r, first - pack}, {r, first}, {r, first + 1}, {r, last - pack}, {r, last}};
  // The peeled rows (blocks/peel.h): the first and last cols that are not whole packs, and the first
  // such cols past each end.
  const auto [lo, hi] = block_regs_peeled_cols(elem_bytes, backward);
  append(v, {{r - 1, lo}, {r, lo - 2}, {r, lo}, {r, hi}, {r, hi + 2}});
  return v;
}

/// The backward cluster's size doubles (2, 4, 8, 16) where a chunk of y and dy stops fitting in a
/// block's shared memory: each doubling on both sides (one pack more; an odd column more is the
/// peel's edge, not the chunk's), at the fewest rows that start the search at that size (rows x size
/// >= SMs). The suite's longest rows: three cols per boundary.
inline Shapes backward_cluster_shapes(const policy::Device& d, int elem_bytes) {
  const int64_t both = policy::cols_in_smem(d, elem_bytes, 2);
  if (!d.clusters || both == 0) return {};
  Shapes v;
  for (int64_t size : {2, 4, 8})
    for (int64_t extra : {int64_t(0), int64_t(1), int64_t(16 / elem_bytes)})
      v.push_back({course::ceil_div(d.sm_count, size), size * both + extra});
  return v;
}

/// The very-few-rows exception to the shared-memory path, for --list.
inline std::string few_rows_text() {
  return " (on sm_90+, rows < SMs / " + std::to_string(policy::kClusterFewRowsDivisor) + " of " +
         std::to_string(policy::kClusterFewRowsMinBytes / 1024) + " KB a tensor and more: cluster)";
}

/// The automatic dispatch for `op` on `elem_bytes`-byte elements, on the device `d` as the dispatch
/// sees it (chapter 12's: without the tile and cluster paths, policy::without_hopper_paths).
/// `hopper_paths`: the dispatch has them (chapters 13 and 14), on sm_90 and later.
inline course::Limits dispatch(policy::Op op, int elem_bytes, const policy::Device& d, bool hopper_paths) {
  const bool backward = policy::is_backward(op), plain = op == policy::Op::softmax || op == policy::Op::log_softmax;
  const int64_t warp_max = policy::warp_max_cols(elem_bytes), pack = 16 / elem_bytes;
  const int64_t smem_max = policy::cols_in_smem(d, op == policy::Op::scale_mask_softmax ? 4 : elem_bytes, 1);
  const int64_t both = policy::cols_in_smem(d, elem_bytes, 2);
  const std::string many = "rows >= " + std::to_string(policy::kLongRowsPerSm) + " x SMs";
  course::Limits l{0, {warp_max, smem_max}, "any cols: warp <= " + cols_text(warp_max)};
  if (warp_max > policy::kWarpAnyRowsMaxCols)
    l.text += " (past " + std::to_string(policy::kWarpAnyRowsMaxCols) + ": " + many + ")";
  append(l.shapes, cluster_rows_boundary(d, smem_max));
  append(l.shapes, few_rows_boundary(d, elem_bytes));
  if (hopper_paths && !backward) append(l.shapes, cluster_block_shapes(d, elem_bytes));
  append(l.shapes, long_warp_boundary(d, elem_bytes));
  append(l.shapes, half_wave_boundary(d, elem_bytes, backward));
  if (hopper_paths && (plain || backward)) {
    const int64_t lo = backward ? policy::kBackwardTileMinCols : policy::kTileMinRowBytes / elem_bytes;
    const int64_t hi = backward ? policy::kBackwardTileEndCols : policy::kTileMaxRowBytes / elem_bytes;
    l.thresholds.insert(l.thresholds.end(), {lo, hi});
    l.text += " (packed cols " + std::to_string(backward ? lo + 1 : lo + pack) + " to " + std::to_string(hi) +
              " on sm_90+: tile)";
  }
  if (plain || backward) {
    // whole packs, or rows the peel reads in packs (blocks/peel.h)
    const auto [lo, hi] = block_regs_cols(elem_bytes, backward);
    const auto [plo, phi] = block_regs_peeled_cols(elem_bytes, backward);
    l.text += "; with " + many + ": block_regs for packed cols " + std::to_string(lo) + " to " +
              std::to_string(hi - pack) + ", other cols " + std::to_string(plo) + " to " + std::to_string(phi);
    append(l.shapes, block_regs_boundary(d, elem_bytes, backward));
  }
  if (!backward) {
    l.text += std::string("; then shared memory") + (op == policy::Op::scale_mask_softmax ? " (fp32 logits)" : "") +
              " <= " + cols_text(smem_max) + (hopper_paths ? few_rows_text() : "") +
              (hopper_paths ? " < rows < SMs / 2 on sm_90+: cluster" : "") + " < uncached";
    return l;
  }
  l.thresholds.push_back(both);
  l.text += "; then shared memory, y and dy <= " + cols_text(both);
  if (op == policy::Op::log_softmax_backward) l.text += " < dy alone <= " + cols_text(smem_max);
  if (hopper_paths) l.text += few_rows_text() + " < on sm_90+, a cluster's shared memory, y and dy <= " +
                                std::to_string(policy::kMaxClusterBlocks) + " x " + cols_text(both);
  if (d.clusters) {
    const int64_t cluster_max = policy::backward_cluster_max_cols(d, elem_bytes);
    append(l.shapes, cluster_rows_boundary(d, both));
    // Where the cluster path ends (3 rows: a cluster of 16 blocks): rows of tens of millions of
    // elements, checked by the full suite only.
    l.full_shapes = {{3, cluster_max}, {3, cluster_max + 1}, {3, cluster_max + 16 / elem_bytes}};
  }
  if (op == policy::Op::softmax_backward) l.text += " < y alone <= " + cols_text(smem_max);
  l.text += " < uncached";
  return l;
}

/// `op` forced onto `path` (not automatic).
inline course::Limits forced(policy::Op op, Path path, int elem_bytes, const policy::Device& d) {
  const bool backward = policy::is_backward(op);
  const int64_t smem_max = policy::cols_in_smem(d, elem_bytes, 1), both = policy::cols_in_smem(d, elem_bytes, 2);
  course::Limits l;
  switch (path) {
    case Path::warp:
      l = {policy::warp_max_cols(elem_bytes), warp_shapes(elem_bytes),
           "cols <= " + cols_text(policy::warp_max_cols(elem_bytes)) +
               "; the row in registers; two rows per group of lanes from half a wave of threads"};
      break;
    case Path::tile: {
      const int64_t bytes = backward ? policy::kBackwardTileMaxRowBytes : policy::kTileMaxRowBytes;
      l = {bytes / elem_bytes, warp_shapes(elem_bytes, bytes / elem_bytes),
           "cols <= " + std::to_string(bytes / elem_bytes) + " (" + std::to_string(bytes) +
               " bytes); the warp path's groups, the block's rows brought into shared memory by " +
               (backward ? "two bulk copies (y, dy)" : "one bulk copy") + "; rows not 16-byte aligned: the warp path"};
      l.min_sm = 90;
      break;
    }
    case Path::block_regs:  // where a thread's packs of the row go from one to two to four (16-byte packs)
      l = {policy::kBlockRegsMaxCols, {512, 1024, 2048, 4096, 8192},
           "cols <= " + std::to_string(policy::kBlockRegsMaxCols) + "; a block per row, up to " +
               std::to_string(policy::kBlockRegsMaxElems) + " elements per thread in registers"};
      break;
    case Path::smem:
      l = {smem_max, backward && both > 0 ? std::vector<int64_t>{both} : std::vector<int64_t>{},
           "cols <= " + cols_text(smem_max) + "; the row in shared memory"};
      break;
    case Path::cluster:
      if (backward) {
        const int64_t cluster_max = policy::backward_cluster_max_cols(d, elem_bytes);
        l = {cluster_max, {}, "cols <= " + cols_text(cluster_max) + "; y and dy cached across a cluster of up to " +
                                 std::to_string(policy::kMaxClusterBlocks) + " blocks",
             {}, backward_cluster_shapes(d, elem_bytes)};
      } else {
        l = {0, {}, "any cols; several blocks per row in a cluster", cluster_block_shapes(d, elem_bytes)};
      }
      l.min_sm = 90;
      break;
    default:
      l = {0, {}, "any cols; a block per row, the row read twice"};
  }
  return l;
}

}  // namespace ch12::limits
