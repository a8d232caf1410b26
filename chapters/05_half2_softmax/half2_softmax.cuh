/// @file half2_softmax.cuh
/// @brief Chapter 05: chapter 04's packed warp softmax for fp16 and bf16 storage, converting
/// through `half2` / `nv_bfloat162` pairs instead of one element at a time.
///
/// The loads, the layout and the arithmetic (fp32) are chapter 04's; only the conversions between
/// the pack and the registers change. What they could buy is instructions, not bytes; on sm_90 the
/// compiler already pairs chapter 04's narrowing conversions, and the SASS of the two kernels has
/// the same conversion instructions (the lesson).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "blocks/convert.cuh"
#include "blocks/pack.cuh"
#include "blocks/warp.cuh"
#include "blocks/warp_dispatch.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"

namespace ch05 {

/// [paired]
/// A pack converted pair by pair (course::Pair, convert.cuh): in PTX one paired instruction per
/// two elements on the store side, two scalar ones on the load side. A pack of one element (odd
/// cols or an odd offset) converts alone.
template <typename T>
struct PairedConvert {
  template <int N>
  __device__ __forceinline__ static void to_floats(const course::Pack<T, N>& p, float* out) {
    if constexpr (N == 1) {
      out[0] = course::to_float(p.elem[0]);
    } else {
      const auto* pairs = reinterpret_cast<const typename course::Pair<T>::T2*>(p.elem);
#pragma unroll
      for (int j = 0; j < N / 2; ++j) {
        const float2 f = course::Pair<T>::to_float2(pairs[j]);
        out[2 * j] = f.x;
        out[2 * j + 1] = f.y;
      }
    }
  }
  template <int N>
  __device__ __forceinline__ static void from_floats(const float* in, course::Pack<T, N>& p) {
    if constexpr (N == 1) {
      p.elem[0] = course::from_float<T>(in[0]);
    } else {
      auto* pairs = reinterpret_cast<typename course::Pair<T>::T2*>(p.elem);
#pragma unroll
      for (int j = 0; j < N / 2; ++j) pairs[j] = course::Pair<T>::from_float2(make_float2(in[2 * j], in[2 * j + 1]));
    }
  }
};
/// [paired]

/// Threads per block: four warps, any number of groups of lanes.
/// H100, chapter 12's warp kernel: 64 or 256 threads no better than 128 at short rows (chapter 03's TUNING.md).
constexpr int kBlock = 128;
/// The longest row the kernel holds: 32 lanes x 32 registers.
constexpr int64_t kMaxCols = 1024;

/// [warp_kernel]
/// Chapter 04's kernel with each pack converted by PairedConvert.
template <typename T, int kPack, int kColsPerThread, int kWidth, int kRows>
__global__ void __launch_bounds__(kBlock)
    softmax_warp_half2_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols) {
  static_assert(kColsPerThread % kPack == 0, "whole packs per lane");
  constexpr int kPacks = kColsPerThread / kPack;
  const int lane = threadIdx.x % kWidth;
  const unsigned mask = course::group_mask<kWidth>();
  const int64_t group = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWidth;
  const int64_t row_step = int64_t(gridDim.x) * blockDim.x / kWidth * kRows;

  float v[kRows][kColsPerThread];  // the rows, in registers: every index is a compile-time constant
  for (int64_t row0 = group * kRows; row0 < rows; row0 += row_step) {
    float m[kRows], s[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {  // load, and each lane's partial max
      const int64_t row = row0 + r;
      m[r] = -INFINITY;
      /// [pack_load]
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t col = (int64_t(p) * kWidth + lane) * kPack;
        float* vp = &v[r][p * kPack];
        if (row < rows && col < cols) {  // cols is a multiple of kPack: a pack is all in or all out
          PairedConvert<T>::to_floats(course::load_pack<T, kPack>(x + row * cols + col), vp);
        } else {
#pragma unroll
          for (int j = 0; j < kPack; ++j) vp[j] = -INFINITY;  // padding: exp gives 0
        }
#pragma unroll
        for (int j = 0; j < kPack; ++j) m[r] = fmaxf(m[r], vp[j]);
      }
      /// [pack_load]
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) m[r] = course::group_max<kWidth>(m[r], mask);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      s[r] = 0;
#pragma unroll
      for (int i = 0; i < kColsPerThread; ++i) {
        v[r][i] = expf(v[r][i] - m[r]);
        s[r] += v[r][i];
      }
    }
    float inv[kRows];  // one division per row; a multiply per element (within 1 ulp of dividing)
#pragma unroll
    for (int r = 0; r < kRows; ++r) inv[r] = 1.0f / course::group_sum<kWidth>(s[r], mask);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {  // normalize and store
      const int64_t row = row0 + r;
      /// [pack_store]
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t col = (int64_t(p) * kWidth + lane) * kPack;
        if (row < rows && col < cols) {
          float out[kPack];
#pragma unroll
          for (int j = 0; j < kPack; ++j) out[j] = v[r][p * kPack + j] * inv[r];
          course::Pack<T, kPack> pk;
          PairedConvert<T>::from_floats(out, pk);
          course::store_pack<T, kPack>(y + row * cols + col, pk);
        }
      }
      /// [pack_store]
    }
  }
}
/// [warp_kernel]

/// [launch]
template <typename T, int kPack, int kColsPerThread, int kWidth>
void launch_softmax_warp_half2(const course::Args& a, cudaStream_t stream) {
  // Several rows per group when a row gives each lane only a few loads (warp_dispatch.cuh).
  constexpr int kRows = course::rows_per_group<kPack, kColsPerThread>();
  constexpr int kRowsPerBlock = kBlock / kWidth * kRows;
  // At most 8 waves of blocks. H100: 64 waves were level on chapter 12's warp grids (chapter 03's TUNING.md).
  const unsigned blocks = course::resident_grid(a.rows, kRowsPerBlock, kBlock, 8);
  softmax_warp_half2_kernel<T, kPack, kColsPerThread, kWidth, kRows>
      <<<blocks, kBlock, 0, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.rows, a.cols);
  CUDA_CHECK_LAUNCH();
}

/// Softmax of fp16/bf16 rows, cols <= 1024, in packs of up to 8 (16 bytes) as chapter 04,
/// converted in pairs.
template <typename T>
void softmax_warp_half2(const course::Args& a, cudaStream_t stream) {
  if (!course::check_rowwise_args(a, kMaxCols, "the warp path holds cols <= 1024 in registers")) return;
  static_assert(sizeof(T) == 2, "paired conversions are for 16-bit storage");
  course::with_widest_pack<T>(a.cols, a.x, a.y, [&](auto pack) {
    constexpr int kPack = decltype(pack)::value;
    course::dispatch_warp_shape<kPack>(a.cols, [&](auto cols_per_thread, auto width) {
      launch_softmax_warp_half2<T, kPack, decltype(cols_per_thread)::value, decltype(width)::value>(a, stream);
    });
  });
}
/// [launch]

}  // namespace ch05
