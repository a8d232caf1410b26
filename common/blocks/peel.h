/// Taught in chapter 12 (the production softmax); chapter 09's LayerNorm uses it too.
/// @file peel.h
/// @brief The peel. Rows whose length is not a whole number of 16-byte packs start, most of
/// them (all but one in kPack for an odd length), part-way into a pack; read whole, such a row
/// could only be read one element at a time. Peeled, it is read in packs from its first pack
/// boundary: its `head` before that boundary and its tail after the last whole pack (each under
/// kPack elements) are read one element at a time, by as many threads. Host and device code: the
/// kernels use it, and a unit test checks on the host that the packs and the edges cover every
/// column once, each pack on a boundary (tests/unit/test_softmax_policy.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>

#if defined(__CUDACC__)
#define COURSE_HOST_DEVICE __host__ __device__
#else
#define COURSE_HOST_DEVICE
#endif

namespace course {

/// RowPeel counts a row's columns in `int`: longer rows (8 GB of fp32 in one row) are not peeled.
constexpr int64_t kPeelMaxCols = 2147483647;

/// [peel]
/// The split of row `row` of `cols` columns into head, packs and tail, for tensors whose element 0
/// lies `phase` elements past a kPack-element boundary (pick_phase, below). Pack p covers columns
/// head + p * kPack ... + kPack - 1; edge i (0 <= i < edges) is column edge_col(i): the head's
/// columns first, then the tail's.
struct RowPeel {
  int head;   ///< columns before the first boundary (all of them in a row shorter than that)
  int packs;  ///< whole packs from there
  int edges;  ///< head + tail: under 2 * kPack
  int tail0;  ///< the first column of the tail: head + packs * kPack

  template <int kPack>
  COURSE_HOST_DEVICE static RowPeel of(int phase, int64_t row, int64_t cols) {
    const int64_t to_boundary = (kPack - (phase + row * cols) % kPack) % kPack;
    const int head = int(to_boundary < cols ? to_boundary : cols);
    const int packs = int((cols - head) / kPack);
    const int tail0 = head + packs * kPack;
    return {head, packs, head + int(cols - tail0), tail0};
  }
  COURSE_HOST_DEVICE int edge_col(int i) const { return i < head ? i : tail0 + (i - head); }
};
/// [peel]

/// [pick_phase]
/// Where a row that is not a whole number of packs can still be read in packs: the element offset,
/// 0 to kMax - 1, of every pointer from the kMax-element boundary before it, when it is the same
/// for all of them (pointer, element bytes) and each is aligned to its element; -1 otherwise. Row
/// r then starts (phase + r * cols) % kMax elements past a boundary of every tensor at once, so
/// one head per row serves them all. Rows of more than kPeelMaxCols columns are not peeled (-1).
template <int kMax>
inline int pick_phase(int64_t cols, std::initializer_list<std::pair<const void*, int>> ptrs) {
  if (cols > kPeelMaxCols) return -1;
  int phase = -1;
  for (auto [p, bytes] : ptrs) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (a % uintptr_t(bytes) != 0) return -1;
    const int ph = int((a / uintptr_t(bytes)) % kMax);
    if (phase >= 0 && ph != phase) return -1;
    phase = ph;
  }
  return phase;
}
/// [pick_phase]

}  // namespace course
