/// @file cross_entropy.cuh
/// @brief Chapter 16: cross-entropy over a large vocabulary. The forward finds each row's
/// logsumexp in one read (chapter 08's online (max, sum) pairs) and the target's logit; the
/// backward writes dlogits from the saved logsumexp; the fused kernel does both from one read where
/// the row fits in shared memory (a block's, or a cluster's: chapter 13), two reads otherwise. The
/// reduction of the per-row losses (and the count of rows not ignored, a mean's divisor) is a second
/// small kernel that adds in a fixed order: the same bits on every run.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "08_online_softmax/online_softmax.cuh"
#include "12_production_softmax/paths_common.cuh"
#include "13_hopper_softmax/paths_cluster.cuh"
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

constexpr int kLargeBlock = 512;  // rows of more than kSmallRowPacks packs: 8-128 packs a thread at 32K-256K columns
constexpr int kSmallBlock = 128;  // rows of up to kSmallRowPacks packs: 16 blocks an SM
constexpr int64_t kSmallRowPacks = 2048;
// Blocks of kLargeBlock an SM that the fused kernels' registers allow: 3 (the lesson's table), at most
// 40 registers a thread. H100: 47-50 registers, 2 blocks an SM, read 7-18% less (TUNING.md).
constexpr int kFusedMinBlocks = 3;
template <int kBlock>
constexpr int fused_min_blocks() { return kBlock == kLargeBlock ? kFusedMinBlocks : 1; }

/// exp(x): the SFU's ex2 for 16-bit logits (chapter 12's row_exp, within their rounding); expf for fp32.
template <typename T>
__device__ __forceinline__ float ce_exp(float x) {
  return ch12::row_exp<sizeof(T) == 2>(x);
}

/// Chapter 08's online_update with ce_exp: one rescale per pack.
template <typename T, int kPack>
__device__ __forceinline__ void online_update(MaxSum& t, const float* v) {
  float pack_max = v[0];
#pragma unroll
  for (int j = 1; j < kPack; ++j) pack_max = fmaxf(pack_max, v[j]);
  const float m = fmaxf(t.m, pack_max);
  if (m == -INFINITY) {  // only -inf so far (which adds 0) or NaN (which must poison the sum)
#pragma unroll
    for (int j = 0; j < kPack; ++j)
      if (isnan(v[j])) t.d = NAN;
    return;
  }
  float d = t.d * ce_exp<T>(t.m - m);
#pragma unroll
  for (int j = 0; j < kPack; ++j) d += ce_exp<T>(v[j] - m);
  t = {m, d};
}

/// The scalars every kernel needs.
struct Ce {
  int64_t rows, cols, ignore_index;
  float smoothing, z_loss;
};

