/// @file main.cu
/// @brief Chapter 07's executable: registers the uncached block-per-row softmax with the harness.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "uncached_softmax.cuh"

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("07_block_uncached_softmax", "Long rows: no cache, the row read three times through L2");
  const course::Limits limits{0, {}, "any cols (rows < 2^31); 16-byte packs when cols and pointers allow"};
  ch.add(Op::softmax, "uncached", DType::f32, ch07::softmax_uncached<float>, limits);
  ch.add(Op::softmax, "uncached", DType::f16, ch07::softmax_uncached<__half>, limits);
  ch.add(Op::softmax, "uncached", DType::bf16, ch07::softmax_uncached<__nv_bfloat16>, limits);
  ch.add_sweep(course::long_row_sweep());
  return ch.run(argc, argv);
}
