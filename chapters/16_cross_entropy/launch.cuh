/// @file launch.cuh
/// @brief Chapter 16: the launchers of the three operations.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include "cross_entropy.cuh"
#include "plan.h"

namespace ch16 {

/// Calls f(std::integral_constant<int, kPack>, std::integral_constant<int, kBlock>, phase):
/// 16-byte packs from each row's first boundary when the pointers share the peel's phase, else one
/// element at a time; blocks of kSmallBlock threads for rows of up to kSmallRowPacks packs, else
/// kLargeBlock.
template <typename T, typename F>
void with_pack_phase(int64_t cols, std::initializer_list<std::pair<const void*, int>> ptrs, F&& f) {
  constexpr int kMax = 16 / sizeof(T);
  const int phase = course::pick_phase<kMax>(cols, ptrs);
  auto with_block = [&](auto pack, int ph) {
    if (cols / decltype(pack)::value <= kSmallRowPacks) return f(pack, std::integral_constant<int, kSmallBlock>{}, ph);
    f(pack, std::integral_constant<int, kLargeBlock>{}, ph);
  };
  if (phase >= 0) return with_block(std::integral_constant<int, kMax>{}, phase);
  with_block(std::integral_constant<int, 1>{}, 0);
}

inline Ce ce_of(const course::Args& a) { return {a.rows, a.cols, a.ignore_index, a.label_smoothing, a.z_loss}; }
/// A grid of up to 8 waves of blocks of `block` threads, each taking rows block, block + grid, ...
inline unsigned row_grid(int64_t rows, int block) { return course::resident_grid(rows, 1, block, 8); }

/// The workspace of the backward and the fused call: the count of rows not ignored (one float).
inline size_t count_workspace(int64_t, int64_t, course::DType) { return 16; }

/// Op::cross_entropy: a.loss, a.lse per row and a.loss_reduced from a.x and a.target.
template <typename T>
void cross_entropy(const course::Args& a, cudaStream_t stream) {
  if (!course::check_op_args(a, course::Op::cross_entropy, course::kPeelMaxCols, "cols < 2^31")) return;
  const Ce c = ce_of(a);
  const auto* target = static_cast<const int32_t*>(a.target);
  with_pack_phase<T>(a.cols, {{a.x, sizeof(T)}}, [&](auto pack, auto block, int phase) {
    constexpr int kBlock = decltype(block)::value;
    ce_forward_kernel<T, decltype(pack)::value, kBlock><<<row_grid(a.rows, kBlock), kBlock, 0, stream>>>(
        static_cast<const T*>(a.x), target, c, phase, static_cast<float*>(a.loss), static_cast<float*>(a.lse));
    CUDA_CHECK_LAUNCH();
  });
  ce_reduce_kernel<<<1, kReduceBlock, 0, stream>>>(target, static_cast<const float*>(a.loss), a.rows, a.ignore_index,
                                                   a.reduction == course::Reduction::mean, nullptr,
                                                   static_cast<float*>(a.loss_reduced));
  CUDA_CHECK_LAUNCH();
}

/// The count of rows not ignored into the workspace (a mean's divisor); its pointer. Only a mean
/// needs it (the kernels read it only then).
inline float* count_rows(const course::Args& a, course::Op op, cudaStream_t stream) {
  course::require(a.workspace && a.workspace_bytes >= count_workspace(0, 0, course::DType::f32), course::op_name(op),
                  " needs a workspace of ", count_workspace(0, 0, course::DType::f32),
                  " bytes (ch16::count_workspace)");
  if (a.reduction != course::Reduction::mean) return static_cast<float*>(a.workspace);
  float* count = static_cast<float*>(a.workspace);
  ce_reduce_kernel<<<1, kReduceBlock, 0, stream>>>(static_cast<const int32_t*>(a.target), nullptr, a.rows,
                                                   a.ignore_index, false, count, nullptr);
  CUDA_CHECK_LAUNCH();
  return count;
}

/// Op::cross_entropy_backward: a.y = dlogits from a.x, a.target, a.saved_lse and a.dloss (per row).
template <typename T>
void cross_entropy_backward(const course::Args& a, cudaStream_t stream) {
  if (!course::check_op_args(a, course::Op::cross_entropy_backward, course::kPeelMaxCols, "cols < 2^31")) return;
  const float* count = count_rows(a, course::Op::cross_entropy_backward, stream);
  with_pack_phase<T>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}}, [&](auto pack, auto block, int phase) {
    constexpr int kBlock = decltype(block)::value;
    ce_backward_kernel<T, decltype(pack)::value, kBlock><<<row_grid(a.rows, kBlock), kBlock, 0, stream>>>(
        static_cast<const T*>(a.x), static_cast<const int32_t*>(a.target), static_cast<const float*>(a.saved_lse),
        static_cast<const float*>(a.dloss), count, a.reduction == course::Reduction::mean, ce_of(a), phase,
        static_cast<T*>(a.y));
    CUDA_CHECK_LAUNCH();
  });
}

/// The shared memory one block may give a cached row or chunk: the opt-in maximum less the
/// kernel's own static shared memory (0 without a device). Asked once per kernel.
template <typename Kernel>
int64_t cache_budget(Kernel kernel) {
  const int optin = course::smem_per_block_optin();
  return optin == 0 ? 0 : int64_t(optin) - int64_t(course::allow_max_smem(kernel));
}

