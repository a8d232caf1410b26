/// @file smem_pack_softmax.cuh
/// @brief Chapter 06: block-per-row softmax with packed loads and a bank-conflict-free layout.
#pragma once

#include <cub/block/block_reduce.cuh>

#include <cstdint>
#include <string>

#include "blocks/convert.cuh"
#include "blocks/occupancy.cuh"
#include "blocks/pack.cuh"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"

namespace ch06 {

// Packs each thread must have for a block size to be a candidate, and the packs it loads before
// using any. With one pack per thread, each thread has a single 16-byte load in flight and the
// block's barriers serialize the rest: 4 packs keep several loads in flight (exercise 2 of the
// lesson measures 1, 2, 4 and 8).
// H100: in chapter 12's copy of the rule, a floor of 1 or 2 lost 6-18% at 3072-8192 columns (TUNING.md).
constexpr int kMinPacksPerThread = 4;

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// [layout]
// Where element j of pack p of the row lives in shared memory (num_packs packs of kPack elements).
//  natural:       p * kPack + j. A thread's pack is contiguous. With 4 floats (16 bytes) per thread
//                 the compiler emits one 16-byte store, which the hardware serves a quarter-warp at
//                 a time: no conflict. With 8 floats (f16/bf16 packs of 8 cached as fp32) lane l's
//                 first 16 bytes sit 32 bytes after lane l - 1's: two lanes per bank, a conflict.
//  transposed:    j * num_packs + p. Consecutive lanes write consecutive words: never a conflict,
//                 but every element is its own 4-byte shared-memory instruction.
//  transposed16:  the same in 16-byte chunks: chunk c = j / 4 of pack p at (c * num_packs + p) * 4.
//                 Conflict-free and one instruction per 4 floats; for packs of <= 4 floats it is the
//                 natural layout.
enum class Layout { natural, transposed, transposed16 };

template <Layout kLayout, int kPack>
__device__ __forceinline__ int64_t smem_index(int64_t p, int j, int64_t num_packs) {
  if constexpr (kLayout == Layout::natural) {
    return p * kPack + j;
  } else if constexpr (kLayout == Layout::transposed) {
    return int64_t(j) * num_packs + p;
  } else {
    constexpr int kChunk = kPack < 4 ? kPack : 4;
    return (int64_t(j / kChunk) * num_packs + p) * kChunk + j % kChunk;
  }
}
/// [layout]

template <typename T, int kPack, int kBlock, Layout kLayout>
__global__ void __launch_bounds__(kBlock)
    softmax_smem_pack_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
  extern __shared__ __align__(16) float row[];
  using BlockReduce = cub::BlockReduce<float, kBlock>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float row_max, row_sum;
  using Convert = course::ScalarConvert<T>;
  const int64_t num_packs = cols / kPack;
  const T* xr = x + int64_t(blockIdx.x) * cols;
  T* yr = y + int64_t(blockIdx.x) * cols;

  /// [loads_in_flight]
  // Read x once, kMinPacksPerThread packs per thread at a time: all of them are loaded (kept in
  // the storage type) before the first is converted and stored to shared memory, so each thread
  // has that many 16-byte loads in flight. A block that is alone on its SM (long rows) has
  // nothing else to hide the memory latency with.
  float m = -INFINITY;
  for (int64_t p0 = threadIdx.x; p0 < num_packs; p0 += int64_t(kBlock) * kMinPacksPerThread) {
    course::Pack<T, kPack> pk[kMinPacksPerThread];
#pragma unroll
    for (int u = 0; u < kMinPacksPerThread; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p < num_packs) pk[u] = course::load_pack<T, kPack>(xr + p * kPack);
    }
#pragma unroll
    for (int u = 0; u < kMinPacksPerThread; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p >= num_packs) break;
      float v[kPack];
      Convert::to_floats(pk[u], v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) {
        row[smem_index<kLayout, kPack>(p, j, num_packs)] = v[j];
        m = fmaxf(m, v[j]);
      }
    }
  }
  /// [loads_in_flight]
  m = BlockReduce(temp).Reduce(m, MaxOp{});
  if (threadIdx.x == 0) row_max = m;
  __syncthreads();
  m = row_max;

  float s = 0;  // each thread revisits its own packs: no barrier needed before this pass
  for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {
#pragma unroll
    for (int j = 0; j < kPack; ++j) {
      float& e = row[smem_index<kLayout, kPack>(p, j, num_packs)];
      e = expf(e - m);
      s += e;
    }
  }
  s = BlockReduce(temp).Sum(s);
  if (threadIdx.x == 0) row_sum = s;
  __syncthreads();
  const float inv = 1.0f / row_sum;

  for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {  // write y once, in packs
    float out[kPack];
#pragma unroll
    for (int j = 0; j < kPack; ++j) out[j] = row[smem_index<kLayout, kPack>(p, j, num_packs)] * inv;
    course::Pack<T, kPack> pk;
    Convert::from_floats(out, pk);
    course::store_pack<T, kPack>(yr + p * kPack, pk);
  }
}

