/// @file main.cu
/// @brief Chapter 05's executable: registers the warp softmax with paired 16-bit conversions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "half2_softmax.cuh"

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("05_half2_softmax", "Warp softmax on fp16/bf16 with paired half2 conversions");
  const course::Limits limits{
      ch05::kMaxCols,
      {8, 16, 32, 64, 128, 256, 512, 1024},
      "f16/bf16 only; cols <= 1024; packs of 8 when cols and both pointers allow, narrower otherwise"};
  ch.add(Op::softmax, "warp_half2", DType::f16, ch05::softmax_warp_half2<__half>, limits);
  ch.add(Op::softmax, "warp_half2", DType::bf16, ch05::softmax_warp_half2<__nv_bfloat16>, limits);
  return ch.run(argc, argv);
}
