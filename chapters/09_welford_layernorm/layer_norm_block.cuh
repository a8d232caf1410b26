/// @file layer_norm_block.cuh
/// @brief Chapter 09: LayerNorm's block paths, a block per row, the row cached in shared memory or
/// read twice from global memory (layer_norm.cuh dispatches to them), and the block size.
#pragma once

#include <algorithm>
#include <cstdint>

#include "blocks/occupancy.cuh"
#include "blocks/pack.cuh"
#include "blocks/peel.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"
#include "layer_norm_pack.cuh"
#include "welford.cuh"

namespace ch09 {

using course::Welford;

// Chapter 06's rule: a block size other than 128 must give each thread 4 packs (a peeled fp32
// row's columns rounded up to whole packs; forced block sizes on LayerNorm: TUNING.md).
constexpr int64_t kMinPacksPerThread = 4;
// Loads in flight per thread in the block kernel's first pass (see layer_norm_block_kernel).
// H100: +4.2% fp32, +5.2% fp16 at 32768 columns against one; twice as many lose up to 7% (TUNING.md).
template <typename T>
constexpr int kBlockLoads = sizeof(T) == 4 ? 4 : 2;

/// [block_kernel]
// A block per row. Pass 1 reads the row in packs and feeds Welford a pack at a time; with kCached each pack is
// also kept in shared memory, in the storage type (16 bytes per thread per store: conflict-free
// in the natural layout, and half the shared memory of an fp32 copy for fp16). Pass 2 takes the
// row from shared memory, or reads it again from global memory (uncached: rows past the shared
// memory; the re-read hits L2 when the rows in flight fit there).
// With kCached, pass 1 starts kBlockLoads<T> loads per thread before it uses any (64 bytes of
// fp32, 32 of 16-bit). A 32768-column fp32 row fills 128 KB of shared memory, so one block of 1024
// threads is all an SM holds, and a load per pack, each started after the previous pack's merge,
// leaves it short of bytes in flight. The uncached kernel starts none ahead (TUNING.md).
// kPeel (blocks/peel.h): rows that are not whole numbers of packs, read in packs from each row's
// first boundary (x and y share it: `phase`); the head and tail (edges) one element per thread;
// gamma and beta (whose phase is `affine_phase`) cut from aligned packs (load_pack_cut).
template <typename T, int kPack, int kBlock, bool kCached, bool kPeel = false>
__global__ void __launch_bounds__(kBlock)
    layer_norm_block_kernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                            T* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd, int64_t cols,
                            float eps, int phase = 0, int affine_phase = 0) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto* cache = reinterpret_cast<Pack<T, kPack>*>(smem);
  using Convert = course::ScalarConvert<T>;
  const course::RowPeel pl =
      kPeel ? course::RowPeel::of<kPack>(phase, int64_t(blockIdx.x), cols) : course::RowPeel{0, 0, 0, 0};
  const int64_t num_packs = kPeel ? int64_t(pl.packs) : cols / kPack;
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols + (kPeel ? pl.head : 0);  // kPeel: from column `head`, where the packs start
  T* yr = y + row * cols + (kPeel ? pl.head : 0);

  constexpr int kLoads = kCached ? kBlockLoads<T> : 1;  // H100: 2 cost uncached 16-bit up to 33% (TUNING.md)
  Welford w;
  const int edge_col = kPeel && int(threadIdx.x) < pl.edges ? pl.edge_col(int(threadIdx.x)) : -1;  // -1: none
  float edge = 0;
  if (kPeel && edge_col >= 0) {
    edge = course::to_float(x[row * cols + edge_col]);
    w = course::welford_of<1>(&edge);
  }
  for (int64_t p0 = threadIdx.x; p0 < num_packs; p0 += int64_t(kBlock) * kLoads) {
    Pack<T, kPack> pk[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p < num_packs) pk[u] = course::load_pack<T, kPack>(xr + p * kPack);
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {  // the same packs in the same order as one at a time
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p >= num_packs) break;
      if constexpr (kCached) cache[p] = pk[u];
      float v[kPack];
      Convert::to_floats(pk[u], v);
      w = course::welford_merge(w, course::welford_of<kPack>(v));
    }
  }
  w = course::block_welford<kBlock>(w);
  float mu, rs;
  course::welford_finish(w, eps, &mu, &rs);
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  if constexpr (kPeel) {
    with_shift<kPack>((affine_phase + pl.head) % kPack, [&](auto shift) {  // gamma's and beta's, this row
      constexpr int kShift = decltype(shift)::value;
#pragma unroll 1  // unrolled, fp32's registers rose 40 -> 58 and cost threads per SM (TUNING.md)
      for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {  // a thread's own packs: no barrier
        float v[kPack];
        Convert::to_floats(kCached ? cache[p] : course::load_pack<T, kPack>(xr + p * kPack), v);
        const int64_t col = pl.head + p * kPack;
        normalize_pack<T, kPack, true>(v, load_pack_cut<kShift, T, kPack>(gamma + col, gamma + cols),
                                       load_pack_cut<kShift, T, kPack>(beta + col, beta + cols), mu, rs,
                                       yr + p * kPack);
      }
    });
  } else {
    for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {  // a thread's own packs: no barrier
      float v[kPack];
      Convert::to_floats(kCached ? cache[p] : course::load_pack<T, kPack>(xr + p * kPack), v);
      normalize_pack<T, kPack>(v, gamma + p * kPack, beta + p * kPack, mu, rs, yr + p * kPack);
    }
  }
  if (kPeel && edge_col >= 0)
    normalize_pack<T, 1>(&edge, gamma + edge_col, beta + edge_col, mu, rs, y + row * cols + edge_col);
}
/// [block_kernel]

