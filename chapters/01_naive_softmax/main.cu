/// @file main.cu
/// @brief Chapter 01's executable: registers the five-kernel softmax with the harness.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "naive_softmax.cuh"

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("01_naive_softmax", "Softmax as five kernels: max, subtract, exp, sum, divide");
  const course::Limits limits{0, {}, "any rows x cols; needs an fp32 rows x cols scratch tensor"};
  ch.add(Op::softmax, "naive", DType::f32, ch01::naive_softmax<float>, limits, ch01::naive_softmax_workspace);
  ch.add(Op::softmax, "naive", DType::f16, ch01::naive_softmax<__half>, limits, ch01::naive_softmax_workspace);
  ch.add(Op::softmax, "naive", DType::bf16, ch01::naive_softmax<__nv_bfloat16>, limits, ch01::naive_softmax_workspace);
  return ch.run(argc, argv);
}
