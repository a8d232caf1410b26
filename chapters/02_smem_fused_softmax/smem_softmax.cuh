/// @file smem_softmax.cuh
/// @brief Chapter 02: one kernel, one block per row, the row cached in shared memory.
#pragma once

#include <cub/block/block_reduce.cuh>

#include <cstdint>
#include <string>

#include "blocks/convert.cuh"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"

namespace ch02 {

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// [kernel]
template <typename T, int kBlock>
__global__ void __launch_bounds__(kBlock)
    softmax_smem_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
  extern __shared__ float row[];  // the whole row, cols floats
  using BlockReduce = cub::BlockReduce<float, kBlock>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float row_max, row_sum;
  const T* xr = x + int64_t(blockIdx.x) * cols;
  T* yr = y + int64_t(blockIdx.x) * cols;

  // Pass 1 over device memory: read x once, keep it in shared memory, and the thread's max.
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += kBlock) {
    const float v = course::to_float(xr[c]);
    row[c] = v;
    m = fmaxf(m, v);
  }
  m = BlockReduce(temp).Reduce(m, MaxOp{});  // valid in thread 0 only
  if (threadIdx.x == 0) row_max = m;
  __syncthreads();  // row_max visible to all; temp free for reuse
  m = row_max;

  // exp and the thread's sum, from shared memory: no device-memory traffic.
  float s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += kBlock) {
    const float e = expf(row[c] - m);
    row[c] = e;
    s += e;
  }
  s = BlockReduce(temp).Sum(s);
  if (threadIdx.x == 0) row_sum = s;
  __syncthreads();
  s = row_sum;

  // Pass 2 over device memory: write y once.
  const float inv = 1.0f / s;  // one division per row, a multiply per element
  for (int64_t c = threadIdx.x; c < cols; c += kBlock) yr[c] = course::from_float<T>(row[c] * inv);
}
/// [kernel]

// Static shared memory of the kernel (CUB's scratch and the two row statistics): the dynamic
// part, the row, gets what is left of the per-block limit.
template <typename T, int kBlock>
size_t static_smem() {
  static const size_t bytes = [] {
    cudaFuncAttributes attr;
    CUDA_CHECK(cudaFuncGetAttributes(&attr, softmax_smem_kernel<T, kBlock>));
    return attr.sharedSizeBytes;
  }();
  return bytes;
}

template <typename T, int kBlock>
void launch(const course::Args& a, cudaStream_t stream) {
  /// [launch]
  const size_t smem = size_t(a.cols) * sizeof(float);
  if (smem + static_smem<T, kBlock>() > 48 * 1024)  // past 48 KB a kernel must opt in
    CUDA_CHECK(
        cudaFuncSetAttribute(softmax_smem_kernel<T, kBlock>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  softmax_smem_kernel<T, kBlock>
      <<<unsigned(a.rows), kBlock, smem, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.cols);
  /// [launch]
  CUDA_CHECK_LAUNCH();
}

/// The longest row that fits in this device's shared memory (opt-in limit per block, less the
/// kernel's static shared memory), in fp32 elements; 0 when no GPU is present.
template <typename T>
int64_t smem_softmax_max_cols() {
  /// [max_cols]
  int dev = 0, optin = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;  // no GPU: the limit is unknown (and nothing will run)
  }
  return (int64_t(optin) - int64_t(static_smem<T, 1024>())) / int64_t(sizeof(float));  // 1024: the largest static part
  /// [max_cols]
}

/// Softmax of each row, the row cached in shared memory as fp32 (cols <= smem_softmax_max_cols()).
/// [block_size]
// A block as wide as the row needs: about sixteen columns per thread, 32 to 1024 threads. A
// 32-column row gets one warp, not 512 threads of which 480 would idle.
// The sixteen is a round starting point, not a tuned value.
template <typename T>
void softmax_smem(const course::Args& a, cudaStream_t stream) {
  const int64_t max_cols = smem_softmax_max_cols<T>();
  const std::string limit = "the row must fit in shared memory: cols <= " + std::to_string(max_cols) +
                            " on this GPU; chapter 07 handles longer rows";
  if (!course::check_block_per_row_args(a, max_cols, limit.c_str())) return;
  const int64_t threads = course::ceil_div(a.cols, 16);
  if (threads <= 32) return launch<T, 32>(a, stream);
  if (threads <= 64) return launch<T, 64>(a, stream);
  if (threads <= 128) return launch<T, 128>(a, stream);
  if (threads <= 256) return launch<T, 256>(a, stream);
  if (threads <= 512) return launch<T, 512>(a, stream);
  launch<T, 1024>(a, stream);
}
/// [block_size]

}  // namespace ch02
