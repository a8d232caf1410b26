/// @file backward_common.cuh
/// @brief Chapter 14's pieces shared by the backward's paths. From the forward output y and the
/// upstream gradient dy:
///  softmax:     dx = y * (dy - sum(dy * y))
///  log-softmax: dx = dy - exp(y) * sum(dy)
/// One reduction per row, then an elementwise pass over both inputs: three tensors move (y and
/// dy read, dx written). The same paths as the forward (chapters 12 and 13), one file each
/// (backward_*.cuh, kernel and launch), chosen per shape by the policy's backward rule
/// (12_production_softmax/policy.h, backward_path): a warp with both rows in registers (tile: the
/// block's rows by two bulk copies), a block with both in registers, a block with both (or one) in
/// shared memory, a cluster of blocks sharing a row whose y and dy do not fit one block's shared
/// memory, and a block that reads them twice. Here: the gradient's arithmetic, the pack loop over
/// two inputs, and the names the backward takes from chapters 12 and 13.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "12_production_softmax/paths_block_regs.cuh"
#include "12_production_softmax/paths_common.cuh"
#include "12_production_softmax/paths_warp.cuh"
#include "blocks/peel.h"
#include "12_production_softmax/policy.h"
#include "12_production_softmax/softmax.cuh"
#include "12_production_softmax/softmax_functors.cuh"

namespace ch14 {

namespace policy = ch12::policy;
using ch12::block_allreduce;
using ch12::DirectLoad;
using ch12::DirectStore;
using ch12::fetch_edge;  // a peeled row's edge element, converted after the packs' loads
using ch12::for_each_pack;
using ch12::kWarpColsPerLane;
using ch12::kWarpMaxCols;
using ch12::row_exp;
using ch12::RowCache;
using course::RowPeel;
using ch12::Sum;

/// [backward_math]
/// The row's reduction term for one element, and the gradient from the reduced sum.
__device__ __forceinline__ float grad_term(float y, float dy, bool log) { return log ? dy : dy * y; }
template <bool kFast>
__device__ __forceinline__ float grad(float y, float dy, float sum, bool log) {
  return log ? dy - row_exp<kFast>(y) * sum : (dy - sum) * y;
}
/// [backward_math]

/// Calls f(std::true_type{}) or f(std::false_type{}) as `log` says. A kernel's write pass is then
/// compiled once per operation, and neither copy carries the other's arithmetic. With a cheap
/// exponential the compiler may otherwise compute both sides of `log ? a : b` and select. Only the
/// warp kernel uses it: there it won back 1% at 256 columns. In the other kernels it changed
/// register counts, and with them the block size chosen from occupancy, and measured slower (up
/// to 17% on the 16-bit cluster kernel at 128 rows; H100).
template <typename F>
__device__ __forceinline__ void with_log(bool log, F&& f) {
  if (log)
    f(std::true_type{});
  else
    f(std::false_type{});
}

/// for_each_pack over two inputs read in step (y and dy), packs [first, first + count) of the
/// row: f(p, y values, dy values) with p counted from `first`; kHold as for for_each_pack.
/// `col0`: the column where pack 0 starts (a peeled row's head, blocks/peel.h).
template <int kBlock, int kPack, int kUnroll = 2, bool kHold = false, typename LoadY, typename LoadDy, typename F>
__device__ __forceinline__ void for_each_pack2(const LoadY& load_y, const LoadDy& load_dy, int64_t row, int64_t first,
                                               int64_t count, F&& f, int64_t col0 = 0) {
  for (int64_t p0 = threadIdx.x; p0 < count; p0 += int64_t(kBlock) * kUnroll) {
    typename LoadY::template Fetched<kPack> raw_y[kUnroll];
    typename LoadDy::template Fetched<kPack> raw_dy[kUnroll];
    float y[kHold ? 1 : kUnroll][kPack], dy[kHold ? 1 : kUnroll][kPack];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p >= count) continue;
      raw_y[u] = load_y.template fetch<kPack>(row, col0 + (first + p) * kPack);
      raw_dy[u] = load_dy.template fetch<kPack>(row, col0 + (first + p) * kPack);
      if constexpr (!kHold) {
        load_y.template convert<kPack>(raw_y[u], y[u]);
        load_dy.template convert<kPack>(raw_dy[u], dy[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p >= count) continue;
      if constexpr (kHold) {
        load_y.template convert<kPack>(raw_y[u], y[0]);
        load_dy.template convert<kPack>(raw_dy[u], dy[0]);
      }
      f(p, y[kHold ? 0 : u], dy[kHold ? 0 : u]);
    }
  }
}

namespace detail {
using ch12::detail::cache_bytes;
using ch12::detail::cols_in_smem;
using ch12::detail::row_blocks;
}  // namespace detail

}  // namespace ch14
