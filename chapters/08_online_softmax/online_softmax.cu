/// @file online_softmax.cu
/// @brief Chapter 08: chapter 07's uncached kernel with the max and the sum found in one pass.
/// Each thread keeps a running (max m, sum d) and rescales d whenever m grows; threads, warps and
/// the block merge their pairs with d = d_a * exp(m_a - m) + d_b * exp(m_b - m). The row is read
/// twice instead of three times.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "course/block_softmax.cuh"
#include "course/convert.cuh"
#include "course/errors.h"
#include "course/harness.h"
#include "course/launch_math.h"
#include "course/online_softmax.cuh"
#include "course/pack.cuh"

namespace {

using course::MaxSum;

constexpr int kBlock = 1024;


/// [kernel]
template <typename T, int kPack>
__global__ void __launch_bounds__(kBlock)
    softmax_online_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
  using Convert = course::ScalarConvert<T>;
  const int64_t num_packs = cols / kPack;
  const T* xr = x + int64_t(blockIdx.x) * cols;
  T* yr = y + int64_t(blockIdx.x) * cols;

  MaxSum t;  // pass 1: max and sum together, one rescale per pack
  for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {
    float v[kPack];
    Convert::to_floats(course::load_pack<T, kPack>(xr + p * kPack), v);
    course::online_update<kPack>(t, v);
  }
  const MaxSum row = course::block_merge<kBlock>(t);
  const float inv = 1.0f / row.d;

  course::write_softmax_row<T, kPack, kBlock>(xr, yr, num_packs, row.m, inv);  // pass 2: read again, write y
}
/// [kernel]

template <typename T, int kPack>
void launch(const course::Args& a, cudaStream_t stream) {
  softmax_online_kernel<T, kPack>
      <<<unsigned(a.rows), kBlock, 0, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

/// Softmax of rows of any length: one 1024-thread block per row, the row read twice.
template <typename T>
void softmax_online(const course::Args& a, cudaStream_t stream) {
  if (!course::check_block_per_row_args(a)) return;
  course::with_widest_pack<T>(a.cols, a.x, a.y, [&](auto pack) { launch<T, decltype(pack)::value>(a, stream); });
}

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("08_online_softmax", "Online softmax: max and sum in one pass, the row read twice");
  const course::Limits limits{0, {}, "any cols (rows < 2^31); 16-byte packs when cols and pointers allow"};
  ch.add(Op::softmax, "online", DType::f32, softmax_online<float>, limits);
  ch.add(Op::softmax, "online", DType::f16, softmax_online<__half>, limits);
  ch.add(Op::softmax, "online", DType::bf16, softmax_online<__nv_bfloat16>, limits);
  ch.add_sweep(course::long_row_sweep());
  return ch.run(argc, argv);
}
