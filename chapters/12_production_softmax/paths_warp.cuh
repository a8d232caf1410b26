/// @file paths_warp.cuh
/// @brief Chapter 12's warp path: a group of lanes per row, the row in registers (chapters 03-05).
/// Its kernel (and warp_rows, the group's passes, which chapter 13's tile path shares), the group
/// shapes and the launch. The backward's warp kernel and launch: 14_softmax_backward/backward_warp.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "blocks/warp.cuh"
#include "blocks/warp_dispatch.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/launch_math.h"
#include "paths_common.cuh"
#include "blocks/peel.h"

namespace ch12 {

/// [row_regs]
/// A lane's packs of a row held in registers. Up to 32 columns per lane (every fp32 row of the
/// warp path, packed 16-bit rows up to 1024) they are held converted to fp32: each element
/// converted once. Past that (16-bit rows of 1025-3072 columns) they are held as fetched
/// (Load::Fetched: the storage type) and converted on each of the three passes: half the registers of fp32, so
/// that twice the warps, and twice the loads in flight, fit on an SM (a 16-bit row of 3072
/// columns: 72 registers where fp32 needed 255). Converting three times costs instructions,
/// which the short rows cannot afford (16-bit rows of 512 and 1024 columns held fetched ran 1-4%
/// slower on the H100) and the long ones can. (One-element packs of a misaligned row fetch no
/// fewer registers; the fused scale-and-mask load at 80 and 96 columns per lane then spills a few
/// bytes: a fallback path.)
///
/// Held as fp32, a value can be replaced (keep): the softmax keeps each exponential in place of
/// its input, so that the write pass multiplies instead of computing it again.
template <typename Load, int kPack, int kPacks, bool kFetched = (kPacks * kPack > 32)>
struct RowRegs {
  static constexpr bool kFloat = true;
  float v[kPacks][kPack];
  __device__ __forceinline__ void fetch(const Load& load, int p, int64_t row, int64_t col) {
    load.template load<kPack>(v[p], row, col);
  }
  __device__ __forceinline__ const float* get(const Load&, int p, float*) const { return v[p]; }
  __device__ __forceinline__ void keep(int p, int j, float e) { v[p][j] = e; }
};
template <typename Load, int kPack, int kPacks>
struct RowRegs<Load, kPack, kPacks, true> {
  static constexpr bool kFloat = false;
  typename Load::template Fetched<kPack> x[kPacks];
  __device__ __forceinline__ void fetch(const Load& load, int p, int64_t row, int64_t col) {
    x[p] = load.template fetch<kPack>(row, col);
  }
  __device__ __forceinline__ const float* get(const Load& load, int p, float* tmp) const {
    load.template convert<kPack>(x[p], tmp);
    return tmp;
  }
  __device__ __forceinline__ void keep(int, int, float) {}  // nothing to keep: converted on each pass
};
/// [row_regs]

/// [warp_kernel]
/// Chapter 04's warp kernel with functors, and log-softmax as a flag (a uniform branch): each
/// group of kWidth lanes takes kRows rows at a time (warp_rows), grid-stride over the rows.
/// Every load of the group's rows is started before any is used; the row stays in registers
/// (RowRegs) for the three passes: max, sum of exponentials, write. Where the row is held as
/// fp32, the softmax keeps the exponentials from the sum pass, as chapter 04 does: one `expf` per
/// element.
/// kPeel (blocks/peel.h): the rows are not whole numbers of packs; each is read in packs from its first
/// pack boundary, and its head and tail (edges) one element per lane, kEdges per lane at most.
template <int kPack, int kPacks, int kWidth, int kRows, int kRowStride, bool kPeel = false, typename Load,
          typename Store>
__device__ __forceinline__ void warp_rows(const Load& load, const Store& store, int64_t row0, int64_t rows,
                                          int64_t cols, bool log, int phase = 0) {
  const int lane = threadIdx.x % kWidth;
  const unsigned mask = course::group_mask<kWidth>();
  auto row_of = [&](int r) { return row0 + int64_t(r) * kRowStride; };  // the group's r-th row
  RowPeel pl[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) pl[r] = kPeel ? RowPeel::of<kPack>(phase, row_of(r), cols) : RowPeel{0, 0, 0, 0};
  auto col_of = [&](int r, int p) { return (kPeel ? pl[r].head : 0) + (int64_t(p) * kWidth + lane) * kPack; };
  // Packs past the row's end (padding) and rows past the last are neither loaded nor used.
  auto here = [&](int r, int p) {
    return row_of(r) < rows && (kPeel ? p * kWidth + lane < pl[r].packs : col_of(r, p) < cols);
  };
  constexpr int kEdges = kPeel ? (2 * kPack - 2 + kWidth - 1) / kWidth : 0;  // edge slots per lane
  auto edge_here = [&](int r, int e) { return row_of(r) < rows && e * kWidth + lane < pl[r].edges; };
  float edge[kRows][kEdges > 0 ? kEdges : 1];

  // A peeled 16-bit row is held as fetched at any length (so the softmax computes each exponential
  // again when it writes): held as fp32, at 1023 columns its edges' registers made the compiler
  // reuse a pack's, and a lane's fourth load waited for its first. H200: 1023, 511 and 255 columns
  // 1.15-1.21x, 31-63 up to 1.15x; 65 columns 0.88-0.94x, 127 0.97x (TUNING.md).
  constexpr bool kHeld = kPacks * kPack > 32 ||
                         (kPeel && sizeof(typename Load::template Fetched<kPack>) < kPack * sizeof(float));
  RowRegs<Load, kPack, kPacks, kHeld> x[kRows];
  const bool keep_exp = RowRegs<Load, kPack, kPacks, kHeld>::kFloat && !log;
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(r, p)) x[r].fetch(load, p, row_of(r), col_of(r, p));
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int e = 0; e < kEdges; ++e) {
      edge[r][e] = -INFINITY;
      if (edge_here(r, e)) load.template load<1>(&edge[r][e], row_of(r), pl[r].edge_col(e * kWidth + lane));
    }
  float m[kRows], s[kRows], tmp[kPack];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    m[r] = -INFINITY;
