/// @file launch.cuh
/// @brief Chapter 15: the backward's launcher. It picks the kernel of norm_backward.cuh for a
/// shape: the pack and its phase, the group and packs a thread (row_groups.cuh), register or
/// shared-memory accumulators, the split across a cluster (plan.h: split_blocks), the trips ahead
/// where they fit (rows_ahead.cuh); then one wave of blocks (plan.h: plan_partials) and the column
/// sums' second stage (column_sum.cuh).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "blocks/occupancy.cuh"
#include "column_sum.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/ops.h"
#include "norm_backward.cuh"
#include "plan.h"
#include "row_groups.cuh"
#include "split_rows.cuh"

namespace ch15 {

/// LayerNorm (kLayer) or RMSNorm backward: a.y = dx, a.dgamma (and a.dbeta) from a.x, a.dy, a.gamma,
/// a.saved_mean (LayerNorm) and a.saved_rstd. a.workspace: backward_workspace bytes.
template <typename T, bool kLayer>
void norm_backward(const course::Args& a, cudaStream_t stream) {
  const course::Op op = kLayer ? course::Op::layer_norm_backward : course::Op::rms_norm_backward;
  if (!course::check_op_args(a, op, kMaxCols, "cols < 2^31 (the peel counts columns in int)")) return;
  constexpr int kAccs = kLayer ? 2 : 1;
  const int sms = course::sm_count();
  const size_t need = backward_workspace(a.rows, a.cols, kAccs, sms);
  course::require(a.workspace && a.workspace_bytes >= need, course::op_name(op), " needs a workspace of ", need,
                  " bytes for its partial rows (ch15::backward_workspace)");
  float* partials = static_cast<float*>(a.workspace);
  int64_t parts = 0;
  with_pack_phase<T>(a.cols, {{a.x, sizeof(T)}, {a.dy, sizeof(T)}, {a.y, sizeof(T)}}, [&](auto pack, int phase) {
    constexpr int kPack = decltype(pack)::value;
    // Rows of one class (plan.h: row_period) put their packs on the same columns: each block takes
    // one class where its accumulators are registers.
    const int period = row_period(a.cols, kPack);
    // Long rows: `split` blocks a row (plan.h: split_blocks), `slice` columns each (whole packs).
    // on_chip: one block would hold the row and keep its column sums in shared memory (or registers).
    const int64_t packs = a.cols / kPack;
    const bool on_chip = shape_for(packs).held > 0 &&
                         size_t(kAccs) * size_t(padded_cols<kPack>(a.cols)) * sizeof(float) <= kAccSmemMax;
    const int split = kPack > 1 && split_available() ? split_blocks(packs, on_chip, kAccs * kPack) : 1;
    const int64_t slice = split > 1 ? course::ceil_div(packs, int64_t(split)) * kPack : a.cols;
    // The widest block's columns: the last slice takes what is left, usually fewer than `slice`,
    // but up to cols % kPack more where the slices' packs come out even.
    const int64_t widest = std::max(slice, a.cols - (split - 1) * slice);
    auto launch = [&](auto group, auto groups, auto held) {
      constexpr int G = decltype(group)::value, Gs = decltype(groups)::value, H = decltype(held)::value;
      // The blocks, or clusters of `split`, of `kernel` the GPU holds at once with smem bytes each.
      auto resident_of = [&](auto kernel, size_t smem) -> int64_t {
        return split > 1 ? ch13::detail::resident_clusters(kernel, split, G * Gs, smem)
                         : int64_t(sms) * (course::resident_threads(kernel, G * Gs, smem) / (G * Gs));
      };
      auto run = [&](auto kernel, size_t smem, bool in_smem, int classes) {
        course::allow_max_smem(kernel);
        const int64_t resident = resident_of(kernel, smem);  // one wave of them
        course::require(resident > 0, "the backward's block (or cluster of ", split, ") does not fit on this GPU");
        const Plan plan = plan_partials(a.rows, resident, classes);
        const BackwardArgs<T> p{static_cast<const T*>(a.x),
                                static_cast<const T*>(a.dy),
                                static_cast<const T*>(a.gamma),
                                static_cast<const float*>(a.saved_mean),
                                static_cast<const float*>(a.saved_rstd),
                                static_cast<T*>(a.y),
                                partials,
                                a.rows,
                                a.cols,
                                plan.rows_per_block,
                                classes,
                                slice};
        if (split > 1) {
          const bool launched =
              ch13::detail::launch_clusters(kernel, plan.blocks, split, G * Gs, smem, stream, p, phase, in_smem);
          course::require(launched, "the backward's cluster of ", split, " blocks cannot be resident on this GPU");
        } else {
          kernel<<<unsigned(plan.blocks), G * Gs, smem, stream>>>(p, phase, in_smem);
          CUDA_CHECK_LAUNCH();
        }
        parts = plan.blocks;
      };
      // The kernel with register (kRegAcc) or shared-memory accumulators, its rows split or not.
      auto run_with = [&](auto reg_acc, size_t smem, bool in_smem) {
        constexpr bool R = decltype(reg_acc)::value;
        // With its trips ahead where it has them and they cost no resident block (sm_80
        // on; a GPU of less shared memory keeps two blocks of one-pack threads without them).
        auto go = [&](auto split_rows) {
          constexpr bool S = decltype(split_rows)::value;
          constexpr size_t staged = staging_bytes<T, kAccs, kPack, G, Gs, H, R, S>();
          const auto plain = norm_backward_kernel<T, kPack, G, Gs, H, kLayer, R, S, false>;
          if constexpr (staged > 0) {
            const auto ahead = norm_backward_kernel<T, kPack, G, Gs, H, kLayer, R, S, true>;
            const bool fits = course::device_code_version() >= 80 &&
                              smem + staged + course::allow_max_smem(ahead) <= size_t(course::smem_per_block_optin()) &&
                              resident_of(ahead, smem + staged) >= resident_of(plain, smem);
            if (fits) return run(ahead, smem + staged, in_smem, R ? period : 1);
          }
          run(plain, smem, in_smem, R ? period : 1);
        };
        if constexpr (kPack > 1 && Gs == 1)
          if (split > 1) return go(std::true_type{});
        course::require(split == 1, "a split row's slice of ", slice, " columns is not a group of 512's (plan.h)");
        go(std::false_type{});
      };
      const size_t row_bytes = size_t(kAccs) * size_t(widest) * sizeof(float);
      if constexpr (H > 0 && H <= kHeldMax) {  // register accumulators: up to kHeldMax packs a thread
        return run_with(std::true_type{}, Gs > 1 ? row_bytes : 0, true);
      }
      const size_t padded_bytes = size_t(kAccs) * size_t(padded_cols<kPack>(widest)) * sizeof(float);
      const bool in_smem = Gs * padded_bytes <= kAccSmemMax;
      course::require(in_smem || Gs == 1, "a block of several groups keeps its accumulators in shared memory");
      run_with(std::false_type{}, in_smem ? Gs * padded_bytes : 0, in_smem);
    };
    if constexpr (kPack == 1)  // one element at a time: the rare misaligned view, read twice
      launch(std::integral_constant<int, 512>{}, std::integral_constant<int, 1>{}, std::integral_constant<int, 0>{});
    else
      with_shape(shape_for(widest / kPack), launch);  // the shape of the widest block's columns
  });
  launch_column_sum(partials, parts, a.cols, kAccs, static_cast<float*>(a.dgamma),
                    kLayer ? static_cast<float*>(a.dbeta) : nullptr, stream);
}

}  // namespace ch15
