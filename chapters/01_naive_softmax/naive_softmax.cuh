/// @file naive_softmax.cuh
/// @brief Chapter 01: softmax as five separate kernels (row max, subtract, exp, row sum,
/// divide), each reading its input from and writing its output to device memory.
#pragma once

#include <algorithm>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/std/functional>

#include "blocks/convert.cuh"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"

namespace ch01 {

constexpr int kThreads = 256;

using course::from_float;
using course::to_float;

// Row r of a rows x cols tensor starts at element r * cols: CUB's segment offsets.
struct RowStart {
  int64_t cols;
  __host__ __device__ int64_t operator()(int64_t r) const { return r * cols; }
};
template <typename T>
struct ToFloat {
  __device__ float operator()(T v) const { return to_float(v); }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// [kernels]
// Step 2: t = x - max(row). One thread per element; the row's max is read from memory.
template <typename T>
__global__ void subtract_max_kernel(const T* __restrict__ x, const float* __restrict__ row_max, float* __restrict__ t,
                                    int64_t n, int64_t cols) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) t[i] = to_float(x[i]) - row_max[i / cols];
}

// Step 3: t = exp(t), in place.
__global__ void exp_kernel(float* __restrict__ t, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) t[i] = expf(t[i]);
}

// Step 5: y = t / sum(row).
template <typename T>
__global__ void divide_kernel(const float* __restrict__ t, const float* __restrict__ row_sum, T* __restrict__ y,
                              int64_t n, int64_t cols) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = from_float<T>(t[i] / row_sum[i / cols]);
}
/// [kernels]

// The scratch space, carved out of one allocation at 256-byte boundaries.
struct Scratch {
  float* t;
  float* row_max;
  float* row_sum;
  void* cub_temp;
  size_t cub_bytes;
  size_t total;
};

inline size_t cub_temp_bytes(int64_t rows, int64_t cols) {
  auto starts = thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(0), RowStart{cols});
  auto ends = thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(1), RowStart{cols});
  size_t max_bytes = 0, sum_bytes = 0;
  auto in = thrust::make_transform_iterator(static_cast<const float*>(nullptr), ToFloat<float>{});
  CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(nullptr, max_bytes, in, static_cast<float*>(nullptr), rows, starts,
                                                ends, Max{}, -INFINITY));
  CUDA_CHECK(cub::DeviceSegmentedReduce::Sum(nullptr, sum_bytes, static_cast<const float*>(nullptr),
                                             static_cast<float*>(nullptr), rows, starts, ends));
  return std::max(max_bytes, sum_bytes);
}

inline Scratch carve(void* base, int64_t rows, int64_t cols) {
  auto align = [](size_t b) { return size_t(course::round_up(int64_t(b), 256)); };
  Scratch s;
  char* p = static_cast<char*>(base);
  size_t off = 0;
  s.t = reinterpret_cast<float*>(p + off);
  off += align(sizeof(float) * size_t(rows * cols));
  s.row_max = reinterpret_cast<float*>(p + off);
  off += align(sizeof(float) * size_t(rows));
  s.row_sum = reinterpret_cast<float*>(p + off);
  off += align(sizeof(float) * size_t(rows));
  s.cub_temp = p + off;
  s.cub_bytes = cub_temp_bytes(rows, cols);
  s.total = off + s.cub_bytes;
  return s;
}

/// Scratch bytes naive_softmax needs: an fp32 rows x cols tensor, two fp32 per-row vectors
/// and CUB's temporary storage.
inline size_t naive_softmax_workspace(int64_t rows, int64_t cols, course::DType) {
  return rows > 0 && cols > 0 ? carve(nullptr, rows, cols).total : 0;
}

/// Softmax of each row of a.x into a.y through an fp32 scratch tensor in a.workspace.
template <typename T>
void naive_softmax(const course::Args& a, cudaStream_t stream) {
  if (!course::check_rowwise_args(a)) return;
  const int64_t n = a.rows * a.cols;
  Scratch s = carve(a.workspace, a.rows, a.cols);
  course::require(a.workspace != nullptr && a.workspace_bytes >= s.total, "naive_softmax needs ", s.total,
                  " bytes of workspace, got ", a.workspace_bytes);
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const auto blocks = static_cast<unsigned>(course::ceil_div(n, kThreads));
  course::require(course::ceil_div(n, kThreads) < (int64_t(1) << 31), "rows x cols = ", n, " is past the grid limit");
  /// [launches]
  auto starts = thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(0), RowStart{a.cols});
  auto ends = thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(1), RowStart{a.cols});
  auto x_as_float = thrust::make_transform_iterator(x, ToFloat<T>{});
  size_t temp = s.cub_bytes;
  // 1. row_max = max(row of x): reads x.
  CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(s.cub_temp, temp, x_as_float, s.row_max, a.rows, starts, ends, Max{},
                                                -INFINITY, stream));
  // 2. t = x - row_max: reads x, writes t.
  subtract_max_kernel<<<blocks, kThreads, 0, stream>>>(x, s.row_max, s.t, n, a.cols);
  CUDA_CHECK_LAUNCH();
  // 3. t = exp(t): reads t, writes t.
  exp_kernel<<<blocks, kThreads, 0, stream>>>(s.t, n);
  CUDA_CHECK_LAUNCH();
  // 4. row_sum = sum(row of t): reads t.
  temp = s.cub_bytes;
  CUDA_CHECK(cub::DeviceSegmentedReduce::Sum(s.cub_temp, temp, s.t, s.row_sum, a.rows, starts, ends, stream));
  // 5. y = t / row_sum: reads t, writes y.
  divide_kernel<<<blocks, kThreads, 0, stream>>>(s.t, s.row_sum, y, n, a.cols);
  CUDA_CHECK_LAUNCH();
  /// [launches]
}

}  // namespace ch01
