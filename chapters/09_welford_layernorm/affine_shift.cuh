/// @file affine_shift.cuh
/// @brief Chapter 09: gamma and beta shifted once per row head, so that a peeled row (blocks/peel.h)
/// loads its packs of them aligned. A small kernel before the LayerNorm writes the table into the
/// op's workspace; the warp kernel (layer_norm.cuh) reads it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "harness/errors.h"
#include "harness/ops.h"

namespace ch09 {

/// [affine_shift]
/// A peeled row's packs start `head` columns in (0 <= head < kPack), so its packs of gamma and
/// beta start (their phase + head) % kPack elements past their own boundaries: loaded as they
/// lie, a pack costs a load per element. Every row of one head needs the same shifted copy, and there are
/// at most kPack heads: entry h of the table holds gamma (and entry kPack + h beta) from column h
/// on, from an aligned start, so that row pack p of a row of head h is entry h's pack p, one
/// aligned 16-byte load. Only the heads rows can have are written: row r's head is
/// -(phase + r * cols) mod kPack, a multiple of step = gcd(cols, kPack) less the phase, so
/// (head + phase) % step == 0 (gcd(cols % kPack, kPack) is the same number).
template <int kPack>
struct AffineShift {
  int64_t stride;  ///< elements per entry: cols rounded up to a whole pack

  static AffineShift of(int64_t cols) { return {(cols + kPack - 1) / kPack * kPack}; }
  int64_t elems() const { return 2 * kPack * stride; }
  template <typename T>
  __device__ const T* gamma(const T* table, int head) const { return table + head * stride; }
  template <typename T>
  __device__ const T* beta(const T* table, int head) const { return table + (kPack + head) * stride; }
};

template <typename T, int kPack>
__global__ void __launch_bounds__(256)
    affine_shift_kernel(const T* __restrict__ gamma, const T* __restrict__ beta, T* __restrict__ table,
                        int64_t cols, AffineShift<kPack> shift, int step, int phase) {
  const int entry = blockIdx.y, head = entry % kPack;  // blockIdx.y: gamma's kPack entries, then beta's
  if ((head + phase) % step != 0) return;                 // no row has this head
  const T* src = (entry < kPack ? gamma : beta) + head;
  T* dst = table + entry * shift.stride;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < cols - head; j += int64_t(gridDim.x) * blockDim.x)
    dst[j] = src[j];
}
/// [affine_shift]

// [shift_rule]
// Where the warp kernel takes the table: 16-bit rows (fp32 read level with it at 1023 columns),
// in ops of x and y together of at least 64 MB, where the table's own kernel (2-3 us) is paid
// back. H200, 49152 rows: f16 1023 71 -> 84% of the matched copy, 2047 69 -> 90 (TUNING.md).
constexpr int64_t kAffineShiftMinBytes = int64_t(64) << 20;
template <typename T>
bool use_affine_shift(const course::Args& a) {
  return sizeof(T) == 2 && a.cols % (16 / sizeof(T)) != 0 && 2 * a.rows * a.cols * int64_t(sizeof(T)) >= kAffineShiftMinBytes;
}
// [shift_rule]

/// The workspace the warp path asks for where it may take the table (16-bit rows that are not
/// whole 16-byte packs); 0 else.
template <typename T>
size_t affine_shift_bytes(int64_t cols) {
  constexpr int kPack = 16 / sizeof(T);
  return sizeof(T) != 2 || cols % kPack == 0 ? 0 : size_t(AffineShift<kPack>::of(cols).elems()) * sizeof(T);
}

/// Writes the table into a.workspace for rows of peel phase `phase` (clear error where the
/// workspace is missing or short) and returns it.
template <typename T, int kPack>
const T* launch_affine_shift(const course::Args& a, int phase, cudaStream_t stream) {
  const AffineShift<kPack> shift = AffineShift<kPack>::of(a.cols);
  const size_t need = size_t(shift.elems()) * sizeof(T);
  course::require(a.workspace != nullptr && a.workspace_bytes >= need, "layer_norm at cols = ", a.cols,
                  " (not whole 16-byte packs) needs a workspace of ", need, " bytes for gamma and beta shifted per row head",
                  " (ch09::affine_shift_bytes), got ", a.workspace_bytes);
  course::require(reinterpret_cast<uintptr_t>(a.workspace) % 16 == 0, "the workspace must be 16-byte aligned");
  T* table = static_cast<T*>(a.workspace);
  const int step = std::gcd(int(a.cols % kPack), kPack);
  const unsigned x_blocks = unsigned(std::min<int64_t>((a.cols + 255) / 256, 64));
  affine_shift_kernel<T, kPack><<<dim3(x_blocks, 2 * kPack), 256, 0, stream>>>(
      static_cast<const T*>(a.gamma), static_cast<const T*>(a.beta), table, a.cols, shift, step, phase);
  CUDA_CHECK_LAUNCH();
  return table;
}

}  // namespace ch09