#pragma unroll
    for (int e = 0; e < kEdges; ++e) m[r] = fmaxf(m[r], edge[r][e]);
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (!here(r, p)) continue;
      const float* v = x[r].get(load, p, tmp);
#pragma unroll
      for (int j = 0; j < kPack; ++j) m[r] = fmaxf(m[r], v[j]);
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) m[r] = course::group_max<kWidth>(m[r], mask);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    s[r] = 0;
#pragma unroll
    for (int e = 0; e < kEdges; ++e)
      if (edge_here(r, e)) s[r] += row_exp<Store::kFastExp>(edge[r][e] - m[r]);  // computed again when written
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (!here(r, p)) continue;
      const float* v = x[r].get(load, p, tmp);
#pragma unroll
      for (int j = 0; j < kPack; ++j) {
        const float e = row_exp<Store::kFastExp>(v[j] - m[r]);
        s[r] += e;
        if (keep_exp) x[r].keep(p, j, e);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) s[r] = row_constant(course::group_sum<kWidth>(s[r], mask), log);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (!here(r, p)) continue;
      const float* v = x[r].get(load, p, tmp);
      float out[kPack];
#pragma unroll
      for (int j = 0; j < kPack; ++j) out[j] = keep_exp ? v[j] * s[r] : finish<Store::kFastExp>(v[j], m[r], s[r], log);
      store.template store<kPack, kPeel>(out, row_of(r), col_of(r, p));
    }