static_assert(kMaxClusterBlocks == ch12::policy::kMaxClusterBlocks, "plan.h's cluster limit is chapter 13's");

/// This GPU's fused kernels as fused_plan sees them (all 0 without a device), asked once.
struct FusedBudget {
  int64_t block_bytes, cluster_bytes;
  bool clusters;
};
template <typename T>
const FusedBudget& fused_budget() {
  static const FusedBudget b = [] {
    constexpr int kPack = 16 / sizeof(T);
    FusedBudget v{cache_budget(ce_fused_kernel<T, kPack, kLargeBlock, true>), 0, ch12::device().clusters};
    if (v.clusters) v.cluster_bytes = cache_budget(ce_fused_cluster_kernel<T, kPack, kLargeBlock>);
    return v;
  }();
  return b;
}

/// fused_plan for a row of `cols` on this GPU: its packs are at most cols / kPack (the peel's
/// edges stay in registers).
template <typename T>
FusedPlan fused_plan_for(int64_t cols) {
  const FusedBudget& b = fused_budget<T>();
  return fused_plan(cols / int64_t(16 / sizeof(T)), b.block_bytes, b.cluster_bytes, b.clusters);
}

/// The row lengths where the fused kernel's choice changes on this GPU (the suite checks each
/// +-1): the longest row a block caches, then the longest a cluster of each size caches.
template <typename T>
std::vector<int64_t> fused_thresholds() {
  constexpr int64_t kPack = 16 / sizeof(T);
  const FusedBudget& b = fused_budget<T>();
  if (b.block_bytes <= 0) return {};
  const FusedLimits l = fused_limits(b.block_bytes, b.cluster_bytes, b.clusters);
  std::vector<int64_t> v = {l.one_block * kPack + kPack - 1};
  for (int64_t packs : l.cluster)
    if (packs > 0) v.push_back(packs * kPack + kPack - 1);
  return v;
}

/// The longest row of kSmallBlock blocks (all three operations).
template <typename T>
int64_t small_block_max_cols() {
  constexpr int kPack = 16 / sizeof(T);
  return kSmallRowPacks * kPack + kPack - 1;
}

/// [fused_launch]
/// Op::cross_entropy_fused: a.y = dlogits, a.loss per row and a.loss_reduced, from a.x and a.target
/// (upstream gradient a.loss_grad). One read of each row where fused_plan finds a block or a
/// cluster (sm_90) to cache it; two reads otherwise, and for rows not read in 16-byte packs.
template <typename T>
void cross_entropy_fused(const course::Args& a, cudaStream_t stream) {
  if (!course::check_op_args(a, course::Op::cross_entropy_fused, course::kPeelMaxCols, "cols < 2^31")) return;
  const bool mean = a.reduction == course::Reduction::mean;
  const float* count = count_rows(a, course::Op::cross_entropy_fused, stream);
  const FusedPlan plan = fused_plan_for<T>(a.cols);
  with_pack_phase<T>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}}, [&](auto pack, auto block, int phase) {
    constexpr int kPack = decltype(pack)::value, kBlock = decltype(block)::value;
    const auto* x = static_cast<const T*>(a.x);
    const auto* target = static_cast<const int32_t*>(a.target);
    auto* dx = static_cast<T*>(a.y);
    auto* loss = static_cast<float*>(a.loss);
    const size_t smem = size_t(plan.chunk_packs) * 16;
    if (plan.blocks == 1 && kPack * sizeof(T) == 16) {  // the cache holds 16-byte packs
      auto kernel = ce_fused_kernel<T, kPack, kBlock, true>;
      course::allow_max_smem(kernel);
      kernel<<<row_grid(a.rows, kBlock), kBlock, smem, stream>>>(x, target, a.loss_grad, count, mean, ce_of(a), phase,
                                                                 dx, loss);
      CUDA_CHECK_LAUNCH();
      return;
    }
    if constexpr (kPack * sizeof(T) == 16 && kBlock == kLargeBlock) {  // rows of a cluster are long: 512 threads
      if (plan.blocks > 1 &&
          ch13::detail::launch_clusters(ce_fused_cluster_kernel<T, kPack, kLargeBlock>, a.rows, plan.blocks,
                                        kLargeBlock, smem, stream, x, target, a.loss_grad, count, mean, ce_of(a),
                                        phase, plan.chunk_packs, dx, loss))
        return;
    }
    ce_fused_kernel<T, kPack, kBlock, false><<<row_grid(a.rows, kBlock), kBlock, 0, stream>>>(
        x, target, a.loss_grad, count, mean, ce_of(a), phase, dx, loss);
    CUDA_CHECK_LAUNCH();
  });
  ce_reduce_kernel<<<1, kReduceBlock, 0, stream>>>(static_cast<const int32_t*>(a.target),
                                                   static_cast<const float*>(a.loss), a.rows, a.ignore_index, mean,
                                                   nullptr, static_cast<float*>(a.loss_reduced));
  CUDA_CHECK_LAUNCH();
}
/// [fused_launch]

}  // namespace ch16
