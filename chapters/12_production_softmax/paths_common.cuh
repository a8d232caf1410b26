/// @file paths_common.cuh
/// @brief Chapter 12's pieces shared by its paths: the kernels' row-level helpers (block
/// reductions, the pack loop, the exponential, an element's output, a row cached in shared
/// memory), the unfused scale-and-mask kernel, and the launchers' pack width, blocks per row and
/// shared-memory sizes. The forward kernels compute softmax and log-softmax over rows read through
/// a `Load` functor and written through a `Store` functor (softmax_functors.cuh). The dispatch
/// (dispatch.cuh) picks a path per shape by the policy (policy.h), each path with its kernel and
/// launch in its own file:
///  - warp:       a group of lanes per row, the row in registers (chapters 03-05; paths_warp.cuh);
///  - block_regs: a block per row, the row in registers (new here: rows too long for a warp's;
///                paths_block_regs.cuh);
///  - smem:       a block per row, the row in shared memory as stored or as fp32 (06;
///                paths_smem.cuh);
///  - uncached:   a block per row, the row read twice with the online (m, d) pair (07-08;
///                paths_uncached.cuh).
/// Chapter 13 adds the tile and cluster paths (Hopper), chapter 14 the backward of each path.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>

#include "blocks/convert.cuh"
#include "blocks/pack.cuh"
#include "blocks/peel.h"
#include "blocks/warp.cuh"
#include "harness/launch_math.h"
#include "policy.h"
#include "softmax.cuh"
#include "softmax_functors.cuh"