#pragma unroll
    for (int e = 0; e < kEdges; ++e)
      if (edge_here(r, e)) {
        const float out = finish<Store::kFastExp>(edge[r][e], m[r], s[r], log);
        store.template store<1>(&out, row_of(r), pl[r].edge_col(e * kWidth + lane));
      }
  }
}

template <typename Load, typename Store, int kPack, int kColsPerThread, int kWidth, int kRows, bool kPeel = false>
__global__ void __launch_bounds__(policy::kWarpPathBlock)
    softmax_warp_kernel(Load load, Store store, int64_t rows, int64_t cols, bool log, int phase = 0) {
  const int64_t group = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWidth;
  const int64_t row_step = int64_t(gridDim.x) * blockDim.x / kWidth * kRows;
  for (int64_t row0 = group * kRows; row0 < rows; row0 += row_step)
    warp_rows<kPack, kColsPerThread / kPack, kWidth, kRows, 1, kPeel>(load, store, row0, rows, cols, log, phase);
}
/// [warp_kernel]

namespace detail {

/// [half_wave]
/// Whether groups of `width` lanes taking `rows_per_group` rows each give the grid at least half a
/// wave of threads (policy::half_wave: 132 x 2048 / 2 threads on the H100).
inline bool half_wave(int64_t rows, int width, int rows_per_group) {
  return policy::half_wave(device(), rows, width, rows_per_group);
}
/// [half_wave]

/// [warp_launch]
// Short rows go two to a group (course::rows_per_group, at most policy::kMaxRowsPerGroup rows: up
// to four packs and 16 columns per lane), for more loads in flight per lane, as long as the grid
// keeps half a wave of threads (half_wave); past that, one row per group. kMinPacks > 1 gives
// short rows narrower groups, each lane holding more (policy::warp_min_packs).
template <int kMinPacks, int kPack, int kColsPerLane, typename F>
void warp_shape(int64_t rows, int64_t cols, F&& f) {
  course::dispatch_warp_shape_min<kPack, kMinPacks, kColsPerLane>(cols, [&](auto cpt, auto width) {
    constexpr int kRows = course::rows_per_group<kPack, decltype(cpt)::value, policy::kMaxRowsPerGroup>();
    if constexpr (kRows > 1) {
      if (!half_wave(rows, decltype(width)::value, kRows))
        return f(cpt, width, std::integral_constant<int, 1>{});
    }
    f(cpt, width, std::integral_constant<int, kRows>{});
  });
}

template <int kMinPacks, int kPack, int kColsPerLane, bool kPeel = false, typename Load, typename Store>
void launch_warp(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log, cudaStream_t stream,
                 int phase = 0) {
  warp_shape<kMinPacks, kPack, kColsPerLane>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    constexpr int kRowsPerBlock = policy::kWarpPathBlock / kWidth * kRows;
    const unsigned blocks = course::resident_grid(rows, kRowsPerBlock, policy::kWarpPathBlock, 8);
    softmax_warp_kernel<Load, Store, kPack, kCols, kWidth, kRows, kPeel>
        <<<blocks, policy::kWarpPathBlock, 0, stream>>>(load, store, rows, cols, log, phase);
    CUDA_CHECK_LAUNCH();
  });
}
/// [warp_launch]

/// [warp_packs]
/// Calls f(std::integral_constant<int, N>{}) with N the packs per lane at least that the forward's
/// warp path gives a row of `cols` columns in packs of kPack (policy::warp_min_packs: two or four
/// for fp32 rows of 33-256 columns, in narrower groups; one elsewhere).
template <int kPack, typename F>
void with_warp_min_packs(int64_t cols, F&& f) {
  if constexpr (kPack == 4) {
    const int packs = policy::warp_min_packs(kPack, cols);
    if (packs == 2) return f(std::integral_constant<int, 2>{});
    if (packs == 4) return f(std::integral_constant<int, 4>{});
  }
  f(std::integral_constant<int, 1>{});
}
/// [warp_packs]

}  // namespace detail
}  // namespace ch12
