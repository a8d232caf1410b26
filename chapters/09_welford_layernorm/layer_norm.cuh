/// @file layer_norm.cuh
/// @brief Chapter 09: LayerNorm forward, y = (x - mean) * rstd * gamma + beta over each row, with
/// the per-row mean and rstd, the statistics by Welford (welford.cuh). Three paths chosen by cols,
/// as in softmax: a group of lanes per row with the row in registers (it holds up to 1024 fp32 or
/// 3072 f16/bf16 columns, and the dispatch uses all of it), a block per row with the row
/// cached in shared memory, and a block per row that reads the row twice from global memory when it
/// does not fit on chip. TUNING.md records the measurements behind each constant. The block
/// kernels are in layer_norm_block.cuh, the one-pack normalization both paths share in
/// layer_norm_pack.cuh.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "blocks/occupancy.cuh"
#include "blocks/pack.cuh"
#include "blocks/peel.h"
#include "blocks/warp.cuh"
#include "blocks/warp_dispatch.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"
#include "affine_shift.cuh"
#include "layer_norm_block.cuh"
#include "layer_norm_pack.cuh"
#include "welford.cuh"

namespace ch09 {

using course::Pack;
using course::Welford;

constexpr int kWarpBlock = 128;  // H100: 64 or 32 threads -1.1% to +0.0% at 256-2048 columns (TUNING.md)
// The warp path's capacity: 32 columns per lane for fp32 (rows of 1024). A lane holds its packs as
// loaded, in the storage type, and converts them once for the statistics and once to normalize,
// so 16-bit rows cost half the registers: 96 columns per lane (rows of 3072), as in chapter 12.
// H100: the 16-bit warp path reads more than the block path at 1536-3072 columns (TUNING.md).
template <typename T>
constexpr int kWarpColsPerLane = sizeof(T) == 2 ? 96 : 32;
template <typename T>
constexpr int64_t kWarpMaxCols = 32 * kWarpColsPerLane<T>;
// Short rows in the warp path: at least two packs per lane, in narrower groups. A Welford merge
// step moves three numbers, so fewer steps per row pay more than in softmax.
// H100: +10-20% at 32-128 fp32 columns against one pack per lane; four no better (TUNING.md).
constexpr int kMinPacksPerLane = 2;
// Where the dispatch leaves the warp path: rows stay in registers up to the path's capacity,
// past 1024 columns (16-bit) only when there are rows enough for 32 warps per SM
// (course::long_warp_rows_min; fewer rows: a block per row spreads each over more threads).
// H200: fp32 at 640-1024 columns, 49152 rows, the warp path in 13-34% less time than the block path (TUNING.md).
template <typename T>
constexpr int64_t kWarpUpTo = kWarpMaxCols<T>;
// Peeled fp32 rows past 512 columns take it only with that many rows too: their gamma and beta
// load in the write pass, one element at a time, and with few rows the path waits on them.
// H200: 1024 rows of 1023 fp32 columns 12.6 us on the warp path, 8.6 on the block path (TUNING.md).
template <typename T>
int64_t warp_any_rows_cols(const course::Args& a) {
  return sizeof(T) == 4 && a.cols % 4 != 0 ? 512 : 1024;
}

/// [affine_early]
// The warp kernel loads its lanes' packs of gamma and beta before the group merge, where groups
// are 8 lanes or wider. Loaded in the write pass, their round trip to L1 or L2 came after the
// merge's chain of shuffles; loaded before it, the two overlap. In narrower groups (fp32 rows of
// 32 columns, 16-bit of 32 and 64) the merge is one or two steps, there is little to overlap,
// and the registers cost more than it saves: they load in the write pass.
// H100: +2-9% at 64-512 fp32 and 128-512 16-bit columns, up to -5% in 4-lane groups (TUNING.md).
template <int kWidth>
constexpr bool kAffineEarly = kWidth >= 8;
/// [affine_early]

/// [warp_kernel]
// A group of kWidth lanes per row (kRows rows at a time), each lane holding kColsPerThread
// columns in registers, as loaded (the storage type): every load made first, then Welford per
// lane, the lane's packs of gamma and beta (kAffineEarly), a group merge, and normalize from
// registers. x is read once and y written once.
// kPeel (blocks/peel.h): rows that are not whole numbers of packs, each read in packs from its
// first boundary, its head and tail (edges) one element per lane, kEdges slots a lane; gamma and
// beta then load in the write pass (load_pack_anywhere: their packs depend on each row's head),
// or with kShifted from the row head's entry of `table`, aligned (affine_shift.cuh).
template <typename T, int kPack, int kColsPerThread, int kWidth, int kRows, bool kPeel = false, bool kShifted = false>
__global__ void __launch_bounds__(kWarpBlock)
    layer_norm_warp_kernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                           T* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd, int64_t rows,
                           int64_t cols, float eps, int phase = 0, const T* __restrict__ table = nullptr,
                           AffineShift<kPack> shift = {0}) {
  using Convert = course::ScalarConvert<T>;
  constexpr int kPacks = kColsPerThread / kPack;
  const int lane = threadIdx.x % kWidth;
  const unsigned mask = course::group_mask<kWidth>();
  const int64_t group = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWidth;
  const int64_t row_step = int64_t(gridDim.x) * blockDim.x / kWidth * kRows;
  auto col_of = [&](int p) { return (int64_t(p) * kWidth + lane) * kPack; };

  constexpr bool kEarly = kAffineEarly<kWidth> && !kPeel;
  constexpr int kEdges = kPeel ? (2 * kPack - 2 + kWidth - 1) / kWidth : 0;  // edge slots per lane
  Pack<T, kPack> held[kRows][kPacks];
  for (int64_t row0 = group * kRows; row0 < rows; row0 += row_step) {
    course::RowPeel pl[kRows];
    float edge[kRows][kEdges > 0 ? kEdges : 1];
    if constexpr (kPeel) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        pl[r] = row0 + r < rows ? course::RowPeel::of<kPack>(phase, row0 + r, cols) : course::RowPeel{0, 0, 0, 0};
#pragma unroll
        for (int p = 0; p < kPacks; ++p)
          if (p * kWidth + lane < pl[r].packs)
            held[r][p] = course::load_pack<T, kPack>(x + (row0 + r) * cols + pl[r].head + col_of(p));
#pragma unroll
        for (int e = 0; e < kEdges; ++e)
          if (e * kWidth + lane < pl[r].edges)
            edge[r][e] = course::to_float(x[(row0 + r) * cols + pl[r].edge_col(e * kWidth + lane)]);
      }
    } else {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int p = 0; p < kPacks; ++p)
          if (row0 + r < rows && col_of(p) < cols) held[r][p] = course::load_pack<T, kPack>(x + (row0 + r) * cols + col_of(p));
    }
    Welford w[kRows];
    if constexpr (kPeel) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int p = 0; p < kPacks; ++p)
          if (p * kWidth + lane < pl[r].packs) {
            float v[kPack];
            Convert::to_floats(held[r][p], v);
            w[r] = course::welford_merge(w[r], course::welford_of<kPack>(v));
          }
