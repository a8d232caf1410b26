/// @file pack_softmax.cu
/// @brief Chapter 04: the warp softmax of chapter 03, loading and storing 16 bytes per
/// instruction through `Pack<T, N>` (4 floats or 8 halves) wherever cols and the pointers'
/// alignment allow, and narrower packs, down to single elements, where they do not.
///
/// The pack and the choice of its width live in common/course/pack.cuh and softmax_warp.cuh.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "course/softmax_warp.cuh"

/// Softmax of rows of cols <= 1024, in packs of up to 16 bytes.
template <typename T>
void softmax_warp_pack(const course::Args& a, cudaStream_t stream) {
  course::softmax_warp<T, course::ScalarConvert<T>, 16 / sizeof(T)>(a, stream);
}

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("04_pack_vectorized_softmax", "Warp softmax with 16-byte Pack loads and stores");
  const course::Limits limits{
      course::kWarpSoftmaxMaxCols,
      {8, 16, 32, 64, 128, 256, 512, 1024},
      "cols <= 1024; 16-byte packs when cols and both pointers allow, narrower packs otherwise"};
  ch.add(Op::softmax, "warp_pack", DType::f32, softmax_warp_pack<float>, limits);
  ch.add(Op::softmax, "warp_pack", DType::f16, softmax_warp_pack<__half>, limits);
  ch.add(Op::softmax, "warp_pack", DType::bf16, softmax_warp_pack<__nv_bfloat16>, limits);
  return ch.run(argc, argv);
}
