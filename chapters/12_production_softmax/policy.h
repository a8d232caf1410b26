/// @file policy.h
/// @brief The production softmax's policy: which path takes a shape, and the tuned numbers of each
/// path's launch. Host-only C++ (no CUDA), written once for chapters 12-14: the dispatch
/// (dispatch.cuh here, 13_hopper_softmax/ and 14_softmax_backward/), `--paths` (chapter 14), the
/// suite's boundary shapes (limits.h) and tests/unit/test_softmax_policy.cpp all call these
/// functions. Each tuned value is a named constant with one line: what it decides, and the figure
/// that set it, measured on the H100 (132 SMs, 227 KB of opt-in shared memory per block, 2048
/// threads per SM; the rules marked H200: an H200, the same SMs and shared memory); the
/// TUNING.md of the chapter whose path it tunes has the measurement's date and how to repeat it.
/// Values that follow from the GPU are functions of `Device`.
#pragma once

#include <cstdint>

#include "harness/launch_math.h"

namespace ch12 {

/// The six ways a row is processed (paths_*.cuh here, chapter 13's tile and cluster paths).
/// `automatic` lets the dispatch choose.
enum class Path { automatic, warp, block_regs, smem, uncached, cluster, tile };

/// "warp", "block_regs", "smem", "uncached", "cluster", "tile" or "automatic".
constexpr const char* path_name(Path p) {
  switch (p) {
    case Path::warp: return "warp";
    case Path::block_regs: return "block_regs";
    case Path::smem: return "smem";
    case Path::uncached: return "uncached";
    case Path::cluster: return "cluster";
    case Path::tile: return "tile";
    default: return "automatic";
  }
}

namespace policy {

/// What the rules know of a GPU. Device{} (every field 0) stands for no GPU.
struct Device {
  int64_t smem_optin = 0;  // bytes of shared memory a block may opt into
  int sm_count = 0;        // multiprocessors
  int threads_per_sm = 0;  // threads one multiprocessor holds at once
  bool clusters = false;   // thread-block clusters launchable (sm_90 and this build's code)
  bool bulk_copy = false;  // the bulk copy (cp.async.bulk) on this GPU in this build
  double dram_gbps = 0;    // peak DRAM bandwidth, GB/s (0: not known; in_flight_target keeps the H100's)
};

/// The device as a dispatch without chapter 13's paths sees it: no bulk copy, no clusters.
constexpr Device without_hopper_paths(Device d) {
  d.clusters = d.bulk_copy = false;
  return d;
}

/// The operations, as the rules tell them apart.
enum class Op {
  softmax,               // softmax and log-softmax read x as stored: every path
  log_softmax,
  scale_mask_softmax,    // the fused scale-and-mask: cached as fp32, no block_regs, no tile
  unfused_logits,        // the unfused comparison's softmax of its fp32 logits: no block_regs
  softmax_backward,      // y and dy read, dx written
  log_softmax_backward,
};
constexpr bool is_backward(Op op) { return op == Op::softmax_backward || op == Op::log_softmax_backward; }

// ---- The warp path: a group of lanes per row, the row in registers (paths_warp.cuh) ----
/// [warp_policy]
/// Threads per block of the warp kernels: 64 and 256 no faster at 32-512 columns, nor 32 and 64 at 256-2048.
constexpr int kWarpPathBlock = 128;
/// Columns per lane, fp32: rows of up to 1024 columns held as fp32 (each element converted once).
constexpr int kWarpColsPerLaneF32 = 32;
/// Columns per lane, 16-bit: rows to 3072 held as loaded past 32 per lane (3072: 72 registers, not 255).
constexpr int kWarpColsPerLane16Bit = 96;
/// Past this many columns the warp path needs kLongRowsPerSm rows per SM (else a block per row).
constexpr int64_t kWarpAnyRowsMaxCols = 1024;
/// Rows per SM that count as many (32: the warps an SM holds of the warp kernel at 16-bit 1025-3072).
constexpr int kLongRowsPerSm = 32;
/// Rows a group of lanes takes at most: four lost at 16-bit rows of 32 columns and on the backward.
constexpr int kMaxRowsPerGroup = 2;
/// Two rows per group only while the grid keeps 1/kHalfWave of a wave (16-bit 32 columns: +10-12%).
constexpr int kHalfWave = 2;
/// fp32 forward, packs per lane: one to 32 columns (two lost 9% at 32), two to 128 (+2.5-3.9% at 64-128),
constexpr int64_t kWarpOnePackMaxCols = 32, kWarpTwoPacksMaxCols = 128;
/// four to 256 (+0.9-2% at 256), one past it; 16-bit rows and the backward: one (mixed, or slower).
constexpr int64_t kWarpFourPacksMaxCols = 256;
/// [warp_policy]

// ---- The block-registers path: a block per row, the row in registers (paths_block_regs.cuh) ----
/// [block_regs_policy]
/// Threads of a block-registers block at most, and elements per thread: rows of up to 16384 columns.
constexpr int kBlockRegsMaxBlock = 1024, kBlockRegsMaxElems = 16;
constexpr int64_t kBlockRegsMaxCols = int64_t(kBlockRegsMaxBlock) * kBlockRegsMaxElems;
/// Forward fp32 rows of more than this many bytes of x take it (+0.2-2.0% at 1280-3584 columns),
constexpr int64_t kBlockRegsForwardMinBytes = 4 * 1024;
/// and 16-bit rows up to this many (H200: 8192 columns 99% of the matched copy, shared memory 91%;
/// 10000 columns, two packs a thread in blocks of 768, 72% against 91%); fp32 rows to the path's limit
/// (H200: 5000 columns 97.5% against 90.7%, 6144-16384 within 1.1%; H100: level, 4096-16384).
constexpr int64_t kBlockRegsForward16BitMaxBytes = 16 * 1024;
/// Backward rows whose y and dy hold this many bytes or more (fp32 512 columns: +0.4-0.8% over warp),
constexpr int64_t kBlockRegsBackwardMinBytes = 4 * 1024;
/// and under this many in 16-bit (H100: 0.0% to +1.5% at 1280-6144 columns; 8192-10000 not measured);
constexpr int64_t kBlockRegsBackwardEndBytes = 32 * 1024;
/// fp32 rows to the path's limit, packed or peeled (H200 at 49152 rows: 5000-16383 columns 93-104% of
/// the matched copy against 73-93% in shared memory; H100: level with it, within 1%, at 6144-16384).
/// One pack past 16384 columns, so that the strict test below admits 16384.
constexpr int64_t kBlockRegsBackwardF32EndBytes = 2 * 4 * (kBlockRegsMaxCols + 4);
/// Bytes in flight per SM the block size aims at on the H100, forward (best of 40-64 KB; 32 KB: -5%
/// at 2048),
constexpr int64_t kBlockRegsForwardInFlight = 48 * 1024;
/// and backward (48 KB: up to 7% slower).
constexpr int64_t kBlockRegsBackwardInFlight = 64 * 1024;
/// Rows resident per SM the block size keeps where it can: 3 (H200, 2 rows of 48-64 KB at 768 threads,
/// fp32 6144-8192 columns: 85-94% of the matched copy; 3-4 rows at 512 threads: 97%).
constexpr int kBlockRegsMinRowsPerSm = 3;
/// A byte short of the target weighs this many bytes past it (H200: fp32 3072 columns, 60 KB at 384
/// threads 100.5% against 96 KB at 256 98.3%; 1536 columns, 48 KB at 256 96.7% against 96 KB at 128 98.4%).
constexpr double kBlockRegsShortfallWeight = 1.5;
/// The H100's peak DRAM bandwidth per SM, GB/s (2 x 2619 MHz x 5120 bits over 132 SMs): where
/// both targets were measured.
constexpr double kInFlightReferenceGBpsPerSm = 2 * 2.619 * 640 / 132;
/// The target on `d`: the H100's figure `at_reference` scaled by d's DRAM bandwidth per SM, the
/// same round trip at more bytes a nanosecond (Little's law). The H200's 4814 GB/s: 1.44 times
/// (fp32 rows of 1025-3000 columns 72-91% of the copy at the H100's 48 KB, 97-99% scaled).
constexpr int64_t in_flight_target(const Device& d, int64_t at_reference) {
  if (d.dram_gbps <= 0 || d.sm_count <= 0) return at_reference;
  return int64_t(double(at_reference) * (d.dram_gbps / d.sm_count) / kInFlightReferenceGBpsPerSm + 0.5);
}
/// Peeled rows (blocks/peel.h) take it from more than 4 KB up to this many bytes of each tensor's row
/// (16-bit forward at 8191 columns: 83% of the copy, shared memory 94%; at 4095: 98 against 92;
/// 16-bit backward at 1025, 4 KB of y and dy together: 86%, warp 98%).
constexpr int64_t kBlockRegsPeeledMaxBytes = 8 * 1024;
/// The forward's peeled fp32 rows to this many columns (H200: 8191-12287 columns 93-97% against
/// 86-93% in shared memory; 16383, which only blocks of 1024 hold, one an SM: 77% against 97%).
constexpr int64_t kBlockRegsForwardF32PeeledMaxCols = 12288;
/// [block_regs_policy]

// ---- The shared-memory path: a block per row, the row in shared memory (paths_smem.cuh) ----
/// [smem_policy]
/// Bytes of a block's shared memory kept for the kernels' static shared memory (reductions, mbarrier).
constexpr int64_t kSmemReservedBytes = 1024;
/// Packs per thread at least, fp32 and the backward: two (up to +0.8% forward, +1.3% backward, over four).
constexpr int kSmemMinPacksF32 = 2, kBackwardSmemMinPacks = 2;
/// Packs per thread at least, 16-bit forward: four (two lost 5-18% at 4096-12288 columns).
constexpr int kSmemMinPacks16Bit = 4;
/// 16-bit rows of at most this many packs keep the narrow cache (fp16 1536 columns: +13% over fp32).
constexpr int64_t kSmemNarrowCacheMaxPacks = 2 * 128;
/// [smem_policy]

// ---- Chapter 13's tile path: the warp path's groups, rows brought in by a bulk copy ----
/// [tile_policy]
/// Forward rows of more than this many bytes (16-bit rows of 32 columns, 64 bytes: 5-8% slower),
constexpr int64_t kTileMinRowBytes = 64;
/// and at most this many (+2.8-3.2% at 32 fp32 columns; -1.1% to +1.4% past 256 bytes), packed.
constexpr int64_t kTileMaxRowBytes = 256;
/// Bytes of rows a tile holds at most (fp32 32 columns: +4-6% with 8 KB tiles, +3-4% with 4 KB).
constexpr int kTileBytes = 8 * 1024;
/// Backward rows of more than this many columns (16 or fewer: level to 6.3% slower),
constexpr int64_t kBackwardTileMinCols = 16;
/// and at most this many (fp32 20-128: +0.2-12.5%; 16-bit 144: 3.4-4.3% slower), packed.
constexpr int64_t kBackwardTileEndCols = 128;
/// The backward's tile path forced holds rows of up to this many bytes of each of y and dy (128 fp32 columns).
constexpr int64_t kBackwardTileMaxRowBytes = 512;
/// [tile_policy]

// ---- Chapter 13's cluster path: several blocks per row in a thread-block cluster ----
/// [cluster_policy]
/// Rows under SMs / this take the cluster path past shared memory (at 128 rows a block per row won).
constexpr int kClusterRowsDivisor = 2;
/// Rows under SMs / this are very few (1-15 on 132 SMs): rows of kClusterFewRowsMinBytes or more of each
/// tensor take a cluster even where a block's shared memory holds them (H200: 1 and 8 rows won, 32 and 64
/// lost; 9-31 not timed),
constexpr int kClusterFewRowsDivisor = 8;
/// from 64 KB (H200, 1 and 8 rows, streamed: 64 KB fp32 level to +5%, 16-bit +20% to +33%; 32 KB lost 6-19%).
constexpr int64_t kClusterFewRowsMinBytes = 64 * 1024;
/// Blocks of a cluster at most: the largest (non-portable) cluster size of sm_90.
constexpr int kMaxClusterBlocks = 16;
/// The backward's cluster of csize blocks streams its rows (chapter 13's cluster_stream.cuh) from this many
/// x SMs / csize rows (8 rows a cluster if each SM held one block; H200, 2048 rows: fp32 +13% to +21%,
/// 16-bit +10% to +16%; at 8-128 rows it lost 5-18%),
constexpr int kStreamRowsPerCluster = 8;
/// in clusters of at most this many blocks (2048 x 262144 fp32, 16 blocks: -4.5%; 8: 16-bit +10%).
constexpr int kStreamMaxClusterBlocks = 8;
/// A block of the forward cluster kernel: 1024 threads from this many packs per block (as first set;
/// 512 or 256 where only they put every cluster on the GPU at once, 13_hopper_softmax/paths_cluster.cuh),
constexpr int64_t kClusterBlock1024MinPacks = 4096;
/// 256 threads from this many, else 128 (as first set; not re-measured).
constexpr int64_t kClusterBlock256MinPacks = 512;
/// Packs per thread at least on the backward cluster's block size (chapter 06's floor).
constexpr int kBackwardClusterMinPacks = 4;
/// [cluster_policy]

// ---- What follows from the device ----

/// Columns a lane of the warp path holds, for elements of `elem_bytes` bytes.
constexpr int warp_cols_per_lane(int elem_bytes) {
  return elem_bytes == 2 ? kWarpColsPerLane16Bit : kWarpColsPerLaneF32;
}
/// The warp path's longest row: 1024 fp32 columns, 3072 16-bit ones.
constexpr int64_t warp_max_cols(int elem_bytes) { return 32 * int64_t(warp_cols_per_lane(elem_bytes)); }
/// Whether the block-registers path takes a peeled row of `cols` (not whole packs) where it fits:
/// more than 4 KB and at most kBlockRegsPeeledMaxBytes of each tensor's row.
constexpr bool block_regs_peeled_fits(int64_t cols, int elem_bytes) {
  return cols * elem_bytes > kBlockRegsForwardMinBytes && cols * elem_bytes <= kBlockRegsPeeledMaxBytes;
}
/// The bytes of x past which a forward row takes it, packed or peeled: 4 KB in fp32; in 16-bit the
/// warp path's longest row, 3072 columns (H200, packed 3072: warp 96.7-97.3% of the matched copy,
/// block_regs 87.5-94.8%, H100 0.6-1.0% the other way; peeled 2049-3071: warp 95-98%, block_regs
/// 59-90%, its peeled kernel at 42 registers).
constexpr int64_t block_regs_forward_min_bytes(int elem_bytes) {
  return elem_bytes == 4 ? kBlockRegsForwardMinBytes : warp_max_cols(elem_bytes) * elem_bytes;
}
/// The forward's peeled rows: past that, fp32 to kBlockRegsForwardF32PeeledMaxCols, 16-bit as
/// block_regs_peeled_fits (to 8 KB).
constexpr bool block_regs_forward_peeled_fits(int64_t cols, int elem_bytes) {
  return cols * elem_bytes > block_regs_forward_min_bytes(elem_bytes) &&
         (elem_bytes == 4 ? cols <= kBlockRegsForwardF32PeeledMaxCols : block_regs_peeled_fits(cols, elem_bytes));
}

/// Rows from which the warp path takes rows past kWarpAnyRowsMaxCols, and block_regs any: 32 x SMs.
constexpr int64_t long_rows_min(const Device& d) { return int64_t(kLongRowsPerSm) * d.sm_count; }

/// Half a wave: half the threads the SMs hold at once (132 x 2048 / 2 on the H100).
constexpr int64_t half_wave_threads(const Device& d) { return int64_t(d.sm_count) * d.threads_per_sm / kHalfWave; }

/// Whether groups of `width` lanes taking `rows_per_group` rows each give the grid half a wave.
constexpr bool half_wave(const Device& d, int64_t rows, int width, int rows_per_group) {
  return course::ceil_div(rows, rows_per_group) * width >= half_wave_threads(d);
}

/// Packs per lane at least that the forward's warp path gives a row of `cols` in packs of `pack`.
constexpr int warp_min_packs(int pack, int64_t cols) {
  if (pack != 4 || cols <= kWarpOnePackMaxCols || cols > kWarpFourPacksMaxCols) return 1;
  return cols <= kWarpTwoPacksMaxCols ? 2 : 4;
}

/// The longest row of which `copies` copies of `elem_bytes`-byte elements fit in a block's shared
/// memory, in whole 16-byte pieces, kSmemReservedBytes kept (0 without a GPU).
constexpr int64_t cols_in_smem(const Device& d, int elem_bytes, int copies) {
  return d.smem_optin > kSmemReservedBytes ? (d.smem_optin - kSmemReservedBytes) / copies / 16 * 16 / elem_bytes : 0;
}

/// Packs per thread at least for the forward shared-memory kernel's block size.
constexpr int smem_min_packs(int pack) { return pack >= 8 ? kSmemMinPacks16Bit : kSmemMinPacksF32; }

/// The forward's longest packed row on the block-registers path, in bytes of x: 16 KB of 16-bit
/// elements, the path's limit in fp32.
constexpr int64_t block_regs_forward_max_bytes(int elem_bytes) {
  return elem_bytes == 4 ? 4 * kBlockRegsMaxCols : kBlockRegsForward16BitMaxBytes;
}
/// Whether the forward takes the block-registers path for a packed row of `row_bytes` (with rows enough).
constexpr bool block_regs_forward_fits(int64_t row_bytes, int elem_bytes) {
  return row_bytes > block_regs_forward_min_bytes(elem_bytes) && row_bytes <= block_regs_forward_max_bytes(elem_bytes);
}
/// The first bytes of y and dy together past the backward's rows on the path (peeled rows also
/// need block_regs_backward_peeled_fits).
constexpr int64_t block_regs_backward_end_bytes(int elem_bytes) {
  return elem_bytes == 4 ? kBlockRegsBackwardF32EndBytes : kBlockRegsBackwardEndBytes;
}
/// Whether the backward does, for y and dy of `bytes` together.
constexpr bool block_regs_backward_fits(int64_t bytes, int elem_bytes) {
  return bytes >= kBlockRegsBackwardMinBytes && bytes < block_regs_backward_end_bytes(elem_bytes);
}
/// Whether the backward takes it for a peeled row: as the forward (block_regs_peeled_fits: more
/// than 4 KB of each tensor, so fp32 from 1025 columns; shorter peeled rows stay on the warp path),
/// fp32 to the path's limit.
constexpr bool block_regs_backward_peeled_fits(int64_t cols, int elem_bytes) {
  return elem_bytes == 4 ? cols * elem_bytes > kBlockRegsForwardMinBytes && cols <= kBlockRegsMaxCols
                         : block_regs_peeled_fits(cols, elem_bytes);
}

/// Whether the forward takes the tile path for a packed row of `row_bytes` (where warp would).
constexpr bool tile_fits(int64_t row_bytes) { return row_bytes > kTileMinRowBytes && row_bytes <= kTileMaxRowBytes; }
/// Whether the backward does, for a packed row of `cols` columns, in every dtype.
constexpr bool backward_tile_fits(int64_t cols) { return cols > kBackwardTileMinCols && cols <= kBackwardTileEndCols; }

/// Fewer rows than this take the cluster path for rows too long for shared memory (0 without clusters).
constexpr int64_t cluster_rows_below(const Device& d) { return d.clusters ? d.sm_count / kClusterRowsDivisor : 0; }
/// Fewer rows than this are very few (0 without clusters).
constexpr int64_t few_rows_below(const Device& d) { return d.clusters ? d.sm_count / kClusterFewRowsDivisor : 0; }

/// Whether `rows` rows of `row_bytes` of each tensor are so few and so long that a cluster per row
/// beats a block per row that holds the row in shared memory.
constexpr bool few_long_rows(const Device& d, int64_t rows, int64_t row_bytes) {
  return rows < few_rows_below(d) && row_bytes >= kClusterFewRowsMinBytes;
}

/// The smallest cluster (a power of two, 2 to kMaxClusterBlocks) that gives each SM a block.
constexpr int cluster_start_size(const Device& d, int64_t rows) {
  int csize = 2;
  while (csize < kMaxClusterBlocks && rows * csize < d.sm_count) csize *= 2;
  return csize;
}

/// [cluster_size]
/// The cluster that caches a row of `cols`: from cluster_start_size, the first whose blocks' chunks
/// of `copies` tensors of `cache_bytes`-byte elements (whole packs of `pack`: the row's packs shared
/// out) fit in a block's shared memory; 0 when none does or the GPU has no clusters.
constexpr int cluster_size(const Device& d, int64_t rows, int64_t cols, int pack, int cache_bytes, int copies) {
  if (!d.clusters) return 0;
  for (int csize = cluster_start_size(d, rows); csize <= kMaxClusterBlocks; csize *= 2)
    if (course::ceil_div(cols / pack, csize) * pack <= cols_in_smem(d, cache_bytes, copies)) return csize;
  return 0;
}
/// [cluster_size]

/// [stream_rule]
/// Whether the forward's cluster streams (the bulk copy brings each block's chunk): where rule 3
/// took it, very few rows that one block's shared memory would hold: the configuration measured there
/// (H200, the dispatch at 1 and 8 rows of fp32 32000 and of 50257 columns against the block per row
/// before it: +8% to +68%; against the generic cluster kernel, timed in another session: level
/// within the runs' noise). Past shared memory at 8 rows it measured -5% to +10% against the generic
/// kernel. The second function is chapter 14's.
constexpr bool forward_cluster_streams(const Device& d, int64_t rows, int64_t cols, int elem_bytes) {
  return few_long_rows(d, rows, cols * elem_bytes) && cols <= cols_in_smem(d, elem_bytes, 1);
}
/// Whether the backward's cluster of `csize` blocks streams: rows enough for kStreamRowsPerCluster
/// a cluster, in clusters of at most kStreamMaxClusterBlocks; and every peeled row (the generic
/// kernel reads those an element at a time: 50257 columns at 1-8 rows, +35% to +60%).
constexpr bool backward_cluster_streams(const Device& d, int64_t rows, int csize, bool peeled) {
  return peeled || (csize <= kStreamMaxClusterBlocks && rows >= int64_t(kStreamRowsPerCluster) * d.sm_count / csize);
}
/// [stream_rule]

/// The backward's cluster size: its chunks of y and dy both cached (0: none fits).
constexpr int backward_cluster_size(const Device& d, int64_t rows, int64_t cols, int elem_bytes) {
  return cluster_size(d, rows, cols, 16 / elem_bytes, elem_bytes, 2);
}
/// The backward cluster path's longest row: kMaxClusterBlocks blocks, each caching its chunk of y and dy.
constexpr int64_t backward_cluster_max_cols(const Device& d, int elem_bytes) {
  return kMaxClusterBlocks * cols_in_smem(d, elem_bytes, 2);
}

// ---- The rules ----

/// [forward_rule]
/// The forward path of rows x cols of `elem_bytes`-byte elements; `packed`: 16-byte packs apply
/// (cols a multiple of 16 bytes, every pointer aligned); `peeled`: the rows are not whole packs,
/// but every tensor lies the same number of elements past a pack boundary, so the peel (blocks/peel.h)
/// reads them in packs: the block-registers path takes them as rule 1 says;
/// the tile path, whose bulk copies move whole rows, does not. In order:
///  1. past the warp path's 3072 columns and up to 16 KB of x in 16-bit (peeled: to 8 KB), more
///     than 4 KB to the path's limit in fp32 (peeled: to 12288 columns), rows enough: block_regs
///     (softmax and log-softmax);
///  2. the row in a warp's registers (past 1024 columns, rows enough): tile for packed rows of
///     65-256 bytes with the bulk copy (a plain load), else warp;
///  3. the row (as cached) in a block's shared memory: smem; with clusters, very few rows of 64 KB
///     and more (few_long_rows) read as stored (not the fused scale-and-mask): cluster;
///  4. with clusters, fewer rows than SMs / 2: cluster;
///  5. uncached.
constexpr Path forward_path(const Device& d, Op op, int64_t rows, int64_t cols, int elem_bytes, bool packed,
                            bool peeled = false) {
  const bool plain = op == Op::softmax || op == Op::log_softmax;
  const int cache_bytes = op == Op::scale_mask_softmax ? 4 : elem_bytes;
  const bool many_rows = rows >= long_rows_min(d);
  const bool regs = packed || (peeled && block_regs_forward_peeled_fits(cols, elem_bytes));
  if (plain && regs && block_regs_forward_fits(cols * elem_bytes, elem_bytes) && many_rows) return Path::block_regs;
  if (cols <= warp_max_cols(elem_bytes) && (cols <= kWarpAnyRowsMaxCols || many_rows))
    return op != Op::scale_mask_softmax && packed && tile_fits(cols * elem_bytes) && d.bulk_copy ? Path::tile
                                                                                                  : Path::warp;
  if (cols <= cols_in_smem(d, cache_bytes, 1))
    return op != Op::scale_mask_softmax && few_long_rows(d, rows, cols * elem_bytes) ? Path::cluster : Path::smem;
  if (rows < cluster_rows_below(d)) return Path::cluster;
  return Path::uncached;
}
/// [forward_rule]

/// [backward_rule]
/// The backward path, with rows enough: block_regs for fp32 rows of 512-16384 columns (peeled:
/// 1025-16383) and 16-bit packed rows of 4 KB to under 32 KB of y and dy (peeled: more than 4 KB
/// up to 8 KB of each); then warp while
/// the rows fit in registers (tile for packed rows of 17-128 columns with the bulk copy); very few
/// rows of 64 KB of each of y and dy and more (few_long_rows) that a cluster's blocks hold:
/// cluster; smem while y and dy both fit in a block's shared memory; log-softmax: smem with dy alone while it fits (its
/// sum needs dy only); a cluster whose blocks hold both; smem with y alone; uncached. Peeled rows
/// never take the tile path.
constexpr Path backward_path(const Device& d, Op op, int64_t rows, int64_t cols, int elem_bytes, bool packed,
                             bool peeled = false) {
  const bool many_rows = rows >= long_rows_min(d);
  const bool regs = packed || (peeled && block_regs_backward_peeled_fits(cols, elem_bytes));
  if (regs && many_rows && block_regs_backward_fits(2 * cols * elem_bytes, elem_bytes)) return Path::block_regs;
  if (cols <= warp_max_cols(elem_bytes) && (cols <= kWarpAnyRowsMaxCols || many_rows))
    return packed && backward_tile_fits(cols) && d.bulk_copy ? Path::tile : Path::warp;
  const bool cluster = backward_cluster_size(d, rows, cols, elem_bytes) > 0;
  if (cluster && few_long_rows(d, rows, cols * elem_bytes)) return Path::cluster;
  if (cols <= cols_in_smem(d, elem_bytes, 2)) return Path::smem;
  if (op == Op::log_softmax_backward && cols <= cols_in_smem(d, elem_bytes, 1)) return Path::smem;
  if (cluster) return Path::cluster;
  if (cols <= cols_in_smem(d, elem_bytes, 1)) return Path::smem;
  return Path::uncached;
}
/// [backward_rule]

/// Either rule, as `op` says.
constexpr Path path_for(const Device& d, Op op, int64_t rows, int64_t cols, int elem_bytes, bool packed) {
  return is_backward(op) ? backward_path(d, op, rows, cols, elem_bytes, packed)
                         : forward_path(d, op, rows, cols, elem_bytes, packed);
}

}  // namespace policy
}  // namespace ch12