#pragma unroll
        for (int e = 0; e < kEdges; ++e)
          if (e * kWidth + lane < pl[r].edges) w[r] = course::welford_merge(w[r], course::welford_of<1>(&edge[r][e]));
      }
    } else {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int p = 0; p < kPacks; ++p)
          if (row0 + r < rows && col_of(p) < cols) {
            float v[kPack];
            Convert::to_floats(held[r][p], v);
            w[r] = course::welford_merge(w[r], course::welford_of<kPack>(v));
          }
    }
    Pack<T, kPack> g[kEarly ? kPacks : 1], b[kEarly ? kPacks : 1];
    if constexpr (kEarly) {
#pragma unroll
      for (int p = 0; p < kPacks; ++p)
        if (col_of(p) < cols) {
          g[p] = course::load_pack<T, kPack>(gamma + col_of(p));
          b[p] = course::load_pack<T, kPack>(beta + col_of(p));
        }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) w[r] = course::group_welford<kWidth>(w[r], mask);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t row = row0 + r;
      if (row >= rows) continue;
      float mu, rs;
      course::welford_finish(w[r], eps, &mu, &rs);
      if (lane == 0) {
        mean[row] = mu;
        rstd[row] = rs;
      }
      if constexpr (kPeel) {
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
          if (p * kWidth + lane >= pl[r].packs) continue;
          const int64_t col = pl[r].head + col_of(p);
          float v[kPack];
          Convert::to_floats(held[r][p], v);
          if constexpr (kShifted)  // this head's entry: aligned packs
            normalize_pack<T, kPack, true>(v, course::load_pack<T, kPack>(shift.gamma(table, pl[r].head) + col_of(p)),
                                           course::load_pack<T, kPack>(shift.beta(table, pl[r].head) + col_of(p)), mu,
                                           rs, y + row * cols + col);
          else
            normalize_pack<T, kPack, true>(v, load_pack_anywhere<T, kPack>(gamma + col),
                                           load_pack_anywhere<T, kPack>(beta + col), mu, rs, y + row * cols + col);
        }
