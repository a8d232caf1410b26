/// @file main.cu
/// @brief Chapter 15's executable: the RMSNorm forward and the LayerNorm and RMSNorm backward on the
/// common harness.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/device.h"
#include "harness/harness.h"
#include "norm.h"
#include "row_groups.cuh"

namespace {

using course::DType;
using course::Op;

// Where the kernels change shape, in columns: row_groups.cuh' shape_for (groups of 32 to 512
// threads, a pack each, then 2, 4 and 8 packs a thread of 512; past that a row is read twice);
// the forward's forward_shape_for (rms_norm.cuh: at the same numbers of packs, then 8 and 16 packs
// a thread of 512); where a peeled row's accumulators leave shared memory (plan.h:
// acc_smem_max_cols); and where the backward's rows are split across clusters of 2, 4 and 8 (plan.h:
// split_blocks). accs: 0 for the forward, else the backward's accumulator rows.
template <typename T>
std::vector<int64_t> thresholds(int accs) {
  constexpr int64_t kPack = ch15::kPackOf<T>;
  std::vector<int64_t> t;
  for (int64_t g = 32; g <= 512; g *= 2) t.push_back(g * kPack + kPack - 1);  // the last of g packs
  const int64_t held_max = accs > 0 ? ch15::kBackwardHeldMax : ch15::kForwardHeldMax;
  for (int64_t h = 2; h <= held_max; h *= 2) t.push_back(512 * h * kPack + kPack - 1);
  if (accs > 0) {
    t.push_back(ch15::acc_smem_max_cols<ch15::kPackOf<T>>(accs));
    // Rows split across a cluster (plan.h: split_blocks): rows from kSplitFixedMinPacks, and the
    // last row of 2, 4 and 8 blocks of either slice size (1024 or 2048 packs).
    std::vector<int64_t> packs = {ch15::kSplitFixedMinPacks, 8 * 512 * int64_t(ch15::kBackwardHeldMax)};
    for (int64_t slice : {ch15::split_slice_packs(accs * int(kPack)), ch15::kSplitSlicePacks})
      for (int64_t c : {2, 4, 8}) packs.push_back(c * slice);
    for (int64_t p : packs) t.push_back(p * kPack + kPack - 1);
  }
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

template <typename T>
void add_type(course::Chapter& ch, DType d) {
  const std::string text = "any rows x cols < 2^31; 16-byte packs from each row's first boundary";
  ch.add(Op::rms_norm, "rows", d, ch15::rms_norm<T>, course::Limits{0, thresholds<T>(0), text});
  auto workspace = [](int accs) {
    return [accs](int64_t rows, int64_t cols, DType) {
      return ch15::backward_workspace(rows, cols, accs, course::sm_count());
    };
  };
  ch.add(Op::layer_norm_backward, "partials", d, ch15::norm_backward<T, true>,
         course::Limits{0, thresholds<T>(2), text}, workspace(2));
  ch.add(Op::rms_norm_backward, "partials", d, ch15::norm_backward<T, false>, course::Limits{0, thresholds<T>(1), text},
         workspace(1));
}

}  // namespace

int main(int argc, char** argv) {
  course::Chapter ch("15_norm_backward", "LayerNorm and RMSNorm backward: the reduction across rows");
  add_type<float>(ch, DType::f32);
  add_type<__half>(ch, DType::f16);
  add_type<__nv_bfloat16>(ch, DType::bf16);
  ch.add_sweep({{4096, 16384}, {768, 1024, 4096, 8192}});  // fewer rows: the partial rows' share grows
  return ch.run(argc, argv);
}
