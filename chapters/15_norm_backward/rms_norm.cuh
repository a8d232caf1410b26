/// @file rms_norm.cuh
/// @brief Chapter 15: the RMSNorm forward, y = x * rstd * gamma with rstd = 1 / sqrt(mean(x^2) + eps)
/// per row (saved for the backward): chapter 09's LayerNorm without the mean, so one sum per row
/// and no Welford merge. A group of threads per row (row_groups.cuh), the row held in registers
/// between its two passes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "blocks/convert.cuh"
#include "blocks/occupancy.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/ops.h"
#include "row_groups.cuh"

namespace ch15 {

using course::Pack;
using course::RowPeel;

/// [rms_kernel]
/// Rows go to the groups of the grid in turn; every group makes the same number of trips (the
/// group's barriers in group_sum2, none for a warp), a group past the last row with an empty row.
template <typename T, int kPack, int kGroup, int kGroups, int kHeld>
__global__ void __launch_bounds__(kBlockOf<kGroup, kGroups>)
    rms_norm_kernel(const T* __restrict__ x, const T* __restrict__ gamma, T* __restrict__ y, float* __restrict__ rstd,
                    int64_t rows, int64_t cols, float eps, int phase) {
  using Convert = course::ScalarConvert<T>;
  const int g = threadIdx.x / kGroup, t = threadIdx.x % kGroup;
  const int64_t per_trip = int64_t(gridDim.x) * kGroups;
  const int64_t trips = (rows + per_trip - 1) / per_trip;
  const int gamma_phase = int(reinterpret_cast<uintptr_t>(gamma) / sizeof(T) % kPack);
  for (int64_t trip = 0; trip < trips; ++trip) {
    const int64_t row = trip * per_trip + int64_t(blockIdx.x) * kGroups + g;
    const RowPeel pl = row < rows ? RowPeel::of<kPack>(phase, row, cols) : RowPeel{0, 0, 0, 0};
    const int64_t base = row * cols;
    Pack<T, kPack> held[kHeld > 0 ? kHeld : 1];
    float ss = 0.0f;
    auto add = [&](const Pack<T, kPack>& pk) {
      float v[kPack];
      Convert::to_floats(pk, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) ss += v[j] * v[j];
    };
    if constexpr (kHeld > 0) {
#pragma unroll
      for (int i = 0; i < kHeld; ++i)
        if (t + i * kGroup < pl.packs)
          held[i] = course::load_pack<T, kPack>(x + base + pl.head + (t + i * kGroup) * kPack);
#pragma unroll
      for (int i = 0; i < kHeld; ++i)
        if (t + i * kGroup < pl.packs) add(held[i]);
    } else {
      for (int q = t; q < pl.packs; q += kGroup) add(course::load_pack<T, kPack>(x + base + pl.head + q * kPack));
    }
    const int edge_col = t < pl.edges ? pl.edge_col(t) : -1;  // the peel's head and tail, one per thread
    const float edge = edge_col >= 0 ? course::to_float(x[base + edge_col]) : 0.0f;
    ss += edge * edge;
    const float rs = rsqrtf(group_sum2<kGroup, kGroups>(ss, 0.0f, trip).x / float(cols) + eps);
    if (row >= rows) continue;
    if (t == 0) rstd[row] = rs;
    // The row's packs of gamma all start `shift` elements past one of gamma's own boundaries.
    const int shift = (gamma_phase + pl.head) % kPack;
    with_shift<kPack>(shift, [&](auto s) {
      constexpr int kShift = decltype(s)::value;
      auto out = [&](const Pack<T, kPack>& pk, int64_t col) {
        float v[kPack], gm[kPack];
        Convert::to_floats(pk, v);
        Convert::to_floats(load_pack_cut<kShift, T, kPack>(gamma + col, gamma + cols), gm);
#pragma unroll
        for (int j = 0; j < kPack; ++j) v[j] = v[j] * rs * gm[j];
        Pack<T, kPack> o;
        Convert::from_floats(v, o);
        course::store_pack_vector<T, kPack>(y + base + col, o);
      };
      if constexpr (kHeld > 0) {
#pragma unroll
        for (int i = 0; i < kHeld; ++i)
          if (t + i * kGroup < pl.packs) out(held[i], pl.head + int64_t(t + i * kGroup) * kPack);
      } else {
        for (int q = t; q < pl.packs; q += kGroup)
          out(course::load_pack<T, kPack>(x + base + pl.head + q * kPack), pl.head + int64_t(q) * kPack);
      }
    });
    if (edge_col >= 0) y[base + edge_col] = course::from_float<T>(edge * rs * course::to_float(gamma[edge_col]));
  }
}
/// [rms_kernel]

/// Calls f(std::integral_constant<int, G>, std::integral_constant<int, Gs>, std::integral_constant<int, H>)
/// for the shape the row takes (row_groups.cuh).
template <typename F>
void with_shape(const Shape& s, F&& f) {
  using std::integral_constant;
  constexpr int B = kBlockThreads;
  if (s.held == 1) switch (s.group) {
      case 32:
        return f(integral_constant<int, 32>{}, integral_constant<int, B / 32>{}, integral_constant<int, 1>{});
      case 64:
        return f(integral_constant<int, 64>{}, integral_constant<int, B / 64>{}, integral_constant<int, 1>{});
      case 128:
        return f(integral_constant<int, 128>{}, integral_constant<int, B / 128>{}, integral_constant<int, 1>{});
      case 256:
        return f(integral_constant<int, 256>{}, integral_constant<int, B / 256>{}, integral_constant<int, 1>{});
      default:
        return f(integral_constant<int, 512>{}, integral_constant<int, 1>{}, integral_constant<int, 1>{});
    }
  if (s.held == 2) return f(integral_constant<int, 512>{}, integral_constant<int, 1>{}, integral_constant<int, 2>{});
  if (s.held == 4) return f(integral_constant<int, 512>{}, integral_constant<int, 1>{}, integral_constant<int, 4>{});
  if (s.held == 8) return f(integral_constant<int, 512>{}, integral_constant<int, 1>{}, integral_constant<int, 8>{});
  f(integral_constant<int, 512>{}, integral_constant<int, 1>{}, integral_constant<int, 0>{});
}

/// [forward_shape]
/// The forward's shape: it keeps no column sums between rows, so the fewest threads per row that
/// hold it in up to kHeldMax packs each: a warp per row up to 4 packs a lane (1024 16-bit columns,
/// 512 fp32), no barrier between a group's rows (group_sum2 of a warp is shuffles only), and up to
/// 4 loads in flight per thread; wider rows take groups of 64-512 threads with 4 packs each, and
/// past 2048 packs a group of 512 up to kForwardHeldMax packs a thread. H100: one or two packs a
/// thread (shape_for, the backward's) read 12-27% less at 512-6144 16-bit columns (TUNING.md).
inline Shape forward_shape_for(int64_t packs) {
  for (int g = 32; g <= 512; g *= 2)
    for (int h = 1; h <= kHeldMax; h *= 2)
      if (packs <= int64_t(g) * h) return {g, kBlockThreads / g, h};
  for (int h = 2 * kHeldMax; h <= kForwardHeldMax; h *= 2)
    if (packs <= 512 * h) return {512, 1, h};
  return {512, 1, 0};
}
/// [forward_shape]

/// with_shape for forward_shape_for's shapes.
template <typename F>
void with_forward_shape(const Shape& s, F&& f) {
  using std::integral_constant;
  constexpr int B = kBlockThreads;
  auto held = [&](auto group) {
    constexpr int G = decltype(group)::value;
    if (s.held == 1) return f(group, integral_constant<int, B / G>{}, integral_constant<int, 1>{});
    if (s.held == 2) return f(group, integral_constant<int, B / G>{}, integral_constant<int, 2>{});
    if (s.held == 4) return f(group, integral_constant<int, B / G>{}, integral_constant<int, 4>{});
    if constexpr (G == 512) {  // only a group of 512 holds more than kHeldMax packs
      if (s.held == 8) return f(group, integral_constant<int, 1>{}, integral_constant<int, 8>{});
      if (s.held == 16) return f(group, integral_constant<int, 1>{}, integral_constant<int, 16>{});
    }
    // held 0 (and any shape not above): a group of 512 reading the row twice, right for any row
    f(integral_constant<int, 512>{}, integral_constant<int, 1>{}, integral_constant<int, 0>{});
  };
  switch (s.group) {
    case 32:
      return held(integral_constant<int, 32>{});
    case 64:
      return held(integral_constant<int, 64>{});
    case 128:
      return held(integral_constant<int, 128>{});
    case 256:
      return held(integral_constant<int, 256>{});
    default:
      return held(integral_constant<int, 512>{});
  }
}

/// Calls f(std::integral_constant<int, kPack>, phase): 16-byte packs from each row's first boundary
/// when every tensor shares the peel's phase, else one element at a time (phase 0).
template <typename T, typename F>
void with_pack_phase(int64_t cols, std::initializer_list<std::pair<const void*, int>> ptrs, F&& f) {
  const int phase = common_phase<T>(cols, ptrs);
  if (phase >= 0) return f(std::integral_constant<int, kPackOf<T>>{}, phase);
  f(std::integral_constant<int, 1>{}, 0);
}

/// The longest row the chapter's kernels take: the peel counts a row's columns in `int`.
constexpr int64_t kMaxCols = course::kPeelMaxCols;

/// RMSNorm forward of a.x into a.y and a.rstd (Op::rms_norm).
template <typename T>
void rms_norm(const course::Args& a, cudaStream_t stream) {
  if (!course::check_op_args(a, course::Op::rms_norm, kMaxCols, "cols < 2^31 (the peel counts columns in int)")) return;
  with_pack_phase<T>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}}, [&](auto pack, int phase) {
    constexpr int kPack = decltype(pack)::value;
    auto launch = [&](auto group, auto groups, auto held) {
      constexpr int G = decltype(group)::value, Gs = decltype(groups)::value;
      const unsigned blocks = course::resident_grid(a.rows, Gs, G * Gs, 8);
      rms_norm_kernel<T, kPack, G, Gs, decltype(held)::value><<<blocks, G * Gs, 0, stream>>>(
          static_cast<const T*>(a.x), static_cast<const T*>(a.gamma), static_cast<T*>(a.y), static_cast<float*>(a.rstd),
          a.rows, a.cols, a.eps, phase);
      CUDA_CHECK_LAUNCH();
    };
    if constexpr (kPack == 1)  // one element at a time: the rare misaligned view, read twice
      launch(std::integral_constant<int, 512>{}, std::integral_constant<int, 1>{}, std::integral_constant<int, 0>{});
    else
      with_forward_shape(forward_shape_for(a.cols / kPack), launch);
  });
}

}  // namespace ch15