namespace ch12 {

using course::RowPeel;  // the peel (blocks/peel.h)

struct Max {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

/// The value every thread of the block gets: a warp all-reduce, the warps' results through
/// shared memory, then each warp reduces those (no second broadcast barrier). kBlock bounds the
/// block's threads; `warps` is how many warps it has (a kernel launched with a block size chosen
/// at run time passes blockDim.x / 32). Not chapter 07's cub::BlockReduce: that one returns the
/// result to thread 0 only (a broadcast would add a barrier), and replacing this one would change
/// the code of every block kernel here.
template <int kBlock, typename Op>
__device__ __forceinline__ float block_allreduce(float v, Op op, float identity, int warps = kBlock / 32) {
  __shared__ float partial[kBlock / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = course::group_reduce<32>(v, 0xffffffffu, op);
  __syncthreads();  // the previous call's readers are done with `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : identity;
  return course::group_reduce<32>(v, 0xffffffffu, op);
}

/// [for_each_pack]
/// Visits the packs p = threadIdx.x, + kBlock, ... < count of a row (from pack `first`),
/// calling f(p, values). kUnroll packs are loaded before any is used: several 16-byte loads in
/// flight per thread rather than one, which is what a block needs to cover the memory latency
/// when it is one of few on its SM (few rows, or long ones). Four packs of up to 4 floats, two of
/// 8 (16-bit): their registers cost occupancy. kReadOnly: through the read-only data path.
/// kHold keeps the packs as loaded (a 16-bit pack in half the registers of fp32) and converts
/// each as f takes it: for a kernel that wants more loads in flight than its registers hold as
/// floats (the uncached backward). Elsewhere converting on arrival measured as fast or faster.
/// `col0`: the column where pack 0 starts (the peeled row's head, paths_smem.cuh), 0 for a row
/// that starts on a whole pack.
template <int kBlock, int kPack, int kUnroll = (kPack >= 8 ? 2 : 4), bool kReadOnly = false, bool kHold = false,
          typename Load, typename F>
__device__ __forceinline__ void for_each_pack(const Load& load, int64_t row, int64_t first, int64_t count, F&& f,
                                              int64_t col0 = 0) {
  for (int64_t p0 = threadIdx.x; p0 < count; p0 += int64_t(kBlock) * kUnroll) {
    typename Load::template Fetched<kPack> raw[kUnroll];
    float v[kHold ? 1 : kUnroll][kPack];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p >= count) continue;
      raw[u] = load.template fetch<kPack, kReadOnly>(row, col0 + (first + p) * kPack);
      if constexpr (!kHold) load.template convert<kPack>(raw[u], v[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p >= count) continue;
      if constexpr (kHold) load.template convert<kPack>(raw[u], v[0]);
      f(p, v[kHold ? 0 : u]);
    }
  }
}
/// [for_each_pack]

/// [peel_edge]
/// A thread's edge element of a peeled row (blocks/peel.h), held as fetched: its load starts
/// with the row's first loads and it is converted (value) only where it is first needed, after
/// the loop over the packs. Converted at once, the conversion (one instruction for a 16-bit
/// element, the scale and mask for the fused load; none for a plain fp32 load) waits for the
/// load before the thread's first pack load issues: a round trip more for the warps that hold
/// edges, which the block's first barrier makes every warp's (H200: the fused fp32
/// scale-and-mask at 4097 columns 1.15x faster converted late, the backward's 16-bit
/// shared-memory kernel at 8193 1.19x; TUNING.md of chapters 12 and 14).
template <typename Load>
struct PeelEdge {
  typename Load::template Fetched<1> raw;
  int col;  ///< the element's column; -1: this thread holds none
  __device__ __forceinline__ bool here() const { return col >= 0; }
  __device__ __forceinline__ float value(const Load& load) const {
    float v;
    load.template convert<1>(raw, &v);
    return v;
  }
};
/// Starts the load of column `col` of row `row` (none where col < 0 or the row is not peeled).
template <bool kPeel, typename Load>
__device__ __forceinline__ PeelEdge<Load> fetch_edge(const Load& load, int64_t row, int col) {
  PeelEdge<Load> e{};
  e.col = kPeel ? col : -1;
  if (kPeel && col >= 0) e.raw = load.template fetch<1>(row, col);
  return e;
}
/// [peel_edge]

/// [row_exp]
/// exp(x) as the output's type needs it (Store::kFastExp, softmax_functors.cuh). For fp32 output,
/// expf: a range reduction in about six FMA-pipe instructions around the SFU's `ex2`. For 16-bit
/// output, that `ex2` alone (PTX ex2.approx.ftz.f32) on x * log2(e): one multiply and one
/// MUFU.EX2. This is __expf with results below 2^-126 flushed to zero. The CUDA Programming
/// Guide bounds __expf's error by 2 + 1.173|x| fp32 ulps: under 2^-16 relative down to the flush
/// (x ~ -87), under 2^-18 for x >= -17. The output's rounding is up to 2^-11 (fp16) or 2^-8
/// (bf16). __expf itself keeps subnormal results with a compare and two predicated multiplies,
/// which measured slower (TUNING.md); it is also a different PTX instruction (ex2.approx.f32,
/// without .ftz), hence the inline PTX. exp(-inf) = 0, exp(NaN) = NaN.
template <bool kFast>
__device__ __forceinline__ float row_exp(float x) {
  if constexpr (kFast) {
    float e;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x * 1.44269504088896341f));
    return e;
  } else {
    return expf(x);
  }
}

/// [row_exp]

/// [finish]
/// The output of one element from its value v, the row max m and the row's `k`: 1 / sum for
/// softmax, log(sum) for log-softmax. An all -inf row gives NaN in both, as PyTorch does.
__device__ __forceinline__ float row_constant(float sum, bool log) { return log ? logf(sum) : 1.0f / sum; }
template <bool kFast>
__device__ __forceinline__ float finish(float v, float m, float k, bool log) {
  return log ? (v - m) - k : row_exp<kFast>(v - m) * k;
}
/// [finish]

