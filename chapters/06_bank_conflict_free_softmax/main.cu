/// @file main.cu
/// @brief Chapter 06's executable: the natural and the transposed shared-memory layouts.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "smem_pack_softmax.cuh"

namespace {
template <typename T>
course::Limits limits() {
  const int64_t max_cols = ch06::smem_pack_softmax_max_cols<T>();
  // 12288 fp32 = 48 KB, where the row starts to need the opt-in shared memory.
  return {max_cols,
          {12288},
          max_cols > 0 ? "cols <= " + std::to_string(max_cols) +
                             " (the row in shared memory of this GPU); packs of up to 16 bytes"
                       : "cols <= the GPU's shared memory per block / 4; packs of up to 16 bytes"};
}

template <typename T>
void add(course::Chapter& ch, course::DType t) {
  ch.add(course::Op::softmax, "smem_natural", t, ch06::softmax_smem_natural<T>, limits<T>());
  ch.add(course::Op::softmax, "smem_transposed", t, ch06::softmax_smem_transposed<T>, limits<T>());
  ch.add(course::Op::softmax, "smem_transposed16", t, ch06::softmax_smem_transposed16<T>, limits<T>());
}
}  // namespace

int main(int argc, char** argv) {
  course::Chapter ch("06_bank_conflict_free_softmax",
                     "Block-per-row softmax with packs: natural vs bank-conflict-free shared layout");
  add<float>(ch, course::DType::f32);
  add<__half>(ch, course::DType::f16);
  add<__nv_bfloat16>(ch, course::DType::bf16);
  return ch.run(argc, argv);
}