/// [for_each_piece]
/// Calls f(p, col, values, n, raw) for each piece of row `row` this thread owns: its packs
/// first ... first + count - 1 (p counted from `first`, kPack values from column col; raw: the pack
/// as loaded), then, when `edges` is set, one edge element of the peel (blocks/peel.h; p = -1,
/// raw null). The whole row is
/// first = 0, count = pl.packs, edges; a cluster's block takes a chunk of it. kUnroll packs are
/// loaded before any is used: a block alone on its SM (a long row cached) needs several 16-byte
/// loads in flight per thread (chapter 12's for_each_pack: 4 of fp32, 2 of 16-bit).
template <typename T, int kPack, int kBlock, typename F>
__device__ __forceinline__ void for_each_piece(const T* xr, const RowPeel& pl, int64_t first, int64_t count,
                                               bool edges, F&& f) {
  constexpr int kUnroll = kPack >= 8 ? 2 : 4;
  const T* base = xr + pl.head + first * kPack;
  for (int64_t q0 = threadIdx.x; q0 < count; q0 += int64_t(kBlock) * kUnroll) {
    Pack<T, kPack> held[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (q0 + u * kBlock < count) held[u] = course::load_pack<T, kPack>(base + (q0 + u * kBlock) * kPack);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (q0 + u * kBlock < count) {
        const int64_t p = q0 + u * kBlock;
        float v[kPack];
        course::ScalarConvert<T>::to_floats(held[u], v);
        f(p, pl.head + (first + p) * kPack, v, kPack, &held[u]);
      }
  }
  if (edges && int(threadIdx.x) < pl.edges) {
    const int64_t col = pl.edge_col(int(threadIdx.x));
    float v = course::to_float(xr[col]);
    f(int64_t(-1), col, &v, 1, static_cast<const Pack<T, kPack>*>(nullptr));
  }
}

/// [for_each_piece]

/// A row's (max, sum of exp) pair and, with label smoothing, the sum of its logits.
struct RowSums {
  MaxSum ms;
  float sum_x = 0.0f;
};
__device__ __forceinline__ RowSums merge_sums(RowSums a, RowSums b) {
  return {course::merge(a.ms, b.ms), a.sum_x + b.sum_x};
}

/// This thread's pieces' RowSums, merged over the block (every thread gets the result); each
/// piece is also passed to keep(p, values, n, raw) (the fused kernel's cache; a no-op elsewhere).
/// The sum of the logits only with label smoothing: a branch a piece, not an add a value.
struct KeepNothing {
  template <typename P>
  __device__ void operator()(int64_t, const float*, int, const P*) const {}
};
template <typename T, int kPack, int kBlock, typename Keep = KeepNothing>
__device__ RowSums row_sums(const T* xr, const RowPeel& pl, int64_t first, int64_t count, bool edges, bool smoothing,
                            Keep keep = {}) {
  MaxSum t;
  float sx = 0.0f;
  auto add = [&](int64_t p, int64_t, const float* v, int n, const Pack<T, kPack>* raw) {
    if (n == kPack) online_update<T, kPack>(t, v);
    else online_update<T, 1>(t, v);
    if (smoothing)
      for (int j = 0; j < n; ++j) sx += v[j];
    keep(p, v, n, raw);
  };
  for_each_piece<T, kPack, kBlock>(xr, pl, first, count, edges, add);
  const MaxSum r = course::block_merge<kBlock>(t);
  const float s = smoothing ? ch12::block_allreduce<kBlock>(sx, ch12::Sum{}, 0.0f) : 0.0f;
  return {r, s};
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
/// Thread 0 reads the target's logit x_t itself, before the merge's barriers: no thread reads
/// the logits after them, so a fused kernel may write dlogits over the logits there.
template <typename T, int kPack, int kBlock>
__global__ void __launch_bounds__(kBlock)
    ce_forward_kernel(const T* __restrict__ x, const int32_t* __restrict__ target, Ce c, int phase,
                      float* __restrict__ loss, float* __restrict__ lse) {
  for (int64_t row = blockIdx.x; row < c.rows; row += gridDim.x) {
    const int64_t t = row_class(target[row], c);  // the same in every thread: the branches stay uniform
    if (t < 0) {                                  // ignored: 0; a target outside [0, cols): NaN, the row not read
      if (threadIdx.x == 0) loss[row] = lse[row] = t == -1 ? 0.0f : NAN;
      continue;
    }
    const T* xr = x + row * c.cols;
    const float x_t = threadIdx.x == 0 ? course::to_float(xr[t]) : 0.0f;
    const RowPeel pl = RowPeel::of<kPack>(phase, row, c.cols);
    const RowSums s = row_sums<T, kPack, kBlock>(xr, pl, 0, pl.packs, true, c.smoothing != 0.0f);
    if (threadIdx.x == 0) {
      const float l = lse_of(s.ms);
      loss[row] = loss_of(c, l, x_t, s.sum_x);
      lse[row] = l;
    }
  }
}
/// [forward_kernel]

/// dlogits of one piece: (softmax (1 + 2 z lse) - (1 - e) [col == t] - e / V) x scale, as
/// a exp(x - lse) + b, less `hit` at the target (Dx: the constants, once per row).
struct Dx {
  float l, a, b, hit;
  __device__ Dx(float lse, float scale, const Ce& c)
      : l(lse),
        a(scale * (1.0f + 2.0f * c.z_loss * lse)),
        b(-scale * c.smoothing / float(c.cols)),
        hit(scale * (1.0f - c.smoothing)) {}
};
template <typename T, int kPack>
__device__ __forceinline__ void write_dx(T* dxr, const float* v, int n, int64_t col, int64_t t, const Dx& k) {
  float d[kPack];
#pragma unroll
  for (int j = 0; j < kPack; ++j)
    if (j < n) d[j] = fmaf(k.a, ce_exp<T>(v[j] - k.l), k.b);
  if (t >= col && t < col + n) {  // the target is in this piece: one piece of the row, not a test a value
#pragma unroll
    for (int j = 0; j < kPack; ++j)
      if (j == t - col) d[j] -= k.hit;
  }
  if (n == kPack) {
    Pack<T, kPack> pk;
    course::ScalarConvert<T>::from_floats(d, pk);
    course::store_pack_vector<T, kPack>(dxr + col, pk);
  } else {
    dxr[col] = course::from_float<T>(d[0]);
  }
}

/// Writes columns [begin, end) of a row with v: an ignored row's zeros, or NaN (a target outside [0, cols)).
template <typename T, int kBlock>
__device__ __forceinline__ void fill_row(T* dxr, int64_t begin, int64_t end, float v) {
  for (int64_t j = begin + threadIdx.x; j < end; j += kBlock) dxr[j] = course::from_float<T>(v);
}

/// [backward_kernel]
/// Each row's upstream gradient dloss[row], over the count of rows not ignored (count, on the
/// device) for a mean.
template <typename T, int kPack, int kBlock>
__global__ void __launch_bounds__(kBlock)
    ce_backward_kernel(const T* x, const int32_t* __restrict__ target, const float* __restrict__ lse,
                       const float* __restrict__ dloss, const float* __restrict__ count, bool mean, Ce c, int phase,
                       T* dx) {
  const float per = mean ? 1.0f / *count : 1.0f;
  for (int64_t row = blockIdx.x; row < c.rows; row += gridDim.x) {
    const int64_t t = row_class(target[row], c);
    T* dxr = dx + row * c.cols;
    if (t < 0) {
      fill_row<T, kBlock>(dxr, 0, c.cols, t == -1 ? 0.0f : NAN);
      continue;
    }
    const Dx k(lse[row], dloss[row] * per, c);
    const RowPeel pl = RowPeel::of<kPack>(phase, row, c.cols);
    for_each_piece<T, kPack, kBlock>(x + row * c.cols, pl, 0, pl.packs, true,
                                     [&](int64_t, int64_t col, const float* v, int n, const Pack<T, kPack>*) {
                                       write_dx<T, kPack>(dxr, v, n, col, t, k);
                                     });
  }
}
/// [backward_kernel]

/// [fused_chunk]
/// Loss and dlogits of one row's packs first ... first + count - 1 (and its edges when `edges`)
/// from one read where they are cached (kCached: kept in shared memory at `cache`, pack p at
/// cache + p * kPack, an edge in the register of the thread that reads it), else two. `merge`
/// turns the block's RowSums into the row's (the identity for a block per row; chapter 13's
/// exchange through distributed shared memory for a cluster's chunk). `x_t`: the target's logit,
/// in the thread that writes the loss (loss_out non-null). x and dx may be one buffer (dlogits
/// written over the logits): each thread rewrites only the pieces it has read, after the merge's
/// barriers (every read of the row done). `scale`: the upstream gradient (over the count for a mean).
template <typename T, int kPack, int kBlock, bool kCached, typename Merge>
__device__ __forceinline__ void fused_chunk(const T* xr, T* dxr, const RowPeel& pl, int64_t first, int64_t count,
                                            bool edges, T* cache, int64_t t, float x_t, float scale, const Ce& c,
                                            float* loss_out, Merge merge) {
  float edge = 0.0f;  // this thread's edge element, if it has one
  auto keep = [&](int64_t p, const float* v, int n, const Pack<T, kPack>* raw) {
    if constexpr (kCached) {
      if (n == kPack) {
        course::store_pack<T, kPack>(cache + p * kPack, *raw);  // the pack as loaded: no conversion back
      } else {
        edge = v[0];
      }
    }
  };
  const RowSums s = merge(row_sums<T, kPack, kBlock>(xr, pl, first, count, edges, c.smoothing != 0.0f, keep));
  const float l = lse_of(s.ms);
  if (loss_out) *loss_out = loss_of(c, l, x_t, s.sum_x);
  const Dx k(l, scale, c);
  auto write = [&](int64_t, int64_t col, const float* v, int n, const Pack<T, kPack>*) {
    write_dx<T, kPack>(dxr, v, n, col, t, k);
  };
  if constexpr (kCached) {
    for (int64_t p = threadIdx.x; p < count; p += kBlock) {
      float v[kPack];
      course::ScalarConvert<T>::to_floats(course::load_pack<T, kPack>(cache + p * kPack), v);
      write_dx<T, kPack>(dxr, v, kPack, pl.head + (first + p) * kPack, t, k);
    }
    if (edges && int(threadIdx.x) < pl.edges) write_dx<T, kPack>(dxr, &edge, 1, pl.edge_col(int(threadIdx.x)), t, k);
  } else {
    for_each_piece<T, kPack, kBlock>(xr, pl, first, count, edges, write);
  }
}
/// [fused_chunk]

/// [fused_kernel]
/// A block per row: the whole row is the block's chunk. The cache is reused row after row with no
/// barrier of its own: each thread reads back only the packs it stored (p = threadIdx.x, + kBlock,
/// ... in both passes). g0: the reduced loss's upstream gradient (over count for a mean).
template <typename T, int kPack, int kBlock, bool kCached>
__global__ void __launch_bounds__(kBlock, fused_min_blocks<kBlock>())
    ce_fused_kernel(const T* x, const int32_t* __restrict__ target, float g0, const float* __restrict__ count,
                    bool mean, Ce c, int phase, T* dx, float* __restrict__ loss) {
  extern __shared__ __align__(16) unsigned char smem[];
  const float scale = mean ? g0 / *count : g0;
  for (int64_t row = blockIdx.x; row < c.rows; row += gridDim.x) {
    const int64_t t = row_class(target[row], c);
    T* dxr = dx + row * c.cols;
    if (t < 0) {
      fill_row<T, kBlock>(dxr, 0, c.cols, t == -1 ? 0.0f : NAN);
      if (threadIdx.x == 0) loss[row] = t == -1 ? 0.0f : NAN;
      continue;
    }
    const T* xr = x + row * c.cols;
    const float x_t = threadIdx.x == 0 ? course::to_float(xr[t]) : 0.0f;
    const RowPeel pl = RowPeel::of<kPack>(phase, row, c.cols);
    fused_chunk<T, kPack, kBlock, kCached>(xr, dxr, pl, 0, pl.packs, true, reinterpret_cast<T*>(smem), t, x_t, scale,
                                           c, threadIdx.x == 0 ? loss + row : nullptr, [](RowSums s) { return s; });
  }
}
/// [fused_kernel]

/// [fused_cluster_kernel]
/// A row too long for one block's shared memory, shared by a cluster of blocks (chapter 13): block
/// `rank` caches packs rank * chunk_packs ... of it (block 0 also its edges), the blocks exchange
/// their RowSums through distributed shared memory, and each writes its chunk's dlogits. One read
/// of the row; one row per cluster (grid: rows x cluster size). Needs sm_90.
template <typename T, int kPack, int kBlock>
__global__ void __launch_bounds__(kBlock, fused_min_blocks<kBlock>())
    ce_fused_cluster_kernel(const T* x, const int32_t* __restrict__ target, float g0,
                            const float* __restrict__ count, bool mean, Ce c, int phase, int64_t chunk_packs, T* dx,
                            float* __restrict__ loss) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ RowSums mine;
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int64_t row = blockIdx.x / cluster.num_blocks();
  const int rank = int(cluster.block_rank());
  const int64_t t = row_class(target[row], c);
  T* dxr = dx + row * c.cols;
  if (t < 0) {  // the whole cluster leaves: no block waits at a cluster barrier
    const int64_t per = course::ceil_div(c.cols, int64_t(cluster.num_blocks()));
    const int64_t begin = rank * per, end = begin + per < c.cols ? begin + per : c.cols;
    fill_row<T, kBlock>(dxr, begin, end, t == -1 ? 0.0f : NAN);
    if (rank == 0 && threadIdx.x == 0) loss[row] = t == -1 ? 0.0f : NAN;
    return;
  }
  const T* xr = x + row * c.cols;
  const bool writes_loss = rank == 0 && threadIdx.x == 0;
  const float x_t = writes_loss ? course::to_float(xr[t]) : 0.0f;  // before the cluster's barrier
  const RowPeel pl = RowPeel::of<kPack>(phase, row, c.cols);
  const int64_t first = rank * chunk_packs, left = pl.packs - first;
  const int64_t n = left < chunk_packs ? (left > 0 ? left : 0) : chunk_packs;
  const float scale = mean ? g0 / *count : g0;
  fused_chunk<T, kPack, kBlock, true>(
      xr, dxr, pl, first, n, rank == 0, reinterpret_cast<T*>(smem), t, x_t, scale, c, writes_loss ? loss + row : nullptr,
      [&](RowSums s) {
        return ch13::cluster_allreduce(cluster, &mine, s, RowSums{}, [](RowSums v) {
          for (int offset = 16; offset > 0; offset /= 2) {
            RowSums o;
            o.ms.m = __shfl_xor_sync(0xffffffffu, v.ms.m, offset);
            o.ms.d = __shfl_xor_sync(0xffffffffu, v.ms.d, offset);
            o.sum_x = __shfl_xor_sync(0xffffffffu, v.sum_x, offset);
            v = merge_sums(v, o);
          }
          return v;
        });
      });
#else
  __trap();  // the host launches it only on sm_90 and later (launch.cuh)
#endif
}
/// [fused_cluster_kernel]

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
