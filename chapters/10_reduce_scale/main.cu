/// @file main.cu
/// @brief Chapter 10's executable: registers the block and the warp ReduceScale with the harness.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "reduce_scale.cuh"

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("10_reduce_scale", "ReduceScale: each row divided by its max |x|, in place");
  const course::Limits block{0, {}, "any cols (rows < 2^31); the row read twice"};
  const course::Limits warp{1024, {32, 64, 128, 256, 512}, "cols <= 1024; the row in registers, 16-byte packs"};
  ch.add(Op::reduce_scale, "block", DType::f32, ch10::reduce_scale_block<float>, block);
  ch.add(Op::reduce_scale, "block", DType::f16, ch10::reduce_scale_block<__half>, block);
  ch.add(Op::reduce_scale, "block", DType::bf16, ch10::reduce_scale_block<__nv_bfloat16>, block);
  ch.add(Op::reduce_scale, "warp", DType::f32, ch10::reduce_scale_warp<float>, warp);
  ch.add(Op::reduce_scale, "warp", DType::f16, ch10::reduce_scale_warp<__half>, warp);
  ch.add(Op::reduce_scale, "warp", DType::bf16, ch10::reduce_scale_warp<__nv_bfloat16>, warp);
  ch.add_sweep({{442368}, {128}});  // the headline shape
  return ch.run(argc, argv);
}
