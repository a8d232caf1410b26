/// @file launch.cuh
/// @brief Chapter 16 (first version, #41): the launchers of the three operations.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>

#include "cross_entropy.cuh"

namespace ch16 {

/// Calls f(std::integral_constant<int, kPack>, phase): 16-byte packs from each row's first boundary
/// when the pointers share the peel's phase, else one element at a time.
template <typename T, typename F>
void with_pack_phase(int64_t cols, std::initializer_list<std::pair<const void*, int>> ptrs, F&& f) {
  constexpr int kMax = 16 / sizeof(T);
  const int phase = course::pick_phase<kMax>(cols, ptrs);
  if (phase >= 0) return f(std::integral_constant<int, kMax>{}, phase);
  f(std::integral_constant<int, 1>{}, 0);
}

inline Ce ce_of(const course::Args& a) { return {a.rows, a.cols, a.ignore_index, a.label_smoothing, a.z_loss}; }
inline unsigned row_grid(int64_t rows) { return course::resident_grid(rows, 1, kBlock, 8); }

/// The workspace of the backward and the fused call: the count of rows not ignored (one float).
inline size_t count_workspace(int64_t, int64_t, course::DType) { return 16; }

/// Op::cross_entropy: a.loss, a.lse per row and a.loss_reduced from a.x and a.target.
template <typename T>
void cross_entropy(const course::Args& a, cudaStream_t stream) {
  if (!course::check_op_args(a, course::Op::cross_entropy, course::kPeelMaxCols, "cols < 2^31")) return;
  const Ce c = ce_of(a);
  const auto* target = static_cast<const int32_t*>(a.target);
  with_pack_phase<T>(a.cols, {{a.x, sizeof(T)}}, [&](auto pack, int phase) {
    ce_forward_kernel<T, decltype(pack)::value><<<row_grid(a.rows), kBlock, 0, stream>>>(
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
  with_pack_phase<T>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}}, [&](auto pack, int phase) {
    ce_backward_kernel<T, decltype(pack)::value><<<row_grid(a.rows), kBlock, 0, stream>>>(
        static_cast<const T*>(a.x), static_cast<const int32_t*>(a.target), static_cast<const float*>(a.saved_lse),
        static_cast<const float*>(a.dloss), count, a.reduction == course::Reduction::mean, ce_of(a), phase,
        static_cast<T*>(a.y));
    CUDA_CHECK_LAUNCH();
  });
}

/// The longest row the fused kernel caches on this GPU (0 without a device): the cache holds
/// cols + kPack elements (its alignment shift).
template <typename T>
int64_t fused_cache_max_cols() {
  static const int64_t cols = [] {  // asked once: the launcher asks on every launch
    const int optin = course::smem_per_block_optin();
    if (optin == 0) return int64_t(0);
    constexpr int kPack = 16 / sizeof(T);
    const size_t static_bytes = course::allow_max_smem(ce_fused_kernel<T, kPack, true>);
    return (int64_t(optin) - int64_t(static_bytes)) / int64_t(sizeof(T)) - kPack;
  }();
  return cols;
}

/// Op::cross_entropy_fused: a.y = dlogits, a.loss per row and a.loss_reduced, from a.x and a.target
/// (upstream gradient a.loss_grad).
template <typename T>
void cross_entropy_fused(const course::Args& a, cudaStream_t stream) {
  if (!course::check_op_args(a, course::Op::cross_entropy_fused, course::kPeelMaxCols, "cols < 2^31")) return;
  const bool mean = a.reduction == course::Reduction::mean;
  const float* count = count_rows(a, course::Op::cross_entropy_fused, stream);
  const bool cached = a.cols <= fused_cache_max_cols<T>();
  with_pack_phase<T>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}}, [&](auto pack, int phase) {
    constexpr int kPack = decltype(pack)::value;
    const auto* x = static_cast<const T*>(a.x);
    const auto* target = static_cast<const int32_t*>(a.target);
    if (cached) {
      auto kernel = ce_fused_kernel<T, kPack, true>;
      const size_t smem = size_t(a.cols + kPack) * sizeof(T);
      course::allow_max_smem(kernel);
      kernel<<<row_grid(a.rows), kBlock, smem, stream>>>(x, target, a.loss_grad, count, mean, ce_of(a), phase,
                                                         static_cast<T*>(a.y), static_cast<float*>(a.loss));
    } else {
      ce_fused_kernel<T, kPack, false><<<row_grid(a.rows), kBlock, 0, stream>>>(
          x, target, a.loss_grad, count, mean, ce_of(a), phase, static_cast<T*>(a.y), static_cast<float*>(a.loss));
    }
    CUDA_CHECK_LAUNCH();
  });
  ce_reduce_kernel<<<1, kReduceBlock, 0, stream>>>(static_cast<const int32_t*>(a.target),
                                                   static_cast<const float*>(a.loss), a.rows, a.ignore_index, mean,
                                                   nullptr, static_cast<float*>(a.loss_reduced));
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch16
