/// @file peel.h
/// @brief Chapter 12: the peel. A row whose length is not a whole number of 16-byte packs starts,
/// on every row but one in kPack, part-way into a pack; read whole, it could only be read one
/// element at a time. Peeled, it is read in packs from its first pack boundary: its `head` before
/// that boundary and its tail after the last whole pack (each under kPack elements) are read one
/// element at a time, by as many threads. Host and device code: the kernels use it, and a unit
/// test checks on the host that the packs and the edges cover every column once, each pack on a
/// boundary (tests/unit/test_softmax_policy.cpp).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CH12_HOST_DEVICE __host__ __device__
#else
#define CH12_HOST_DEVICE
#endif

namespace ch12 {

/// [peel]
/// The split of row `row` of `cols` columns into head, packs and tail, for tensors whose element 0
/// lies `phase` elements past a kPack-element boundary (detail::pick_phase). Pack p covers columns
/// head + p * kPack ... + kPack - 1; edge i (0 <= i < edges) is column edge_col(i): the head's
/// columns first, then the tail's.
struct RowPeel {
  int head;   ///< columns before the first boundary (all of them in a row shorter than that)
  int packs;  ///< whole packs from there
  int edges;  ///< head + tail: under 2 * kPack
  int tail0;  ///< the first column of the tail: head + packs * kPack

  template <int kPack>
  CH12_HOST_DEVICE static RowPeel of(int phase, int64_t row, int64_t cols) {
    const int64_t to_boundary = (kPack - (phase + row * cols) % kPack) % kPack;
    const int head = int(to_boundary < cols ? to_boundary : cols);
    const int packs = int((cols - head) / kPack);
    const int tail0 = head + packs * kPack;
    return {head, packs, head + int(cols - tail0), tail0};
  }
  CH12_HOST_DEVICE int edge_col(int i) const { return i < head ? i : tail0 + (i - head); }
};
/// [peel]

}  // namespace ch12
