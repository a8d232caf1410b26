/// @file norm_backward.cuh
/// @brief Chapter 15: the LayerNorm and RMSNorm backward. Per row, dx from two sums over the row;
/// per column, dgamma (and dbeta) summed over every row: each block adds its rows into one fp32
/// partial row, and column_sum.cuh adds the partial rows in a fixed order (the same bits on every run).
/// The host's choice of kernel for a shape is launch.cuh's.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "blocks/convert.cuh"
#include "plan.h"
#include "rms_norm.cuh"
#include "row_groups.cuh"
#include "rows_ahead.cuh"
#include "split_rows.cuh"

namespace ch15 {

/// The tensors of a backward: x, dy, gamma and the forward's saved statistics in; dx out, and the
/// block's partial rows of the column sums (kAccs of cols floats each: dgamma, then dbeta).
template <typename T>
struct BackwardArgs {
  const T* x;
  const T* dy;
  const T* gamma;
  const float* mean;  ///< LayerNorm only
  const float* rstd;
  T* dx;
  float* partials;  ///< one per block (per cluster where rows are split) x kAccs x cols
  int64_t rows, cols, rows_per_block;
  int period;  ///< classes of rows, one a block (plan.h: row_period, plan_partials)
  int64_t slice;  ///< the columns of a cluster's block (split_rows.cuh); cols where rows are not split
};

/// Resident blocks the compiler must leave room for: two of 512 threads (64 registers a thread)
/// where a thread holds one pack; H100, LayerNorm bf16 at 1024 columns took 88 registers unbounded,
/// one block per SM (TUNING.md). Threads holding 2 or more packs keep what they need.
template <int kBlock, int kHeld>
constexpr int kMinBlocks = kHeld == 1 ? 1024 / kBlock : 1;

/// [rows_at_once]
/// Rows a group has in flight at once where its accumulators are registers (kRegAcc): a thread's
/// columns are the same in every row, so a second row costs its x and dy packs, not a second set
/// of accumulators, and one pass of the group's sums (one barrier) serves both rows. Two,
/// for threads of 1 or 2 packs; except one-pack threads of more than 8 accumulators (16-bit
/// LayerNorm), which spill at the 64-register bound. H100: 2 rows +4% to +16% at 1536-8192
/// columns, a spilling 16-bit LayerNorm -6% to -13% in groups under the block (TUNING.md); in a
/// group of 512 it gained, until the trips ahead and one barrier a trip (H200: one row +1% to +2%
/// there, +2% to +6% with stats_ahead, which only one-row trips take).
template <int kAccs, int kPack, int kHeld, bool kRegAcc>
constexpr int rows_at_once() {
  if (!kRegAcc || kHeld > 2) return 1;
  return kHeld == 1 && kAccs * kPack > 8 ? 1 : 2;
}
/// [rows_at_once]

/// [trips_ahead]
/// Trips a group asks for ahead of the one it works on (rows_ahead.cuh): kTripsAhead where its
/// accumulators are registers, at most kAheadMaxAccs of them a thread, and its group is the block
/// (rows of more than 256 packs) or takes one row at a time (16-bit LayerNorm's one-pack threads),
/// but not for a split row's slice of 4 packs a thread; packs of 16 bytes (`cp.async.cg`); else
/// none. H200 (TUNING.md): groups of the block 0% to +28% at 1536-16384 columns, one-row groups
/// +4% to +12% at 512-2048; left out, slower: groups of two rows smaller than the block (-3% to
/// -5%), 64 accumulators a thread (spilled, -7% and -17%), 4-pack slices at 32768-65536 (-3% to -7%).
template <typename T, int kAccs, int kPack, int kGroups, int kHeld, bool kRegAcc, bool kSplit>
constexpr int trips_ahead() {
  const bool regs = kRegAcc && kHeld > 0 && kAccs * kPack * kHeld <= kAheadMaxAccs;
  const bool one_row = rows_at_once<kAccs, kPack, kHeld, kRegAcc>() == 1;
  const bool ahead = regs && (kGroups == 1 || one_row) && !(kSplit && kHeld > 2);
  return ahead && kPack * sizeof(T) == 16 ? kTripsAhead : 0;
}
/// Whether a group asks for its next trip's saved mean and rstd while it works on this one:
/// where its trips are staged and a trip is one row (16-bit LayerNorm's one-pack groups; threads
/// of 4 packs): x and dy have landed in the stage, but a trip's first sums waited a round trip
/// for these two. H200: +3% to +9% for 16-bit LayerNorm at 256-2048 columns, +1% to +3% at
/// 3072-4096 (a group of 512), within 1% at 4 packs; with two rows a trip it mostly lost 2-7%,
/// four loads held in registers a trip longer (TUNING.md).
constexpr bool stats_ahead(int ahead, int rows) { return ahead > 0 && rows == 1; }
/// Their staging area (and the stage of the trip in use), at the start of dynamic shared memory.
/// The host takes the kernel with it only where it fits without fewer blocks resident (launch.cuh).
template <typename T, int kAccs, int kPack, int kGroup, int kGroups, int kHeld, bool kRegAcc, bool kSplit>
constexpr size_t staging_bytes() {
  constexpr int kAhead = trips_ahead<T, kAccs, kPack, kGroups, kHeld, kRegAcc, kSplit>();
  constexpr int kRows = rows_at_once<kAccs, kPack, kHeld, kRegAcc>();
  return kAhead > 0 ? Staging<kAhead + 1, kRows, kHeld, kBlockOf<kGroup, kGroups>>::kBytes : 0;
}
/// [trips_ahead]

/// The padded place of column c in a shared-memory accumulator row (plan.h: padded_cols).
template <int kPack>
__device__ __forceinline__ int64_t padded(int64_t c) {
  return c + c / kPack;
}

/// [backward_kernel]
/// Block b takes rows_per_block rows of class b % period (plan.h: plan_partials), its groups kRows
/// rows each in turn (a trip). With
/// g = dy * gamma and xhat = (x - mean) * rstd:  dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) for
/// LayerNorm, rstd * (g - xhat * mean(g * xhat)) for RMSNorm (xhat = x * rstd). Pass 1 takes a row's
/// two sums and adds its dy * xhat (and dy) to the column accumulators; pass 2 writes dx.
/// The accumulators: kRegAcc, where a thread holds at most kHeldMax packs (every row of the block
/// puts the same columns in the same thread's packs: its rows are of one class, plan.h:
/// row_period), in that thread's registers, added into the block's partial row group by group at
/// the end; else (8 packs a thread, or rows read twice: launched with period 1, so a peeled row
/// keeps its own layout) a row of them per group in shared
/// memory, or for rows too long for it (one group) the block's partial row itself. kSplit: a
/// cluster's blocks share each row, each its own slice of columns, as if the slice were the row
/// (split_rows.cuh), but for the row's two sums, added over the cluster. kStaged: each trip's x and
/// dy come through shared memory, asked for trips_ahead trips before (rows_ahead.cuh); dynamic
/// shared memory holds that staging area first, then the accumulators.
template <typename T, int kPack, int kGroup, int kGroups, int kHeld, bool kLayer, bool kRegAcc, bool kSplit = false,
          bool kStaged = false>
__global__ void __launch_bounds__(kBlockOf<kGroup, kGroups>, kMinBlocks<kGroup * kGroups, kHeld>)
    norm_backward_kernel(BackwardArgs<T> p, int phase, bool acc_in_smem) {
  using Convert = course::ScalarConvert<T>;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();  // column_sum.cuh's kernel may launch (and wait)
#endif
  constexpr int kAccs = kLayer ? 2 : 1, kBlock = kGroup * kGroups, kRegs = kRegAcc ? kHeld * kPack : 1;
  constexpr int kRows = rows_at_once<kAccs, kPack, kHeld, kRegAcc>();  // a group's rows in flight
  constexpr int kH = kHeld > 0 ? kHeld : 1;
  constexpr int kAhead = kStaged ? trips_ahead<T, kAccs, kPack, kGroups, kHeld, kRegAcc, kSplit>() : 0;
  static_assert(!kStaged || kAhead > 0, "a staged kernel has trips ahead");
  static_assert(!kRegAcc || kHeld > 0, "register accumulators need the row held");
  static_assert(!kSplit || kGroups == 1, "a split row is one group's");
  const int g = threadIdx.x / kGroup, t = threadIdx.x % kGroup;
  // The block's columns of each row: [c0, c0 + w), every column outside a cluster. From here on a
  // column is counted from c0, and x, dy, dx, gamma and the partial row are addressed from it.
  const Slice slice = slice_of<kSplit>(p.cols, p.slice);
  const int64_t cols = p.cols, width = kAccs * cols, c0 = slice.first, w = slice.width;
  const T* const gamma = p.gamma + c0;
  // Dynamic shared memory: the trips ahead (rows_ahead.cuh), then the accumulators.
  extern __shared__ __align__(16) unsigned char smem[];
  const Staging<kAhead + 1, kRows, kH, kBlock> staging{reinterpret_cast<uint4*>(smem)};
  float* const smem_acc = reinterpret_cast<float*>(
      smem + (kStaged ? staging_bytes<T, kAccs, kPack, kGroup, kGroups, kHeld, kRegAcc, kSplit>() : 0));
  __shared__ float published[2][2 * kRows];  // kSplit: the block's row sums, for the cluster
  float* const partial = p.partials + part_of<kSplit>() * width + c0;
  // A shared-memory accumulator row is padded (padded()); the block's partial row in global memory not.
  const int64_t stride = acc_in_smem ? padded_cols<kPack>(w) : cols;
  float* const acc = acc_in_smem ? smem_acc + g * kAccs * stride : partial;
  auto at = [&](int64_t c) { return acc_in_smem ? padded<kPack>(c) : c; };
  float racc[kAccs][kRegs + 1] = {};  // kRegAcc: the thread's packs' columns, then its edge column
  if constexpr (!kRegAcc) {
    if constexpr (kSplit) {  // its own columns of each row (global memory: the cluster's partial row)
      for (int k = 0; k < kAccs; ++k)
        for (int64_t c = t; c < (acc_in_smem ? stride : w); c += kGroup) acc[k * stride + c] = 0.0f;
    } else {
      for (int64_t c = t; c < kAccs * stride; c += kGroup) acc[c] = 0.0f;
    }
    __syncthreads();
  }
  // The block's rows: rows cls + i x period of its class cls, for i in [first, end) (plan.h).
  const int cls = int(part_of<kSplit>() % p.period);
  const int64_t class_rows = p.rows > cls ? (p.rows - cls + p.period - 1) / p.period : 0;
  const int64_t first = part_of<kSplit>() / p.period * p.rows_per_block;
  const int64_t end = std::min(class_rows, first + p.rows_per_block);
  auto row_of = [&](int64_t i) { return cls + i * p.period; };
  const int64_t trips = (p.rows_per_block + kGroups * kRows - 1) / (kGroups * kRows);
  const float inv_cols = 1.0f / float(cols);
  // The peel of the block's columns of a row (blocks/peel.h), which start row * cols + c0 elements in.
  auto peel_of = [&](int64_t row) {
    if constexpr (kSplit)
      return RowPeel::of<kPack>(int((phase + row * cols + c0) % kPack), 0, w);
    else
      return RowPeel::of<kPack>(phase, row, cols);
  };
  // kRegAcc: every row of the block has its class's layout, and the thread's columns of gamma stay
  // in its registers.
  const RowPeel fixed = peel_of(cls);
  Pack<T, kPack> held_gamma[kRegAcc ? kHeld : 1];
  if constexpr (kRegAcc) {
#pragma unroll
    for (int i = 0; i < kHeld; ++i)
      if (t + i * kGroup < fixed.packs)
        held_gamma[i] = load_gamma<T, kPack>(gamma, fixed.head + int64_t(t + i * kGroup) * kPack);
  }
  // The gamma of pack i of this thread, at column col.
  auto gamma_of = [&](int i, int64_t col) {
    if constexpr (kRegAcc)
      return held_gamma[i];
    else
      return load_gamma<T, kPack>(gamma, col);
  };
  // kAhead: trip tt's packs of x and dy, copied into its stage. Every trip commits one group of
  // copies, empty past the last trip, so that after asking for trip t + kAhead a thread has
  // t + kAhead + 1 groups, and waiting until kAhead are pending means trip t's has landed.
  auto ask = [&](int64_t tt) {
    if (tt < trips) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t i = first + (tt * kRows + r) * kGroups + g, row = row_of(i);
        if (i < end) {
#pragma unroll
          for (int i = 0; i < kHeld; ++i)
            if (t + i * kGroup < fixed.packs) {
              const int64_t at = row * cols + c0 + fixed.head + int64_t(t + i * kGroup) * kPack;
              copy_async16(staging.at(tt, r, i, 0), p.x + at);
              copy_async16(staging.at(tt, r, i, 1), p.dy + at);
            }
        }
      }
    }
    copy_commit();
  };
  if constexpr (kAhead > 0)
    for (int tt = 0; tt < kAhead; ++tt) ask(tt);
  // Trip tt's saved mean and rstd. Groups that stage one-row trips ask for them a trip ahead
  // too (stats_ahead); the others as the trip starts.
  float mu_next[kRows], rs_next[kRows];
  auto stats_of = [&](int64_t tt) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t i = first + (tt * kRows + r) * kGroups + g, row = row_of(i);
      mu_next[r] = kLayer && i < end ? p.mean[row] : 0.0f;
      rs_next[r] = i < end ? p.rstd[row] : 0.0f;
    }
  };
  constexpr bool kStatsAhead = stats_ahead(kAhead, kRows);
  if constexpr (kStatsAhead) stats_of(0);
  for (int64_t trip = 0; trip < trips; ++trip) {
    // Row r of the trip: kRows rows per group, each a kGroups-row step of the block apart.
    RowPeel pl[kRows];
    int64_t base[kRows];
    float mu[kRows], rs[kRows], sums[2 * kRows];  // sums: each row's sum of g, then of g * xhat
    if constexpr (!kStatsAhead) stats_of(trip);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t i = first + (trip * kRows + r) * kGroups + g, row = row_of(i);
      pl[r] = i >= end ? RowPeel{0, 0, 0, 0} : kRegAcc ? fixed : peel_of(row);
      base[r] = row * cols + c0;
      mu[r] = mu_next[r];
      rs[r] = rs_next[r];
      sums[2 * r] = sums[2 * r + 1] = 0.0f;
    }
    if constexpr (kStatsAhead) stats_of(trip + 1);  // in flight while this trip works
    Pack<T, kPack> hx[kRows][kH], hdy[kRows][kH];
    // Pass 1 for n columns from `col` of row r (slot: where kRegAcc keeps their sums).
    auto gather = [&](int r, const float* xv, const float* dyv, const float* gm, int64_t col, int n, int slot) {
      for (int j = 0; j < n; ++j) {
        const float xhat = (xv[j] - mu[r]) * rs[r], gj = __fmul_rn(dyv[j], gm[j]);
        sums[2 * r] += gj;
        sums[2 * r + 1] += gj * xhat;
        if constexpr (kRegAcc) {
          racc[0][slot + j] += dyv[j] * xhat;
          if (kLayer) racc[kAccs - 1][slot + j] += dyv[j];
        } else {
          acc[at(col + j)] += dyv[j] * xhat;
          if (kLayer) acc[stride + at(col + j)] += dyv[j];
        }
      }
    };
    auto gather_pack = [&](int r, const Pack<T, kPack>& px, const Pack<T, kPack>& pdy, int64_t col, int i) {
      float xv[kPack], dyv[kPack], gm[kPack];
      Convert::to_floats(px, xv);
      Convert::to_floats(pdy, dyv);
      Convert::to_floats(gamma_of(i, col), gm);
      gather(r, xv, dyv, gm, col, kPack, i * kPack);
    };
    if constexpr (kHeld > 0) {
      if constexpr (kAhead > 0) {  // ask for trip + kAhead, then read this trip's packs from its stage
        ask(trip + kAhead);
        copy_wait<kAhead>();
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int i = 0; i < kHeld; ++i)
          if (t + i * kGroup < pl[r].packs) {
            if constexpr (kAhead > 0) {
              hx[r][i].storage = *staging.at(trip, r, i, 0);
              hdy[r][i].storage = *staging.at(trip, r, i, 1);
            } else {
              const int64_t at = base[r] + pl[r].head + int64_t(t + i * kGroup) * kPack;
              hx[r][i] = course::load_pack<T, kPack>(p.x + at);
              hdy[r][i] = course::load_pack<T, kPack>(p.dy + at);
            }
          }
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int i = 0; i < kHeld; ++i)
          if (t + i * kGroup < pl[r].packs)
            gather_pack(r, hx[r][i], hdy[r][i], pl[r].head + int64_t(t + i * kGroup) * kPack, i);
    } else {
      for (int q = t; q < pl[0].packs; q += kGroup) {
        const int64_t at = base[0] + pl[0].head + int64_t(q) * kPack;
        gather_pack(0, course::load_pack<T, kPack>(p.x + at), course::load_pack<T, kPack>(p.dy + at),
                    pl[0].head + int64_t(q) * kPack, 0);
      }
    }
    // The peel's head and tail, one column per thread (read again in pass 2: no registers held
    // across the group's sums).
    auto edge_of = [&](int r) { return t < pl[r].edges ? pl[r].edge_col(t) : -1; };
    auto edge_gather = [&](int r, int col) {
      const float ex = course::to_float(p.x[base[r] + col]), edy = course::to_float(p.dy[base[r] + col]);
      const float egm = course::to_float(gamma[col]);
      gather(r, &ex, &edy, &egm, col, 1, kRegs);
    };
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      if (const int col = edge_of(r); col >= 0) edge_gather(r, col);
    // The group's sums; its barrier (for a warp, __syncwarp) also orders this trip's accumulator
    // updates before the next trip's, whose columns may fall to other threads.
    group_sums<kGroup, kGroups>(sums, trip);
    if constexpr (kSplit) cluster_sums(sums, published, trip);  // the row's sums over its slices
    if constexpr (kGroup <= 32) __syncwarp();
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float mean_g = kLayer ? sums[2 * r] * inv_cols : 0.0f, mean_gx = sums[2 * r + 1] * inv_cols;
      const float c = rs[r] * rs[r] * mean_gx;  // xhat * mean(g xhat) = (x - mu) * c / rs
      // dx = rs (g - mean_g) - (x - mu) c, g rounded as in pass 1 (__fmul_rn: not contracted into an
      // fma with `- mean_g`): a row whose g all equal their mean (one column) gives dx = 0 exactly.
      auto dx_of = [&](float xv, float dyv, float gm) {
        if constexpr (kLayer)
          return fmaf(rs[r], __fmul_rn(dyv, gm) - mean_g, -((xv - mu[r]) * c));
        else
          return fmaf(rs[r], __fmul_rn(dyv, gm), -(xv * c));
      };
      auto write_pack = [&](const Pack<T, kPack>& px, const Pack<T, kPack>& pdy, int64_t col, int i) {
        float xv[kPack], dyv[kPack], gm[kPack];
        Convert::to_floats(px, xv);
        Convert::to_floats(pdy, dyv);
        Convert::to_floats(gamma_of(i, col), gm);
#pragma unroll
        for (int j = 0; j < kPack; ++j) xv[j] = dx_of(xv[j], dyv[j], gm[j]);
        Pack<T, kPack> o;
        Convert::from_floats(xv, o);
        course::store_pack_vector<T, kPack>(p.dx + base[r] + col, o);
      };
      if constexpr (kHeld > 0) {
#pragma unroll
        for (int i = 0; i < kHeld; ++i)
          if (t + i * kGroup < pl[r].packs)
            write_pack(hx[r][i], hdy[r][i], pl[r].head + int64_t(t + i * kGroup) * kPack, i);
      } else {
        for (int q = t; q < pl[r].packs; q += kGroup) {
          const int64_t at = base[r] + pl[r].head + int64_t(q) * kPack;
          write_pack(course::load_pack<T, kPack>(p.x + at), course::load_pack<T, kPack>(p.dy + at),
                     pl[r].head + int64_t(q) * kPack, 0);
        }
      }
      if (const int col = edge_of(r); col >= 0)
        p.dx[base[r] + col] = course::from_float<T>(
            dx_of(course::to_float(p.x[base[r] + col]), course::to_float(p.dy[base[r] + col]),
                  course::to_float(gamma[col])));
    }
  }
  cluster_done<kSplit>();
  if constexpr (kRegAcc) {
    // The groups' registers into one row, group 0 first (every row of the block has one layout: the columns
    // a thread owns): in shared memory, then out to the block's partial row; one group, straight there.
    const RowPeel& pl = fixed;
    float* const sum = kGroups > 1 ? smem_acc : partial;
    const int edge_col = t < pl.edges ? pl.edge_col(t) : -1;
    for (int r = 0; r < kGroups; ++r) {
      if (g == r) {
#pragma unroll
        for (int k = 0; k < kAccs; ++k) {
          float* row = sum + k * cols;
#pragma unroll
          for (int i = 0; i < kHeld; ++i)
            if (t + i * kGroup < pl.packs)
#pragma unroll
              for (int j = 0; j < kPack; ++j) {
                const int64_t c = pl.head + int64_t(t + i * kGroup) * kPack + j;
                row[c] = (r == 0 ? 0.0f : row[c]) + racc[k][i * kPack + j];
              }
          if (edge_col >= 0) row[edge_col] = (r == 0 ? 0.0f : row[edge_col]) + racc[k][kRegs];
        }
      }
      if (kGroups > 1) __syncthreads();
    }
    if constexpr (kGroups > 1)
      for (int64_t c = threadIdx.x; c < width; c += kBlock) partial[c] = smem_acc[c];
  } else {
    if (!acc_in_smem) return;  // the accumulator was the block's partial row
    __syncthreads();
    for (int64_t c = threadIdx.x; c < kAccs * w; c += kBlock) {  // the groups' rows, added in group order
      const int64_t k = c / w, in_smem = k * stride + padded<kPack>(c - k * w);
      float v = smem_acc[in_smem];
#pragma unroll
      for (int i = 1; i < kGroups; ++i) v += smem_acc[i * kAccs * stride + in_smem];
      partial[kSplit ? k * cols + (c - k * w) : c] = v;  // unsplit, w is cols
    }
  }
}
/// [backward_kernel]

}  // namespace ch15