/// [row_cache]
/// A row (or a chunk of one) in shared memory, in type C, kPack elements per thread-visit. A
/// pack is kept in 16-byte pieces laid out piece-major (chapter 06's transposed16 layout): piece
/// c of pack p at (c * num_packs + p). Consecutive threads touch consecutive 16-byte words, so a
/// warp's access is conflict-free whatever the pack's size; with one piece per pack (the usual
/// case: C is the storage type) it is the natural layout.
template <typename C, int kPack>
struct RowCache {
  static constexpr int kPiece = ch12::kPiece<C, kPack>;
  static constexpr int kPieces = kPack / kPiece;
  C* base;
  int num_packs;  // shared memory holds at most a few hundred KB: 32-bit indices
  __device__ __forceinline__ void put(int p, const float* v) const {
#pragma unroll
    for (int c = 0; c < kPieces; ++c) {
      course::Pack<C, kPiece> pk;
      course::ScalarConvert<C>::from_floats(v + c * kPiece, pk);
      course::store_pack<C, kPiece>(base + (c * num_packs + p) * kPiece, pk);
    }
  }
  __device__ __forceinline__ void get(int p, float* v) const {
#pragma unroll
    for (int c = 0; c < kPieces; ++c)
      course::ScalarConvert<C>::to_floats(course::load_pack<C, kPiece>(base + (c * num_packs + p) * kPiece),
                                          v + c * kPiece);
  }
};
/// [row_cache]

/// Attention's scale-and-mask as its own elementwise kernel, writing fp32 logits: the first of
/// the two kernels that the fused load replaces (the lesson measures both).
template <typename Load, typename Store, int kPack>
__global__ void apply_load_kernel(Load load, Store store, int64_t rows, int64_t cols) {
  const int64_t num_packs = cols / kPack;
  const int64_t n = rows * num_packs;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v[kPack];
    load.template load<kPack>(v, i / num_packs, (i % num_packs) * kPack);
    store.template store<kPack>(v, i / num_packs, (i % num_packs) * kPack);
  }
}

namespace detail {

/// The widest pack, kMax elements, when cols is a multiple of it and every pointer is aligned
/// to kMax of its own elements (pointer, element bytes); otherwise one element at a time. Not
/// course::with_widest_pack (pack.cuh): that one takes pointers of one element type and steps
/// down through 8, 4, 2; these kernels pair a 16-bit x with a byte mask or fp32 logits, and are
/// compiled for kMax and 1 only.
template <int kMax>
int pick_pack(int64_t cols, std::initializer_list<std::pair<const void*, int>> ptrs) {
  if (cols % kMax != 0) return 1;
  for (auto [p, bytes] : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % (uintptr_t(bytes) * kMax) != 0) return 1;
  return kMax;
}

using course::pick_phase;  // blocks/peel.h

/// Calls f(std::integral_constant<int, P>{}) for P = pack, which is kMax or 1.
template <int kMax, typename F>
void with_pack(int pack, F&& f) {
  if (pack == kMax) return f(std::integral_constant<int, kMax>{});
  f(std::integral_constant<int, 1>{});
}

/// [row_blocks]
/// Blocks of a kernel with a block per row: one for every row (the kernels' grid-stride loop only
/// serves rows past the hardware's 2^31 - 1 blocks). A block that takes a second row lives twice
/// as long, and the kernel's end waits on the last blocks to finish theirs: with the grid capped
/// at 64 waves of resident blocks, 49152 rows gave most blocks two rows from 8192 fp32 columns on,
/// and the shared-memory kernels ran 0.5-2.4% slower there (H100, 2026-11; TUNING.md).
inline unsigned row_blocks(int64_t rows) { return unsigned(std::clamp<int64_t>(rows, 1, INT32_MAX)); }
/// [row_blocks]

/// The longest row of which `copies` copies fit in a block's shared memory as C (policy.h,
/// cols_in_smem), 0 without a GPU: cache_bytes<C>(cols) * copies + policy::kSmemReservedBytes is
/// within the opt-in limit exactly when cols <= this.
template <typename C>
int64_t cols_in_smem(int copies) {
  return policy::cols_in_smem(device(), int(sizeof(C)), copies);
}

/// Shared-memory bytes of a row of cols elements cached as C (RowCache: whole packs).
template <typename C>
size_t cache_bytes(int64_t cols) {
  return size_t(course::round_up(cols * int64_t(sizeof(C)), 16));
}

}  // namespace detail
}  // namespace ch12
