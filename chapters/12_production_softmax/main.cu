/// @file main.cu
/// @brief Chapter 12's executable: the production softmax, log-softmax, their backward and the
/// fused scale-and-mask softmax on the common harness, each path also registered on its own
/// (so that the suite checks every path at its limits), and `--paths FILE` to write the
/// dispatch's choice for every benchmark shape on this GPU (the lesson's table).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"
#include "blocks/occupancy.cuh"
#include "softmax.cuh"

namespace {

using course::DType;
using course::Op;
using ch12::Path;

template <typename T>
using Fn = void (*)(const course::Args&, cudaStream_t, Path);

template <typename T, Fn<T> kFn, Path kPath>
void on_path(const course::Args& a, cudaStream_t s) {
  kFn(a, s, kPath);
}

std::string limit_text(int64_t max_cols) {
  return max_cols > 0 ? std::to_string(max_cols) : std::string("the GPU's shared memory");
}

// The shapes on each side of the rows boundary of the cluster path, for rows too long for the
// shared-memory path (just past its limit, with and without 16-byte packs).
std::vector<std::pair<int64_t, int64_t>> rows_boundary(int64_t smem_max) {
  const int64_t r = ch12::cluster_rows_below();
  if (r == 0 || smem_max == 0) return {};
  return {{r - 1, smem_max + 8}, {r, smem_max + 8}, {r + 1, smem_max + 3}};
}

// The backward's cluster size doubles (2, 4, 8, 16 blocks) where a chunk of y and dy stops fitting in
// a block's shared memory (both: the longest row that does): each doubling is checked on both sides,
// with the fewest rows that start the search at that size (rows x size >= SMs), since fewer rows start
// it higher. These are the suite's longest rows (tens of millions of elements), so two columns per
// boundary: the longest row of a size, and one more (scalar packs).
std::vector<std::pair<int64_t, int64_t>> backward_cluster_shapes(int64_t both) {
  if (!ch12::cluster_path_available() || both == 0) return {};
  const int64_t sms = course::sm_count();
  std::vector<std::pair<int64_t, int64_t>> v;
  for (int64_t size : {2, 4, 8}) {
    const int64_t rows = course::ceil_div(sms, size);
    for (int64_t d : {0, 1}) v.push_back({rows, size * both + d});
  }
  return v;
}

// The same around the warp path's rows condition for rows past 1024 columns (16-bit), at the
// first and last columns it covers, plus the cluster boundary's shapes.
std::vector<std::pair<int64_t, int64_t>> shapes_at_boundaries(int64_t smem_max, int64_t warp_max) {
  std::vector<std::pair<int64_t, int64_t>> v = rows_boundary(smem_max);
  const int64_t r = course::long_warp_rows_min();
  if (warp_max > 1024 && r > 0)
    for (int64_t c : {int64_t(1025), warp_max}) {
      v.push_back({r - 1, c});
      v.push_back({r, c});
    }
  return v;
}

// The warp path's half-wave line (two rows per group from warp_two_rows_min rows), forward and
// backward, each checked at -1 and 0 on the production dispatch (the warp path forced runs the
// same launcher). At 32 and 64 columns: the shapes where the line falls near the sweep's rows;
// at 256: the fp32 forward's four packs per lane (warp_min_packs; groups of 16 lanes). The other
// widths' lines come from the same arithmetic; at 1-4 million elements a case, all of them would
// add minutes to the full suite.
template <typename T>
std::vector<std::pair<int64_t, int64_t>> half_wave_boundary() {
  std::vector<std::pair<int64_t, int64_t>> v;
  for (int64_t c : {32, 64, 256})
    for (bool backward : {false, true})
      if (const int64_t r = ch12::warp_two_rows_min<T>(c, backward); r > 1) {
        v.push_back({r - 1, c});
        v.push_back({r, c});
      }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

template <typename T>
std::vector<std::pair<int64_t, int64_t>> with_half_wave(std::vector<std::pair<int64_t, int64_t>> v) {
  for (const auto& s : half_wave_boundary<T>()) v.push_back(s);
  return v;
}

// The block-registers path's boundaries on the production dispatch: its first and last packed
// columns and the packed columns on each side of them, at the rows where it starts (and one row
// fewer at its first columns), and its first columns plus one (not a multiple of the pack: the
// path takes 16-byte packs only). `first` is its first column count, `last` its first column
// count past it (both multiples of the pack).
template <typename T>
std::vector<std::pair<int64_t, int64_t>> block_regs_boundary(int64_t first, int64_t last) {
  const int64_t r = course::long_warp_rows_min(), pack = 16 / sizeof(T);
  if (r == 0) return {};
  return {{r - 1, first}, {r, first - pack}, {r, first}, {r, first + 1}, {r, last - pack}, {r, last}};
}

// Registers `op` on the production dispatch and on each of `paths` forced.
template <typename T, Fn<T> kFn>
void add_paths(course::Chapter& ch, Op op, const course::Limits& production, const course::Limits& warp,
               const course::Limits& block_regs, const course::Limits& smem, const course::Limits& uncached,
               const course::Limits* cluster, const course::Limits* tile = nullptr) {
  constexpr DType t = course::DTypeOf<T>::value;
  ch.add(op, "production", t, on_path<T, kFn, Path::automatic>, production);
  ch.add(op, "warp", t, on_path<T, kFn, Path::warp>, warp);
  if (tile) ch.add(op, "tile", t, on_path<T, kFn, Path::tile>, *tile);
  ch.add(op, "block_regs", t, on_path<T, kFn, Path::block_regs>, block_regs);
  ch.add(op, "smem", t, on_path<T, kFn, Path::smem>, smem);
  ch.add(op, "uncached", t, on_path<T, kFn, Path::uncached>, uncached);
  if (cluster) ch.add(op, "cluster", t, on_path<T, kFn, Path::cluster>, *cluster);
}

template <typename T>
void add_type(course::Chapter& ch) {
  constexpr DType t = course::DTypeOf<T>::value;
  constexpr int64_t kWarpMax = ch12::kWarpMaxCols<T>;
  // Where the warp path changes shape (group width, then columns per lane), each checked +-1.
  std::vector<int64_t> warp_shapes{8, 16, 32, 64, 128, 256, 512};
  for (int64_t c = 1024; c < kWarpMax; c += 512) warp_shapes.push_back(c);
  const course::Limits warp{kWarpMax, warp_shapes,
                            "cols <= " + limit_text(kWarpMax) + "; the row in registers; two rows per group of "
                            "lanes from half a wave of threads"};
  const course::Limits uncached{0, {}, "any cols; a block per row, the row read twice"};
  // Where a thread's packs of the row go from one to two to four (128-1024 threads, 16-byte packs).
  const course::Limits block_regs{16384, {512, 1024, 2048, 4096, 8192},
                                  "cols <= 16384; a block per row, up to 16 elements per thread in registers"};
  course::Limits cluster{0, {}, "any cols; several blocks per row in a cluster"};
  cluster.min_sm = 90;
  // Where the tile path's group shape changes (as the warp path's), each checked +-1.
  constexpr int64_t kTileMax = ch12::kTileMaxCols<T>;
  std::vector<int64_t> tile_shapes;
  for (int64_t c : warp_shapes)
    if (c < kTileMax) tile_shapes.push_back(c);
  course::Limits tile{kTileMax, tile_shapes,
                            "cols <= " + std::to_string(kTileMax) + " (" + std::to_string(ch12::kTileMaxRowBytes) +
                                " bytes); the warp path's groups, the block's rows brought into shared memory by one "
                                "bulk copy; rows not 16-byte aligned: the warp path"};
  tile.min_sm = 90;
  // The backward's tile path holds rows of twice the forward's bytes.
  constexpr int64_t kBwdTileMax = ch12::kBackwardTileMaxCols<T>;
  std::vector<int64_t> bwd_tile_shapes;
  for (int64_t c : warp_shapes)
    if (c < kBwdTileMax) bwd_tile_shapes.push_back(c);
  course::Limits bwd_tile{kBwdTileMax, bwd_tile_shapes,
                                "cols <= " + std::to_string(kBwdTileMax) + " (" +
                                    std::to_string(ch12::kBackwardTileMaxRowBytes) +
                                    " bytes); the warp path's groups, the block's rows of y and dy brought into "
                                    "shared memory by two bulk copies; rows not 16-byte aligned: the warp path"};
  bwd_tile.min_sm = 90;
  auto smem = [](int64_t max_cols, int64_t inner = 0) {
    return course::Limits{max_cols, inner > 0 ? std::vector<int64_t>{inner} : std::vector<int64_t>{},
                          "cols <= " + limit_text(max_cols) + "; the row in shared memory"};
  };
  auto production = [](int64_t smem_max, const std::string& what, int64_t inner = 0) {
    std::vector<int64_t> thresholds{kWarpMax, smem_max};
    if (inner > 0) thresholds.push_back(inner);
    return course::Limits{0,
                          thresholds,
                          std::string("any cols: ") + what + "; warp <= " + limit_text(kWarpMax) +
                              (kWarpMax > 1024 ? " (past 1024: rows >= 32 x SMs)" : "") + " < shared memory <= " +
                              limit_text(smem_max) + " < uncached",
                          with_half_wave<T>(shapes_at_boundaries(smem_max, kWarpMax))};
  };
  const int64_t fwd_smem = ch12::smem_max_cols<T>(Op::softmax);
  const int64_t bwd_smem = ch12::smem_max_cols<T>(Op::softmax_backward);
  const bool clusters = ch12::cluster_path_available();
  const bool tiles = ch12::tile_path_available();

  // Each operation on the production dispatch, then on each path forced.
  auto fwd = production(fwd_smem, "past shared memory, rows < SMs / 2 take the cluster path");
  // Rows of more than 4 KB and under 16 KB take the block-registers path (rows >= 32 x SMs):
  // packed fp32 rows of 1028-4092 columns, 16-bit rows of 2056-8184.
  const int64_t fwd_regs_start = (ch12::kBlockRegsForwardMinBytes + 16) / int64_t(sizeof(T));
  const int64_t fwd_regs_end = ch12::kBlockRegsForwardEndBytes / int64_t(sizeof(T));
  fwd.text += "; with rows >= 32 x SMs: block_regs for packed cols " + std::to_string(fwd_regs_start) + " to " +
              std::to_string(fwd_regs_end - 16 / int64_t(sizeof(T)));
  for (auto s : block_regs_boundary<T>(fwd_regs_start, fwd_regs_end)) fwd.shapes.push_back(s);
  // Packed rows of more than kTileMinRowBytes and up to kTileMaxRowBytes take the tile path (sm_90+).
  const int64_t tile_min = ch12::kTileMinRowBytes / int64_t(sizeof(T));
  fwd.thresholds.push_back(tile_min);
  fwd.thresholds.push_back(kTileMax);
  fwd.text += "; packed cols " + std::to_string(tile_min + 16 / int64_t(sizeof(T))) + " to " +
              std::to_string(kTileMax) + " on sm_90+: tile";
  add_paths<T, ch12::softmax<T>>(ch, Op::softmax, fwd, warp, block_regs, smem(fwd_smem), uncached,
                                 clusters ? &cluster : nullptr, tiles ? &tile : nullptr);
  add_paths<T, ch12::log_softmax<T>>(ch, Op::log_softmax, fwd, warp, block_regs, smem(fwd_smem), uncached,
                                     clusters ? &cluster : nullptr, tiles ? &tile : nullptr);
  ch.add(Op::softmax, "warp_p2", t, ch12::softmax_warp_min_packs<T, 2>,
         course::Limits{kWarpMax, warp_shapes, "cols <= " + limit_text(kWarpMax) + "; short rows: two packs per lane"});
  const int64_t bwd_both = ch12::backward_both_cached_max_cols<T>();
  const int64_t bwd_cluster_max = ch12::backward_cluster_max_cols<T>();
  auto bwd = production(bwd_smem, "", bwd_both);  // the forward's thresholds and rows shapes, and its own text:
  // With rows >= 32 x SMs: block_regs while y and dy are 4 KB or more and under 32 KB.
  const int64_t bwd_regs_start = ch12::kBlockRegsBackwardMinBytes / 2 / int64_t(sizeof(T));
  const int64_t bwd_regs_end = 16 * 1024 / int64_t(sizeof(T));
  for (auto s : block_regs_boundary<T>(bwd_regs_start, bwd_regs_end)) bwd.shapes.push_back(s);
  // Packed rows of more than kBackwardTileMinCols and up to kBackwardTileEndCols columns: tile (sm_90+).
  bwd.thresholds.push_back(ch12::kBackwardTileMinCols);
  bwd.thresholds.push_back(ch12::kBackwardTileEndCols);
  const std::string tile_text = tiles ? " (packed cols " + std::to_string(ch12::kBackwardTileMinCols + 1) + " to " +
                                            std::to_string(ch12::kBackwardTileEndCols) + ": tile)"
                                      : "";
  const std::string regs_text = tile_text + " (with rows >= 32 x SMs: block_regs for packed cols " +
                                std::to_string(bwd_regs_start) + " to " + std::to_string(bwd_regs_end - 1) + ")";
  bwd.text = "any cols: warp <= " + limit_text(kWarpMax) + regs_text +
             " < shared memory, y and dy <= " + limit_text(bwd_both) +
             (clusters ? " < a cluster's shared memory, y and dy <= " + limit_text(bwd_cluster_max)
                       : " < shared memory, y alone <= " + limit_text(bwd_smem)) +
             " < uncached";
  // The cluster's size boundaries need rows of millions of elements: the full suite checks them,
  // the sanitizers' --quick suite runs the same cluster sizes on its shorter shapes (1-64 rows: 16,
  // 8 and 4 blocks; the rows boundary below and the largest cols: 2 and 16 blocks).
  course::Limits bwd_cluster{bwd_cluster_max, {},
                             "cols <= " + limit_text(bwd_cluster_max) + "; y and dy cached across a cluster of up to 16 blocks",
                             {}, backward_cluster_shapes(bwd_both)};
  bwd_cluster.min_sm = 90;
  if (clusters) {
    // Where the rows change the cluster's size (2 or 4 blocks), and where the cluster path ends
    // (3 rows: a cluster of 16 blocks).
    for (auto [r, c] : rows_boundary(bwd_both)) bwd.shapes.push_back({r, c});
    bwd.full_shapes = {{3, bwd_cluster_max}, {3, bwd_cluster_max + 1}};
  }
  add_paths<T, ch12::softmax_backward<T>>(ch, Op::softmax_backward, bwd, warp, block_regs, smem(bwd_smem, bwd_both),
                                          uncached, clusters ? &bwd_cluster : nullptr, tiles ? &bwd_tile : nullptr);
  // Log-softmax's dispatch keeps dy alone in shared memory before it takes a cluster.
  course::Limits bwd_log = bwd;
  bwd_log.text = "any cols: warp <= " + limit_text(kWarpMax) + regs_text +
                 " < shared memory, y and dy <= " + limit_text(bwd_both) + " < shared memory, dy alone <= " +
                 limit_text(bwd_smem) +
                 (clusters ? " < a cluster's shared memory, y and dy <= " + limit_text(bwd_cluster_max) : "") +
                 " < uncached";
  add_paths<T, ch12::log_softmax_backward<T>>(ch, Op::log_softmax_backward, bwd_log, warp, block_regs,
                                              smem(bwd_smem, bwd_both), uncached, clusters ? &bwd_cluster : nullptr,
                                              tiles ? &bwd_tile : nullptr);

  // Scale-and-mask: fused into the load, and as two kernels.
  const int64_t mask_smem = ch12::smem_max_cols<T>(Op::scale_mask_softmax);
  ch.add(Op::scale_mask_softmax, "fused", t, on_path<T, ch12::scale_mask_softmax<T>, Path::automatic>,
         production(mask_smem, "the fp32 logits cached; past shared memory, rows < SMs / 2: cluster"));
  ch.add(Op::scale_mask_softmax, "unfused", t, ch12::scale_mask_softmax_unfused<T>,
         course::Limits{0, {}, "any cols; two kernels through an fp32 workspace"}, ch12::unfused_workspace);
}

// --paths FILE: the dispatch's choice for every shape of the sweeps, per op and dtype.
template <typename T>
void write_paths(std::FILE* f, const course::Chapter& ch, bool* first) {
  for (Op op : {Op::softmax, Op::log_softmax, Op::scale_mask_softmax, Op::softmax_backward, Op::log_softmax_backward})
    for (const course::Sweep& s : ch.sweeps())
      for (int64_t r : s.rows)
        for (int64_t c : s.cols) {
          const Path p = ch12::chosen_path<T>(op, r, c);
          const int block = p == Path::block_regs ? ch12::block_regs_threads<T>(op, c) : 0;
          std::fprintf(f,
                       "%s  {\"op\": \"%s\", \"dtype\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"path\": \"%s\"%s%s}",
                       *first ? "" : ",\n", course::op_name(op), course::dtype_name(course::DTypeOf<T>::value),
                       (long long)r, (long long)c, ch12::path_name(p), block ? ", \"block\": " : "",
                       block ? std::to_string(block).c_str() : "");
          *first = false;
        }
}

int write_paths_file(const course::Chapter& ch, const char* path) {
  course::DeviceInfo dev;
  std::string why;
  if (!course::probe_device(&dev, &why)) {
    std::printf("SKIPPED: no usable CUDA GPU (%s)\n", why.c_str());
    return 77;
  }
  std::FILE* f = std::fopen(path, "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  std::fprintf(f, "{\"gpu_name\": \"%s\", \"sm_count\": %d, \"smem_per_block_optin\": %lld, \"clusters\": %s,\n",
               dev.name.c_str(), dev.sm_count, (long long)course::smem_per_block_optin(),
               ch12::cluster_path_available() ? "true" : "false");
  std::fprintf(f,
               " \"cluster_rows_below\": %lld, \"long_warp_rows_min\": %lld,\n"
               " \"warp_max_cols\": {\"f32\": %lld, \"f16\": %lld, \"bf16\": %lld},\n"
               " \"paths\": [\n",
               (long long)ch12::cluster_rows_below(), (long long)course::long_warp_rows_min(),
               (long long)ch12::kWarpMaxCols<float>,
               (long long)ch12::kWarpMaxCols<__half>, (long long)ch12::kWarpMaxCols<__nv_bfloat16>);
  bool first = true;
  write_paths<float>(f, ch, &first);
  write_paths<__half>(f, ch, &first);
  write_paths<__nv_bfloat16>(f, ch, &first);
  std::fprintf(f, "\n]}\n");
  std::fclose(f);
  std::printf("wrote %s\n", path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  course::Chapter ch("12_production_softmax",
                     "The production softmax: one dispatch over warp, tile, block-registers, shared-memory, uncached "
                     "and cluster paths");
  add_type<float>(ch);
  add_type<__half>(ch);
  add_type<__nv_bfloat16>(ch);
  ch.add_sweep(course::long_row_sweep());
  ch.add_sweep({{16}, {131072, 1048576, 4194304}});  // very few rows: where several blocks share a row
  if (argc >= 2 && std::strcmp(argv[1], "--paths") == 0) {
    if (argc != 3) {
      std::fprintf(stderr, "usage: %s --paths FILE.json\n", argv[0]);
      return 2;
    }
    try {
      return write_paths_file(ch, argv[2]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s --paths: %s\n", argv[0], e.what());
      return 1;
    }
  }
  return ch.run(argc, argv);
}