#pragma unroll
        for (int e = 0; e < kEdges; ++e)
          if (e * kWidth + lane < pl[r].edges) {
            const int c = pl[r].edge_col(e * kWidth + lane);
            normalize_pack<T, 1>(&edge[r][e], gamma + c, beta + c, mu, rs, y + row * cols + c);
          }
      } else {
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
          const int64_t col = col_of(p);
          if (col >= cols) continue;
          float v[kPack];
          Convert::to_floats(held[r][p], v);
          if constexpr (kAffineEarly<kWidth>)
            normalize_pack<T, kPack>(v, g[p], b[p], mu, rs, y + row * cols + col);
          else
            normalize_pack<T, kPack>(v, gamma + col, beta + col, mu, rs, y + row * cols + col);
        }
      }
    }
  }
}
/// [warp_kernel]

template <typename T, int kPack, int kColsPerThread, int kWidth, bool kPeel = false, bool kShifted = false>
void launch_warp(const course::Args& a, cudaStream_t stream, int phase = 0) {
  const T* table = kShifted ? launch_affine_shift<T, kPack>(a, phase, stream) : nullptr;
  // Short rows: several rows per group, so that each lane has several loads in flight.
  // Not measured on its own (TUNING.md); chapter 04's rows_per_group would take 4 at 8 fp32 columns.
  constexpr int kRows = kColsPerThread == kPack ? 4 : (kColsPerThread / kPack <= 4 && kColsPerThread <= 16) ? 2 : 1;
  constexpr int kRowsPerBlock = kWarpBlock / kWidth * kRows;
  // One group per row at the sweep's shapes. H100: one looping wave lost 3-6% (TUNING.md).
  const unsigned blocks = course::resident_grid(a.rows, kRowsPerBlock, kWarpBlock, 8);
  layer_norm_warp_kernel<T, kPack, kColsPerThread, kWidth, kRows, kPeel, kShifted><<<blocks, kWarpBlock, 0, stream>>>(
      static_cast<const T*>(a.x), static_cast<const T*>(a.gamma), static_cast<const T*>(a.beta), static_cast<T*>(a.y),
      static_cast<float*>(a.mean), static_cast<float*>(a.rstd), a.rows, a.cols, a.eps, phase, table,
      AffineShift<kPack>::of(a.cols));
  CUDA_CHECK_LAUNCH();
}

// Every tensor the packs touch: x, y, gamma and beta must all be aligned to the pack.
template <typename T, typename F>
void with_pack(const course::Args& a, F&& f) {
  course::with_widest_pack<T>(a.cols, {a.x, a.y, a.gamma, a.beta}, std::forward<F>(f));
}

/// The phase of gamma and beta (blocks/peel.h: their element offset from a pack boundary) when
/// they share one, else -1.
template <typename T>
int affine_phase(const course::Args& a) {
  return course::pick_phase<16 / sizeof(T)>(a.cols, {{a.gamma, sizeof(T)}, {a.beta, sizeof(T)}});
}

/// The peel's phase (blocks/peel.h) for rows that are not whole 16-byte packs, when x and y share
/// it (the warp kernel's gamma and beta may lie anywhere: load_pack_anywhere); -1 for whole packs,
/// or none. The block kernels also need gamma and beta to share a phase (block_peel_phase).
template <typename T>
int peel_phase(const course::Args& a) {
  constexpr int kMax = 16 / sizeof(T);
  if (a.cols % kMax == 0) return -1;
  return course::pick_phase<kMax>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}});
}

/// peel_phase for the block kernels, which cut gamma and beta from aligned packs: -1 also where
/// gamma and beta do not share a phase (the row is then read one element at a time).
template <typename T>
int block_peel_phase(const course::Args& a) {
  return affine_phase<T>(a) < 0 ? -1 : peel_phase<T>(a);
}

/// The longest row the shared-memory path caches on this GPU (0 without a device).
template <typename T>
int64_t layer_norm_smem_max_cols() {
  const int optin = course::smem_per_block_optin();
  if (optin == 0) return 0;
  constexpr int kMaxPack = 16 / sizeof(T);  // the largest static part: 1024 threads
  const size_t static_bytes = course::allow_max_smem(block_kernel<T, kMaxPack, 1024, true>());
  return (int64_t(optin) - int64_t(static_bytes)) / int64_t(sizeof(T));
}

