/// @file main.cu
/// @brief Chapter 03's executable: registers the warp-per-row softmax with the harness.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "warp_softmax.cuh"

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("03_warp_shuffle_softmax", "Warp-per-row softmax: the row in registers, shuffle reductions");
  // Group widths change at 2, 4, 8, 16, 32 cols; then columns per lane, every 32 columns up to 128
  // and every 64 beyond; rows per group: four up to 64 columns, two up to 128.
  const course::Limits limits{ch03::kMaxCols,
                              {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024},
                              "cols <= 1024 (32 lanes x 32 registers); one element per load"};
  ch.add(Op::softmax, "warp", DType::f32, ch03::softmax_warp<float>, limits);
  ch.add(Op::softmax, "warp", DType::f16, ch03::softmax_warp<__half>, limits);
  ch.add(Op::softmax, "warp", DType::bf16, ch03::softmax_warp<__nv_bfloat16>, limits);
  return ch.run(argc, argv);
}
