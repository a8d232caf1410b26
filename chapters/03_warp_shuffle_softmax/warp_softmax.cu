/// @file warp_softmax.cu
/// @brief Chapter 03: a warp per row, the row in registers, max and sum by `__shfl_xor_sync`
/// all-reductions: no shared memory and no block barrier, and narrower groups of lanes (1 to 16)
/// with two rows each for short rows, so that small cols still fill the GPU.
///
/// The kernel is course::softmax_warp_kernel (common/course/softmax_warp.cuh), which chapter 04
/// extends with packs; here it runs with one element per load (kMaxPack = 1).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "course/softmax_warp.cuh"

/// Softmax of rows of cols <= 1024, one element per load.
template <typename T>
void softmax_warp_scalar(const course::Args& a, cudaStream_t stream) {
  course::softmax_warp<T, course::ScalarConvert<T>, 1>(a, stream);
}

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("03_warp_shuffle_softmax", "Warp-per-row softmax: the row in registers, shuffle reductions");
  // Group widths change at 2, 4, 8, 16, 32 cols; columns per lane at every multiple of 32 (two
  // rows per group up to 128).
  const course::Limits limits{course::kWarpSoftmaxMaxCols,
                              {2, 4, 8, 16, 32, 64, 128, 512, 1024},
                              "cols <= 1024 (32 lanes x 32 registers); one element per load"};
  ch.add(Op::softmax, "warp", DType::f32, softmax_warp_scalar<float>, limits);
  ch.add(Op::softmax, "warp", DType::f16, softmax_warp_scalar<__half>, limits);
  ch.add(Op::softmax, "warp", DType::bf16, softmax_warp_scalar<__nv_bfloat16>, limits);
  return ch.run(argc, argv);
}
