/// @file launch_math.h
/// @brief Launch-configuration arithmetic, host-side and unit-tested.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace course {

/// ceil(a / b) for a >= 0, b > 0.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Rounds a up to a multiple of b.
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

/// Blocks for a grid-stride kernel over `work_items` items handled `items_per_block` per
/// block-iteration: as many as the work needs, but no more than `waves` full waves of
/// resident blocks (`sm_count * blocks_per_sm` each), and at least 1.
constexpr int64_t grid_blocks(int64_t work_items, int64_t items_per_block, int sm_count, int blocks_per_sm,
                              int waves = 32) {
  int64_t needed = ceil_div(std::max<int64_t>(work_items, 1), items_per_block);
  int64_t cap = static_cast<int64_t>(sm_count) * blocks_per_sm * waves;
  return std::max<int64_t>(1, std::min(needed, cap));
}

/// Largest number of elements per vector access (a power of two <= max_pack) such that an
/// access of that many `elem_bytes`-byte elements is aligned at `addr` (every pointer given)
/// and divides `count`.
inline int max_aligned_pack(int elem_bytes, int max_pack, int64_t count, std::initializer_list<const void*> ptrs) {
  int pack = max_pack;
  while (pack > 1) {
    bool ok = count % pack == 0;
    for (const void* p : ptrs)
      ok = ok && reinterpret_cast<uintptr_t>(p) % (static_cast<uintptr_t>(pack) * elem_bytes) == 0;
    if (ok) break;
    pack /= 2;
  }
  return pack;
}

}  // namespace course
