/// @file main.cu
/// @brief Chapter 16's executable: cross-entropy forward, backward and the
/// fused forward and backward, a block per row, on the common harness.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "harness/harness.h"
#include "launch.cuh"

namespace {

using course::DType;
using course::Op;

template <typename T>
void add_type(course::Chapter& ch, DType d) {
  const std::string text = "cols < 2^31, any rows; a block per row (" + std::to_string(ch16::kSmallBlock) +
                           " threads up to " + std::to_string(ch16::small_block_max_cols<T>()) + " columns, " +
                           std::to_string(ch16::kLargeBlock) + " past), 16-byte packs from each row's first boundary";
  const std::vector<int64_t> small = {ch16::small_block_max_cols<T>()};
  ch.add(Op::cross_entropy, "rows", d, ch16::cross_entropy<T>, course::Limits{0, small, text});
  ch.add(Op::cross_entropy_backward, "rows", d, ch16::cross_entropy_backward<T>, course::Limits{0, small, text},
         ch16::count_workspace);
  std::vector<int64_t> thresholds = ch16::fused_thresholds<T>();
  const std::string fused_text =
      thresholds.empty() ? text + "; one read of rows a block caches, two past them"
                         : text + "; one read up to " + std::to_string(thresholds.back()) +
                               " columns (a block, then a cluster of 2-16 blocks, holds the row in shared memory), two past it";
  thresholds.insert(thresholds.begin(), small.front());
  ch.add(Op::cross_entropy_fused, "rows", d, ch16::cross_entropy_fused<T>, course::Limits{0, thresholds, fused_text},
         ch16::count_workspace);
}

}  // namespace

int main(int argc, char** argv) {
  course::Chapter ch("16_cross_entropy", "Cross-entropy over a large vocabulary: loss and gradient");
  add_type<float>(ch, DType::f32);
  add_type<__half>(ch, DType::f16);
  add_type<__nv_bfloat16>(ch, DType::bf16);
  // Language models' vocabularies only (baselines/torch_peers.py's VOCAB): the standard sweep's
  // 32-32768 columns are not a vocabulary (the suite still checks them).
  ch.set_sweeps({{{4096, 16384}, {32000, 50257, 128256}}}, true);
  return ch.run(argc, argv);
}