template <typename T, int kPack, int kBlock, bool kCached, bool kPeel = false>
auto block_kernel() {
  return layer_norm_block_kernel<T, kPack, kBlock, kCached, kPeel>;
}

template <typename T, int kPack, int kBlock, bool kCached, bool kPeel = false>
void launch_block(const course::Args& a, size_t smem, cudaStream_t stream, int phase = 0, int affine_phase = 0) {
  course::allow_max_smem(block_kernel<T, kPack, kBlock, kCached, kPeel>());
  layer_norm_block_kernel<T, kPack, kBlock, kCached, kPeel><<<unsigned(a.rows), kBlock, smem, stream>>>(
      static_cast<const T*>(a.x), static_cast<const T*>(a.gamma), static_cast<const T*>(a.beta), static_cast<T*>(a.y),
      static_cast<float*>(a.mean), static_cast<float*>(a.rstd), a.cols, a.eps, phase, affine_phase);
  CUDA_CHECK_LAUNCH();
}

// Chapter 06's rule: among the block sizes that give each thread at least 4 packs (128 always
// qualifies), the most resident threads per SM for this row's shared memory; ties to the larger.
// kPeel and phase: the peeled kernels (layer_norm_block_kernel), for rows that are not whole packs.
// A peeled fp32 row counts its columns rounded up to whole packs, so a thread may hold one pack
// fewer (4095 columns: 1024, so 256 threads, as at 4096: H200 +12%; 8191: 512 threads, +11%); a
// peeled 16-bit row its whole packs (the larger block lost 8% at 8191 columns, 24% at 16383: TUNING.md).
template <typename T, int kPack, bool kCached, bool kPeel = false>
void dispatch_block(const course::Args& a, cudaStream_t stream, int phase = 0, int affine_phase = 0) {
  const size_t smem = kCached ? size_t(a.cols) * sizeof(T) : 0;
  const int64_t num_packs = kPeel && sizeof(T) == 4 ? course::ceil_div(a.cols, int64_t(kPack)) : a.cols / kPack;
  auto usable = [&](int block) { return block == 128 || block * kMinPacksPerThread <= num_packs; };
  const int t128 = course::resident_threads(block_kernel<T, kPack, 128, kCached, kPeel>(), 128, smem);
  const int t256 = usable(256) ? course::resident_threads(block_kernel<T, kPack, 256, kCached, kPeel>(), 256, smem) : 0;
  const int t512 = usable(512) ? course::resident_threads(block_kernel<T, kPack, 512, kCached, kPeel>(), 512, smem) : 0;
  const int t1024 =
      usable(1024) ? course::resident_threads(block_kernel<T, kPack, 1024, kCached, kPeel>(), 1024, smem) : 0;
  const int best = std::max(std::max(t128, t256), std::max(t512, t1024));
  course::require(best > 0, "cols = ", a.cols, ": no block size fits its shared memory on this GPU");
  if (t1024 == best) return launch_block<T, kPack, 1024, kCached, kPeel>(a, smem, stream, phase, affine_phase);
  if (t512 == best) return launch_block<T, kPack, 512, kCached, kPeel>(a, smem, stream, phase, affine_phase);
  if (t256 == best) return launch_block<T, kPack, 256, kCached, kPeel>(a, smem, stream, phase, affine_phase);
  launch_block<T, kPack, 128, kCached, kPeel>(a, smem, stream, phase, affine_phase);
}

}  // namespace ch09
