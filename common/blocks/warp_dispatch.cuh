/// Taught in chapter 03 (warp-shuffle softmax).
/// @file warp_dispatch.cuh
/// @brief From runtime cols to the compile-time shape of a row held in registers: how many lanes
/// share a row (kWidth) and how many columns each lane holds (kColsPerThread). Chapter 03
/// explains it; the softmax, LayerNorm and later warp kernels all dispatch through it.
#pragma once

#include <cstdint>
#include <type_traits>

namespace course {

/// [dispatch]
/// cols <= 32 * kPack: one pack per lane, in the narrowest power-of-two group that covers the row.
template <int kPack, int kWidth, typename F>
void dispatch_narrow(int64_t cols, F&& f) {
  if constexpr (kWidth < 32) {
    if (cols > int64_t(kWidth) * kPack) return dispatch_narrow<kPack, kWidth * 2>(cols, f);
  }
  f(std::integral_constant<int, kPack>{}, std::integral_constant<int, kWidth>{});
}

/// Wider rows: a full warp, and the fewest columns per lane that cover the row. Each step adds a
/// pack (two packs past four, 16 columns past 32), to bound the number of kernels compiled.
/// kMaxColsPerThread: at most 32 (1024 columns) unless a kernel asks for more.
template <int kPack, int kColsPerThread, int kMaxColsPerThread = 32, typename F>
void dispatch_wide(int64_t cols, F&& f) {
  if constexpr (kColsPerThread < kMaxColsPerThread) {
    constexpr int kStep = kColsPerThread >= 32 ? 16 : (kColsPerThread / kPack < 4 ? kPack : 2 * kPack);
    constexpr int kNext = kColsPerThread + kStep < kMaxColsPerThread ? kColsPerThread + kStep : kMaxColsPerThread;
    if (cols > int64_t(kColsPerThread) * 32) return dispatch_wide<kPack, kNext, kMaxColsPerThread>(cols, f);
  }
  f(std::integral_constant<int, kColsPerThread>{}, std::integral_constant<int, 32>{});
}

/// Calls f(cols_per_thread, width), both std::integral_constant, with the smallest shape whose
/// width x cols_per_thread covers cols (cols <= 32 x kMaxColsPerThread, 1024 by default). Every
/// branch instantiates its own kernel: the register array's size and every loop bound are
/// compile-time constants.
template <int kPack, int kMaxColsPerThread = 32, typename F>
void dispatch_warp_shape(int64_t cols, F&& f) {
  if (cols <= 32 * kPack)
    dispatch_narrow<kPack, 1>(cols, f);
  else
    dispatch_wide<kPack, 2 * kPack, kMaxColsPerThread>(cols, f);
}
/// [dispatch]

/// [rows_per_group]
/// Rows a group of lanes takes at once. A lane that holds little of a row takes several rows, so
/// that it has more loads in flight: four rows while it loads at most two packs and 8 columns of a
/// row, two rows up to four packs and 16 columns, else one; never more than kMaxRows.
/// H100, chapter 04 f32: four rows instead of two +2-4% at 64-256 columns, -1% at 512 (its TUNING.md).
template <int kPack, int kColsPerThread, int kMaxRows = 4>
constexpr int rows_per_group() {
  constexpr int kPacks = kColsPerThread / kPack;
  if (kMaxRows >= 4 && kPacks <= 2 && kColsPerThread <= 8) return 4;
  if (kMaxRows >= 2 && kPacks <= 4 && kColsPerThread <= 16) return 2;
  return 1;
}
/// [rows_per_group]

/// The same with at least kMinPacks packs per lane for short rows: narrower groups, each lane
/// holding more of the row (fewer merge rounds per row, more rows per warp). Rows of kMinPacks
/// packs or less take the narrowest group (one lane).
template <int kPack, int kMinPacks, int kMaxColsPerThread = 32, typename F>
void dispatch_warp_shape_min(int64_t cols, F&& f) {
  if constexpr (kMinPacks == 1) {
    dispatch_warp_shape<kPack, kMaxColsPerThread>(cols, f);
  } else {
    if (cols <= 32 * kPack * kMinPacks)
      dispatch_narrow<kPack * kMinPacks, 1>(cols, [&](auto, auto width) {
        f(std::integral_constant<int, kPack * kMinPacks>{}, width);
      });
    else
      dispatch_wide<kPack, 2 * kPack, kMaxColsPerThread>(cols, f);
  }
}
}  // namespace course
