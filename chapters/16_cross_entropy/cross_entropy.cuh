/// @file cross_entropy.cuh
/// @brief Chapter 16 (first version, #41): cross-entropy over a large vocabulary. A block per row:
/// the forward finds the row's logsumexp in one read (chapter 08's online (max, sum) pairs) and
/// the target's logit; the backward writes dlogits from the saved logsumexp; the fused kernel does
/// both from one read where the row fits in shared memory, two reads otherwise. The reduction of the
/// per-row losses (and the count of rows not ignored, a mean's divisor) is a second small kernel
/// that adds in a fixed order: the same bits on every run.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "08_online_softmax/online_softmax.cuh"
#include "12_production_softmax/paths_common.cuh"
#include "blocks/convert.cuh"
#include "blocks/occupancy.cuh"
#include "blocks/pack.cuh"
#include "blocks/peel.h"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/ops.h"

namespace ch16 {

using course::MaxSum;
using course::Pack;
using course::RowPeel;

constexpr int kBlock = 512;  // a block per vocabulary row: 32K-256K columns, 8-64 packs a thread

/// The scalars every kernel needs.
struct Ce {
  int64_t rows, cols, ignore_index;
  float smoothing, z_loss;
};

/// Calls f(p, values, n) for each piece of row `row` this thread owns: its packs (kPack values
/// from column p) from the row's first boundary, then one edge element of the peel (blocks/peel.h).
/// kUnroll packs are loaded before any is used: a block alone on its SM (a long row cached) needs
/// several 16-byte loads in flight per thread (chapter 12's for_each_pack: 4 of fp32, 2 of 16-bit).
template <typename T, int kPack, typename F>
__device__ __forceinline__ void for_each_piece(const T* xr, const RowPeel& pl, F&& f) {
  constexpr int kUnroll = kPack >= 8 ? 2 : 4;
  for (int64_t q0 = threadIdx.x; q0 < pl.packs; q0 += int64_t(kBlock) * kUnroll) {
    Pack<T, kPack> held[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (q0 + u * kBlock < pl.packs) held[u] = course::load_pack<T, kPack>(xr + pl.head + (q0 + u * kBlock) * kPack);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (q0 + u * kBlock < pl.packs) {
        float v[kPack];
        course::ScalarConvert<T>::to_floats(held[u], v);
        f(pl.head + (q0 + u * kBlock) * kPack, v, kPack);
      }
  }
  if (int(threadIdx.x) < pl.edges) {
    const int64_t col = pl.edge_col(int(threadIdx.x));
    float v = course::to_float(xr[col]);
    f(col, &v, 1);
  }
}

/// The row's (max, sum of exp) and, with label smoothing, the sum of its logits, over the block;
/// each piece is also passed to keep(col, values, n) (the fused kernel's cache; a no-op elsewhere).
struct RowSums {
  MaxSum ms;
  float sum_x;
  float x_t;  ///< the target's logit, taken in pass 1 by the thread whose piece holds it
};
struct KeepNothing {
  __device__ void operator()(int64_t, const float*, int) const {}
};
/// `target`: the row's class; `slot`: 0 or 1, alternating row by row (the shared x_t of one row is
/// read while a faster thread may already write the next row's: the merge's barriers keep every
/// thread within one row of the others). Taking x_t in pass 1 lets dx be written over the logits.
template <typename T, int kPack, typename Keep = KeepNothing>
__device__ RowSums row_sums(const T* xr, const RowPeel& pl, bool smoothing, int64_t target, int slot, Keep keep = {}) {
  __shared__ float x_t[2];
  MaxSum t;
  float sx = 0.0f;
  for_each_piece<T, kPack>(xr, pl, [&](int64_t col, const float* v, int n) {
    if (n == kPack) {
      course::online_update<kPack>(t, v);
    } else {
      course::online_update<1>(t, v);
    }
    for (int j = 0; j < n; ++j) {
      sx += v[j];
      if (col + j == target) x_t[slot] = v[j];
    }
    keep(col, v, n);
  });
  const MaxSum r = course::block_merge<kBlock>(t);
  const float s = smoothing ? ch12::block_allreduce<kBlock>(sx, ch12::Sum{}, 0.0f) : 0.0f;
  return {r, s, x_t[slot]};
}

/// logsumexp from the pair: NaN for a row of -inf only (as the float64 reference: log_softmax is
/// NaN there) and for a row holding NaN or +inf.
__device__ __forceinline__ float lse_of(MaxSum r) { return r.m == -INFINITY ? NAN : r.m + logf(r.d); }

/// The row's loss from its lse: (1 - e)(lse - x_t) + e (lse - mean(x)) + z lse^2.
__device__ __forceinline__ float loss_of(const Ce& c, float l, float x_t, float sum_x) {
  float v = (1.0f - c.smoothing) * (l - x_t);
  if (c.smoothing != 0.0f) v += c.smoothing * (l - sum_x / float(c.cols));
  if (c.z_loss != 0.0f) v += c.z_loss * l * l;
  return v;
}

/// The class of a row's target: -1 ignored, -2 outside [0, cols) (its outputs NaN: never a wrong loss).
__device__ __forceinline__ int64_t row_class(int32_t t, const Ce& c) {
  if (t == c.ignore_index) return -1;
  return t >= 0 && t < c.cols ? t : -2;
}

/// [forward_kernel]
template <typename T, int kPack>
__global__ void __launch_bounds__(kBlock)
    ce_forward_kernel(const T* __restrict__ x, const int32_t* __restrict__ target, Ce c, int phase,
                      float* __restrict__ loss, float* __restrict__ lse) {
  int slot = 0;
  for (int64_t row = blockIdx.x; row < c.rows; row += gridDim.x) {
    const int64_t t = row_class(target[row], c);  // the same in every thread: the branches stay uniform
    if (t < 0) {                                  // ignored: 0; a target outside [0, cols): NaN, the row not read
      if (threadIdx.x == 0) loss[row] = lse[row] = t == -1 ? 0.0f : NAN;
      continue;
    }
    const T* xr = x + row * c.cols;
    const RowSums s = row_sums<T, kPack>(xr, RowPeel::of<kPack>(phase, row, c.cols), c.smoothing != 0.0f, t, slot);
    slot ^= 1;
    if (threadIdx.x == 0) {
      const float l = lse_of(s.ms);
      loss[row] = loss_of(c, l, s.x_t, s.sum_x);
      lse[row] = l;
    }
  }
}
/// [forward_kernel]

/// dlogits of one piece: (softmax (1 + 2 z lse) - (1 - e) [col == t] - e / V) x scale.
template <typename T, int kPack>
__device__ __forceinline__ void write_dx(T* dxr, const float* v, int n, int64_t col, int64_t t, float l, float scale,
                                         const Ce& c) {
  const float zfac = 1.0f + 2.0f * c.z_loss * l, off = c.smoothing / float(c.cols);
  float d[kPack];
  for (int j = 0; j < n; ++j) d[j] = scale * (expf(v[j] - l) * zfac - (col + j == t ? 1.0f - c.smoothing : 0.0f) - off);
  if (n == kPack) {
    Pack<T, kPack> pk;
    course::ScalarConvert<T>::from_floats(d, pk);
    course::store_pack_vector<T, kPack>(dxr + col, pk);
  } else {
    dxr[col] = course::from_float<T>(d[0]);
  }
}

/// Writes a row of zeros (an ignored row's dlogits) or NaN (a target outside [0, cols)).
template <typename T>
__device__ __forceinline__ void fill_row(T* dxr, int64_t cols, float v) {
  for (int64_t j = threadIdx.x; j < cols; j += kBlock) dxr[j] = course::from_float<T>(v);
}

/// [backward_kernel]
/// Each row's upstream gradient dloss[row], over the count of rows not ignored (count, on the
/// device) for a mean.
template <typename T, int kPack>
__global__ void __launch_bounds__(kBlock)
    ce_backward_kernel(const T* x, const int32_t* __restrict__ target, const float* __restrict__ lse,
                       const float* __restrict__ dloss, const float* __restrict__ count, bool mean, Ce c, int phase,
                       T* dx) {
  const float per = mean ? 1.0f / *count : 1.0f;
  for (int64_t row = blockIdx.x; row < c.rows; row += gridDim.x) {
    const int64_t t = row_class(target[row], c);
    T* dxr = dx + row * c.cols;
    if (t < 0) {
      fill_row(dxr, c.cols, t == -1 ? 0.0f : NAN);
      continue;
    }
    const float l = lse[row], scale = dloss[row] * per;
    for_each_piece<T, kPack>(
        x + row * c.cols, RowPeel::of<kPack>(phase, row, c.cols),
        [&](int64_t col, const float* v, int n) { write_dx<T, kPack>(dxr, v, n, col, t, l, scale, c); });
  }
}
/// [backward_kernel]

/// [fused_kernel]
/// x and dx may be one buffer (dlogits written over the logits): each thread rewrites only the
/// pieces it has just read, after the merge's barrier (every read of pass 1 done), and x_t was
/// taken in pass 1. Loss and dlogits of each row from one read where it is cached (kCached: the row kept in shared
/// memory as stored while the first pass reads it, the second pass reading it back), else two reads.
/// The cache keeps the row's alignment: column col at cache[shift + col], shift putting the row's
/// first pack boundary on a 16-byte one. g0: the reduced loss's upstream gradient (over count for a mean).
template <typename T, int kPack, bool kCached>
__global__ void __launch_bounds__(kBlock)
    ce_fused_kernel(const T* x, const int32_t* __restrict__ target, float g0, const float* __restrict__ count,
                    bool mean, Ce c, int phase, T* dx, float* __restrict__ loss) {
  extern __shared__ __align__(16) unsigned char smem[];
  const float scale = mean ? g0 / *count : g0;
  int slot = 0;
  for (int64_t row = blockIdx.x; row < c.rows; row += gridDim.x) {
    const int64_t t = row_class(target[row], c);
    T* dxr = dx + row * c.cols;
    if (t < 0) {
      fill_row(dxr, c.cols, t == -1 ? 0.0f : NAN);
      if (threadIdx.x == 0) loss[row] = t == -1 ? 0.0f : NAN;
      continue;
    }
    const T* xr = x + row * c.cols;
    const RowPeel pl = RowPeel::of<kPack>(phase, row, c.cols);
    T* cr = reinterpret_cast<T*>(smem) + (kPack - pl.head % kPack) % kPack;  // cr + head: 16-byte aligned
    if (kCached) __syncthreads();  // the previous row's second pass is done with the cache
    auto keep = [&](int64_t col, const float* v, int n) {
      if constexpr (kCached) {
        if (n == kPack) {
          Pack<T, kPack> pk;
          course::ScalarConvert<T>::from_floats(v, pk);  // exact: the values came from T
          course::store_pack<T, kPack>(cr + col, pk);
        } else {
          cr[col] = course::from_float<T>(v[0]);
        }
      }
    };
    const RowSums s = row_sums<T, kPack>(xr, pl, c.smoothing != 0.0f, t, slot, keep);
    slot ^= 1;
    const float l = lse_of(s.ms);
    if (threadIdx.x == 0) loss[row] = loss_of(c, l, s.x_t, s.sum_x);
    for_each_piece<T, kPack>(kCached ? cr : xr, pl, [&](int64_t col, const float* v, int n) {
      write_dx<T, kPack>(dxr, v, n, col, t, l, scale, c);
    });
  }
}
/// [fused_kernel]

/// [reduce_kernel]
/// The count of rows not ignored, and the reduction of the per-row losses (loss may be null: the
/// count alone), one block adding in a fixed order: thread i takes rows i, i + 1024, ..., the block
/// adds the threads' sums by a fixed tree. A mean divides by the count (0 / 0: NaN when every row is
/// ignored, as PyTorch); none and sum give the sum.
constexpr int kReduceBlock = 1024;
__global__ void __launch_bounds__(kReduceBlock)
    ce_reduce_kernel(const int32_t* __restrict__ target, const float* __restrict__ loss, int64_t rows,
                     int64_t ignore_index, bool mean, float* __restrict__ count, float* __restrict__ reduced) {
  __shared__ unsigned long long counts[kReduceBlock / 32];
  unsigned long long n = 0;  // counted exactly: a float stops counting at 2^24 rows
  float s = 0.0f;
  for (int64_t r = threadIdx.x; r < rows; r += kReduceBlock) {
    n += target[r] != ignore_index;
    if (loss) s += loss[r];
  }
  for (int offset = 16; offset > 0; offset /= 2) n += __shfl_xor_sync(0xffffffffu, n, offset);
  if (threadIdx.x % 32 == 0) counts[threadIdx.x / 32] = n;
  s = ch12::block_allreduce<kReduceBlock>(s, ch12::Sum{}, 0.0f);  // its barriers publish `counts`
  if (threadIdx.x != 0) return;
  n = 0;
  for (int w = 0; w < kReduceBlock / 32; ++w) n += counts[w];
  if (count) *count = float(n);
  if (reduced) *reduced = mean ? s / float(n) : s;
}
/// [reduce_kernel]

}  // namespace ch16
