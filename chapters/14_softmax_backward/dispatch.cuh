/// @file dispatch.cuh
/// @brief Chapter 14's dispatch: the backward's argument checks, its path for each shape (the
/// policy's backward rule, 12_production_softmax/policy.h) and its launchers, over all six paths
/// (each path's kernel and launch: backward_*.cuh). Included by one .cu file per storage type
/// (softmax_f32.cu, ...), which instantiates it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "12_production_softmax/dispatch.cuh"
#include "backward_block_regs.cuh"
#include "backward_cluster.cuh"
#include "backward_common.cuh"
#include "backward_smem.cuh"
#include "backward_tile.cuh"
#include "backward_uncached.cuh"
#include "backward_warp.cuh"
#include "harness/errors.h"
#include "harness/harness.h"
#include "softmax.cuh"

namespace ch14 {
namespace detail {

/// Checks the arguments of a backward op on a forced path (its own limit) or the dispatch.
template <typename T>
bool check_backward(const course::Args& a, course::Op op, Path path, bool log) {
  if (path == Path::warp) return course::check_op_args(a, op, kWarpMaxCols<T>, ch12::detail::warp_limit_text<T>().c_str());
  if (path == Path::tile) return ch12::detail::check_tile<T>(a, op);
  if (path == Path::block_regs)
    return course::check_op_args(a, op, policy::kBlockRegsMaxCols, ch12::detail::block_regs_limit_text());
  if (path == Path::smem) {
    const int64_t max_cols = cols_in_smem<T>(1);
    const std::string why =
        std::string("the shared-memory path holds ") + (log ? "dy" : "y") + ": cols <= " + std::to_string(max_cols);
    return course::check_op_args(a, op, max_cols, why.c_str());
  }
  if (path == Path::cluster) {
    course::require(device().clusters, "the cluster path needs thread-block clusters (sm_90 or later)");
    const int64_t max_cols = policy::backward_cluster_max_cols(device(), sizeof(T));
    const std::string why = "the backward's cluster path holds y and dy in " +
                            std::to_string(policy::kMaxClusterBlocks) + " blocks: cols <= " + std::to_string(max_cols);
    if (!course::check_op_args(a, op, max_cols, why.c_str())) return false;
    ch12::detail::check_cluster_rows(a);
    return true;
  }
  return course::check_op_args(a, op);
}

/// [backward_dispatch]
/// The backward on `path` (or the policy's choice, policy::backward_path). A cluster that cannot
/// be resident falls back to the rule's next choice; a row read one element at a time takes the
/// warp path where the tile path was chosen.
template <typename T>
void backward_impl(const course::Args& a, cudaStream_t stream, Path path, bool log) {
  const course::Op op = log ? course::Op::log_softmax_backward : course::Op::softmax_backward;
  if (!check_backward<T>(a, op, path, log)) return;
  constexpr int kMax = 16 / sizeof(T);
  const int pack = ch12::detail::pick_pack<kMax>(a.cols, {{a.x, sizeof(T)}, {a.dy, sizeof(T)}, {a.y, sizeof(T)}});
  const int phase = ch12::detail::pick_phase<kMax>(a.cols, {{a.x, sizeof(T)}, {a.dy, sizeof(T)}, {a.y, sizeof(T)}});
  const bool automatic = path == Path::automatic;
  const int64_t rows = a.rows, cols = a.cols;
  if (automatic)
    path = policy::backward_path(device(), log ? policy::Op::log_softmax_backward : policy::Op::softmax_backward, rows,
                                 cols, sizeof(T), pack == kMax, pack != kMax && phase >= 0);
  const DirectLoad<T> load_y{static_cast<const T*>(a.x), a.cols};
  const DirectLoad<T> load_dy{static_cast<const T*>(a.dy), a.cols};
  const DirectStore<T> store{static_cast<T*>(a.y), a.cols};
  ch12::detail::with_pack<kMax>(pack, [&](auto p) {
    constexpr int kPack = decltype(p)::value;
    if (path == Path::cluster) {
      const int csize = policy::backward_cluster_size(device(), rows, cols, sizeof(T));  // > 0: cols was checked
      const bool peel = kPack == 1 && phase >= 0;  // rows read in packs from their first boundary
      if (peel ? launch_backward_cluster<kMax, true>(load_y, load_dy, store, rows, cols, csize, log, stream, phase)
               : launch_backward_cluster<kPack>(load_y, load_dy, store, rows, cols, csize, log, stream))
        return;
      course::require(automatic, "the backward's cluster path: no cluster of ", csize, " blocks fits on this GPU");
      path = cols <= cols_in_smem<T>(1) ? Path::smem : Path::uncached;  // the rule's next choice
    }
    if (path == Path::tile) {
      if constexpr (kPack * sizeof(T) == 16)
        return launch_backward_tile<kPack>(load_y, load_dy, store, rows, cols, log, stream);
      path = Path::warp;  // one-element packs (a misaligned or odd row): the lanes load
    }
    if (path == Path::warp) {
      if constexpr (kPack == 1 && kMax > 1)  // the peel
        if (phase >= 0) return launch_backward_warp<kMax, true>(load_y, load_dy, store, rows, cols, log, stream, phase);
      return launch_backward_warp<kPack>(load_y, load_dy, store, rows, cols, log, stream);
    }
    if (path == Path::block_regs) {
      if constexpr (kPack == 1 && kMax > 1)  // the peel
        if (phase >= 0)
          return launch_backward_block_regs<kMax, true>(load_y, load_dy, store, rows, cols, log, stream, phase);
      return launch_backward_block_regs<kPack>(load_y, load_dy, store, rows, cols, log, stream);
    }
    if (path == Path::smem) {
      if constexpr (kPack == 1 && kMax > 1)  // the peel: packs from each row's first boundary
        if (phase >= 0) return launch_backward_smem<kMax, true>(load_y, load_dy, store, rows, cols, log, stream, phase);
      return launch_backward_smem<kPack>(load_y, load_dy, store, rows, cols, log, stream);
    }
    if constexpr (kPack == 1 && kMax > 1)  // the peel
      if (phase >= 0) return launch_backward_uncached<kMax, true>(load_y, load_dy, store, rows, cols, log, stream, phase);
    launch_backward_uncached<kPack>(load_y, load_dy, store, rows, cols, log, stream);
  });
}
/// [backward_dispatch]

}  // namespace detail

template <typename T>
void softmax_backward(const course::Args& a, cudaStream_t stream, Path path) {
  detail::backward_impl<T>(a, stream, path, false);
}
template <typename T>
void log_softmax_backward(const course::Args& a, cudaStream_t stream, Path path) {
  detail::backward_impl<T>(a, stream, path, true);
}

template <typename T>
int block_regs_threads(course::Op op, int64_t cols) {
  constexpr int kPack = 16 / sizeof(T);
  if (cols < 1 || cols > policy::kBlockRegsMaxCols || cols % kPack != 0 || device().sm_count == 0) return 0;
  const bool backward = op == course::Op::softmax_backward || op == course::Op::log_softmax_backward;
  return backward ? detail::block_regs_backward_shape<kPack, T>(cols).block
                  : ch12::detail::block_regs_forward_shape<kPack, DirectLoad<T>, DirectStore<T>>(cols).block;
}

}  // namespace ch14

#define CH14_INSTANTIATE(T)                                                                       \
  template void ch14::softmax_backward<T>(const course::Args&, cudaStream_t, ch14::Path);       \
  template void ch14::log_softmax_backward<T>(const course::Args&, cudaStream_t, ch14::Path);   \
  template int ch14::block_regs_threads<T>(course::Op, int64_t);