/// A group of lanes per row, the row in registers: cols <= layer_norm_warp_max_cols<T>(); short
/// rows give each lane at least kMinPacks packs (the chapter uses 2).
template <typename T, int kMinPacks = kMinPacksPerLane>
void layer_norm_warp(const course::Args& a, cudaStream_t stream) {
  const std::string limit = "the warp path holds cols <= " + std::to_string(kWarpMaxCols<T>) + " in registers";
  if (!course::check_op_args(a, course::Op::layer_norm, kWarpMaxCols<T>, limit.c_str())) return;
  if (const int phase = peel_phase<T>(a); phase >= 0) {  // the peel: packs from each row's first boundary
    constexpr int kMax = 16 / sizeof(T);
    return course::dispatch_warp_shape_min<kMax, kMinPacks, kWarpColsPerLane<T>>(a.cols, [&](auto cpt, auto width) {
      constexpr int kCpt = decltype(cpt)::value, kWidth = decltype(width)::value;
      if constexpr (sizeof(T) == 2)  // the table for 16-bit rows only (use_affine_shift)
        if (use_affine_shift<T>(a)) return launch_warp<T, kMax, kCpt, kWidth, true, true>(a, stream, phase);
      launch_warp<T, kMax, kCpt, kWidth, true>(a, stream, phase);
    });
  }
  with_pack<T>(a, [&](auto pack) {
    constexpr int kPack = decltype(pack)::value;
    course::dispatch_warp_shape_min<kPack, kMinPacks, kWarpColsPerLane<T>>(a.cols, [&](auto cols_per_thread, auto width) {
      launch_warp<T, kPack, decltype(cols_per_thread)::value, decltype(width)::value>(a, stream);
    });
  });
}

/// A block per row, the row cached in shared memory: cols <= layer_norm_smem_max_cols<T>().
template <typename T>
void layer_norm_smem(const course::Args& a, cudaStream_t stream) {
  const int64_t max_cols = layer_norm_smem_max_cols<T>();
  const std::string limit = "the row must fit in shared memory: cols <= " + std::to_string(max_cols) + " on this GPU";
  if (!course::check_op_args(a, course::Op::layer_norm, max_cols, limit.c_str())) return;
  course::require(a.rows < (int64_t(1) << 31), "rows = ", a.rows, " is past the grid limit of 2^31 - 1 blocks (one per row)");
  if (const int phase = block_peel_phase<T>(a); phase >= 0)
    return dispatch_block<T, 16 / sizeof(T), true, true>(a, stream, phase, affine_phase<T>(a));
  with_pack<T>(a, [&](auto pack) { dispatch_block<T, decltype(pack)::value, true>(a, stream); });
}

/// A block per row, the row read twice from global memory: any cols.
template <typename T>
void layer_norm_uncached(const course::Args& a, cudaStream_t stream) {
  if (!course::check_op_args(a, course::Op::layer_norm)) return;
  course::require(a.rows < (int64_t(1) << 31), "rows = ", a.rows, " is past the grid limit of 2^31 - 1 blocks (one per row)");
  if (const int phase = block_peel_phase<T>(a); phase >= 0)
    return dispatch_block<T, 16 / sizeof(T), false, true>(a, stream, phase, affine_phase<T>(a));
  with_pack<T>(a, [&](auto pack) { dispatch_block<T, decltype(pack)::value, false>(a, stream); });
}

/// The largest cols the dispatch sends to the warp path (1024 for fp32, 3072 for 16-bit types;
/// past 1024, and fp32 rows past 512 that are not whole packs, only with rows >= 32 x the SM count).
template <typename T>
int64_t layer_norm_warp_up_to() {
  return kWarpUpTo<T>;
}

/// Largest cols the warp path holds (its registers): 1024 for fp32, 3072 for f16 and bf16.
template <typename T>
int64_t layer_norm_warp_max_cols() {
  return kWarpMaxCols<T>;
}

/// The three paths, chosen by cols (and by rows for 16-bit rows past 1024 columns and fp32 rows of
/// 513-1023 that are not whole packs: warp_any_rows_cols).
/// [dispatch]
template <typename T>
void layer_norm(const course::Args& a, cudaStream_t stream) {
  if (a.cols <= kWarpUpTo<T> && (a.cols <= warp_any_rows_cols<T>(a) || a.rows >= course::long_warp_rows_min()))
    return layer_norm_warp<T>(a, stream);                                        // row in registers
  if (a.cols <= layer_norm_smem_max_cols<T>()) return layer_norm_smem<T>(a, stream);  // in shared memory
  layer_norm_uncached<T>(a, stream);                                           // read twice
}
/// [dispatch]

}  // namespace ch09
