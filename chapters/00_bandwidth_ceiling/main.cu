/// @file main.cu
/// @brief Chapter 00's executable: registers the two copies with the harness.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "copy.cuh"

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("00_bandwidth_ceiling", "The ceiling: device-to-device copy (cudaMemcpy and a 16-byte kernel)");
  const course::Limits any{0, {}, "any size; 16-byte vectors when both pointers are 16-byte aligned, else scalar"};
  ch.add(Op::copy, "memcpy", DType::f32, ch00::copy_memcpy<float>, {0, {}, "any size"});
  ch.add(Op::copy, "memcpy", DType::f16, ch00::copy_memcpy<__half>, {0, {}, "any size"});
  ch.add(Op::copy, "memcpy", DType::bf16, ch00::copy_memcpy<__nv_bfloat16>, {0, {}, "any size"});
  ch.add(Op::copy, "vec16", DType::f32, ch00::copy_vec16<float>, any);
  ch.add(Op::copy, "vec16", DType::f16, ch00::copy_vec16<__half>, any);
  ch.add(Op::copy, "vec16", DType::bf16, ch00::copy_vec16<__nv_bfloat16>, any);
  return ch.run(argc, argv);
}
