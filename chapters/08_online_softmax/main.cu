/// @file main.cu
/// @brief Chapter 08's executable: registers the online-softmax kernel with the harness.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "online_softmax.cuh"

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("08_online_softmax", "Online softmax: max and sum in one pass, the row read twice");
  const course::Limits limits{0, {}, "any cols (rows < 2^31); 16-byte packs when cols and pointers allow"};
  ch.add(Op::softmax, "online", DType::f32, ch08::softmax_online<float>, limits);
  ch.add(Op::softmax, "online", DType::f16, ch08::softmax_online<__half>, limits);
  ch.add(Op::softmax, "online", DType::bf16, ch08::softmax_online<__nv_bfloat16>, limits);
  ch.add_sweep(course::long_row_sweep());
  return ch.run(argc, argv);
}