/// [block_size]
// The block size from occupancy (course::with_occupancy_block, occupancy.cuh): among 128, 256,
// 512 and 1024 threads, those that give every thread at least kMinPacksPerThread packs (128
// always qualifies), the one with the most resident threads per SM for this row's shared memory;
// on a tie, the larger block.
template <typename T, int kPack, Layout kLayout>
void dispatch_block(const course::Args& a, cudaStream_t stream) {
  const size_t smem = size_t(a.cols) * sizeof(float);
  auto kernel_for = [](auto block) { return softmax_smem_pack_kernel<T, kPack, decltype(block)::value, kLayout>; };
  course::with_occupancy_block(a.cols / kPack, kMinPacksPerThread, smem, kernel_for, [&](auto block) {
    constexpr int kBlock = decltype(block)::value;
    kernel_for(block)<<<unsigned(a.rows), kBlock, smem, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y),
                                                                 a.cols);
    CUDA_CHECK_LAUNCH();
  });
}
/// [block_size]

/// The longest row that fits in this GPU's shared memory (fp32 cache); 0 without a GPU.
template <typename T>
int64_t smem_pack_softmax_max_cols() {
  const int optin = course::smem_per_block_optin();
  if (optin == 0) return 0;
  constexpr int kMaxPack = 16 / sizeof(T);  // the largest static part: 1024 threads, widest pack
  const size_t static_bytes = course::allow_max_smem(softmax_smem_pack_kernel<T, kMaxPack, 1024, Layout::natural>);
  return (int64_t(optin) - int64_t(static_bytes)) / int64_t(sizeof(float));
}

template <typename T, Layout kLayout>
void softmax_smem_pack_impl(const course::Args& a, cudaStream_t stream) {
  const int64_t max_cols = smem_pack_softmax_max_cols<T>();
  const std::string limit = "the row must fit in shared memory: cols <= " + std::to_string(max_cols) + " on this GPU";
  if (!course::check_block_per_row_args(a, max_cols, limit.c_str())) return;
  course::with_widest_pack<T>(a.cols, a.x, a.y,
                              [&](auto pack) { dispatch_block<T, decltype(pack)::value, kLayout>(a, stream); });
}

/// Softmax of each row cached in shared memory (fp32), loaded and stored in packs of up to 16
/// bytes; each pack stored contiguously in shared memory (the natural layout).
template <typename T>
void softmax_smem_natural(const course::Args& a, cudaStream_t s) {
  softmax_smem_pack_impl<T, Layout::natural>(a, s);
}
/// The same, element j of pack p at j * num_packs + p: bank-conflict-free, 4 bytes per access.
template <typename T>
void softmax_smem_transposed(const course::Args& a, cudaStream_t s) {
  softmax_smem_pack_impl<T, Layout::transposed>(a, s);
}
/// The same, transposed in 16-byte chunks: bank-conflict-free and 16 bytes per access.
template <typename T>
void softmax_smem_transposed16(const course::Args& a, cudaStream_t s) {
  softmax_smem_pack_impl<T, Layout::transposed16>(a, s);
}

}  // namespace ch06
