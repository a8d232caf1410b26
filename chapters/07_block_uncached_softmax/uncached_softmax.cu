/// @file uncached_softmax.cu
/// @brief Chapter 07: rows too long for shared memory. Nothing is cached: a block of 1024 threads
/// reads the row three times (max, sum, write), in 16-byte packs, relying on L2 to serve the
/// re-reads while the row is still there. Any cols, up to millions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cub/block/block_reduce.cuh>

#include "course/block_softmax.cuh"
#include "course/convert.cuh"
#include "course/errors.h"
#include "course/harness.h"
#include "course/launch_math.h"
#include "course/pack.cuh"

namespace {

constexpr int kBlock = 1024;

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// [kernel]
template <typename T, int kPack>
__global__ void __launch_bounds__(kBlock)
    softmax_uncached_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
  using BlockReduce = cub::BlockReduce<float, kBlock>;
  using Convert = course::ScalarConvert<T>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float row_max, row_sum;
  const int64_t num_packs = cols / kPack;
  const T* xr = x + int64_t(blockIdx.x) * cols;
  T* yr = y + int64_t(blockIdx.x) * cols;

  float m = -INFINITY;  // pass 1: read the row for its max
  for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {
    float v[kPack];
    Convert::to_floats(course::load_pack<T, kPack>(xr + p * kPack), v);
#pragma unroll
    for (int j = 0; j < kPack; ++j) m = fmaxf(m, v[j]);
  }
  m = BlockReduce(temp).Reduce(m, MaxOp{});
  if (threadIdx.x == 0) row_max = m;
  __syncthreads();
  m = row_max;

  float s = 0;  // pass 2: read it again for the sum of exponentials
  for (int64_t p = threadIdx.x; p < num_packs; p += kBlock) {
    float v[kPack];
    Convert::to_floats(course::load_pack<T, kPack>(xr + p * kPack), v);
#pragma unroll
    for (int j = 0; j < kPack; ++j) s += expf(v[j] - m);
  }
  s = BlockReduce(temp).Sum(s);
  if (threadIdx.x == 0) row_sum = s;
  __syncthreads();
  const float inv = 1.0f / row_sum;

  course::write_softmax_row<T, kPack, kBlock>(xr, yr, num_packs, m, inv);  // pass 3: read once more, write y
}
/// [kernel]

template <typename T, int kPack>
void launch(const course::Args& a, cudaStream_t stream) {
  softmax_uncached_kernel<T, kPack>
      <<<unsigned(a.rows), kBlock, 0, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

/// Softmax of rows of any length: one 1024-thread block per row, the row read three times.
template <typename T>
void softmax_uncached(const course::Args& a, cudaStream_t stream) {
  if (!course::check_block_per_row_args(a)) return;
  course::with_widest_pack<T>(a.cols, a.x, a.y, [&](auto pack) { launch<T, decltype(pack)::value>(a, stream); });
}

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("07_block_uncached_softmax", "Long rows: no cache, the row read three times through L2");
  const course::Limits limits{0, {}, "any cols (rows < 2^31); 16-byte packs when cols and pointers allow"};
  ch.add(Op::softmax, "uncached", DType::f32, softmax_uncached<float>, limits);
  ch.add(Op::softmax, "uncached", DType::f16, softmax_uncached<__half>, limits);
  ch.add(Op::softmax, "uncached", DType::bf16, softmax_uncached<__nv_bfloat16>, limits);
  ch.add_sweep(course::long_row_sweep());
  return ch.run(argc, argv);
}
