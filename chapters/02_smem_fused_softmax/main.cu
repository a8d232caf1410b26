/// @file main.cu
/// @brief Chapter 02's executable: registers the shared-memory fused softmax.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "smem_softmax.cuh"

namespace {
course::Limits limits_for(int64_t max_cols) {
  // Block size changes at 512, 1024, ..., 8192 cols (16 per thread); near 12288 fp32 (48 KB) the
  // kernel starts to opt in to more shared memory.
  return {max_cols,
          {512, 1024, 2048, 4096, 8192, 12288},
          max_cols > 0 ? "cols <= " + std::to_string(max_cols) + " (the row in shared memory of this GPU)"
                       : "cols <= the GPU's shared memory per block / 4 (the row in shared memory)"};
}
}  // namespace

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("02_smem_fused_softmax", "Fused softmax: one block per row, the row in shared memory");
  ch.add(Op::softmax, "smem", DType::f32, ch02::softmax_smem<float>, limits_for(ch02::smem_softmax_max_cols<float>()));
  ch.add(Op::softmax, "smem", DType::f16, ch02::softmax_smem<__half>, limits_for(ch02::smem_softmax_max_cols<__half>()));
  ch.add(Op::softmax, "smem", DType::bf16, ch02::softmax_smem<__nv_bfloat16>,
         limits_for(ch02::smem_softmax_max_cols<__nv_bfloat16>()));
  return ch.run(argc, argv);
}
