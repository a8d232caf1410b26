/// @file main.cu
/// @brief Chapter 04's executable: registers the packed warp softmax with the harness.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "pack_softmax.cuh"

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("04_pack_vectorized_softmax", "Warp softmax with 16-byte Pack loads and stores");
  const course::Limits limits{
      ch04::kMaxCols,
      {8, 16, 32, 64, 128, 256, 512, 1024},
      "cols <= 1024; 16-byte packs when cols and both pointers allow, narrower packs otherwise"};
  ch.add(Op::softmax, "warp_pack", DType::f32, ch04::softmax_warp_pack<float>, limits);
  ch.add(Op::softmax, "warp_pack", DType::f16, ch04::softmax_warp_pack<__half>, limits);
  ch.add(Op::softmax, "warp_pack", DType::bf16, ch04::softmax_warp_pack<__nv_bfloat16>, limits);
  return ch.run(argc, argv);
}
