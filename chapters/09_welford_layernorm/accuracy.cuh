/// @file accuracy.cuh
/// @brief Chapter 09's variance experiment (`--accuracy FILE`): the variance of rows of normal(offset, 1) data in fp32 by three
/// formulas, against float64. The sum-of-squares formula E[x^2] - E[x]^2 squares the offset and
/// cancels it; two-pass and Welford only ever square deviations.
#pragma once

#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "harness/bench.h"
#include "harness/device.h"
#include "harness/errors.h"
#include "welford.cuh"

namespace ch09 {
namespace accuracy {

constexpr int kBlock = 256;
enum class Method { sum_of_squares, two_pass, welford };
const char* method_name(Method m) {
  return m == Method::sum_of_squares ? "sum_of_squares" : m == Method::two_pass ? "two_pass" : "welford";
}

/// [variance_methods]
template <Method kMethod>
__global__ void __launch_bounds__(kBlock) row_variance_kernel(const float* x, int64_t cols, float* var_out) {
  using BlockReduce = cub::BlockReduce<float, kBlock>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float shared_mean;
  const float* xr = x + int64_t(blockIdx.x) * cols;
  float var = 0;
  if constexpr (kMethod == Method::sum_of_squares) {  // one pass: sum x and sum x^2
    float s = 0, q = 0;
    for (int64_t j = threadIdx.x; j < cols; j += kBlock) {
      s += xr[j];
      q += xr[j] * xr[j];
    }
    s = BlockReduce(temp).Sum(s);
    __syncthreads();
    q = BlockReduce(temp).Sum(q);
    const float mean = s / cols;
    var = q / cols - mean * mean;  // two numbers near offset^2, subtracted
  } else if constexpr (kMethod == Method::two_pass) {  // the mean first, then squared deviations
    float s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += kBlock) s += xr[j];
    s = BlockReduce(temp).Sum(s);
    if (threadIdx.x == 0) shared_mean = s / cols;
    __syncthreads();
    const float mean = shared_mean;
    float q = 0;
    for (int64_t j = threadIdx.x; j < cols; j += kBlock) q += (xr[j] - mean) * (xr[j] - mean);
    q = BlockReduce(temp).Sum(q);
    var = q / cols;
  } else {  // one pass, deviations from the running mean
    course::Welford w;
    for (int64_t j = threadIdx.x; j < cols; j += kBlock) course::welford_update(w, xr[j]);
    w = course::block_welford<kBlock>(w);
    var = w.m2 / w.count;
  }
  if (threadIdx.x == 0) var_out[blockIdx.x] = var;
}
/// [variance_methods]

template <Method kMethod>
void launch(const float* x, int64_t rows, int64_t cols, float* var) {
  row_variance_kernel<kMethod><<<unsigned(rows), kBlock>>>(x, cols, var);
  CUDA_CHECK_LAUNCH();
}

}  // namespace accuracy

/// Runs the variance experiment (sum of squares, two-pass, Welford on data with a growing common
/// offset; errors against float64) and writes its JSON to `path`. Returns the exit code.
inline int run_accuracy_experiment(const std::string& path) {
  using namespace accuracy;
  course::DeviceInfo dev;
  std::string why;
  if (!course::probe_device(&dev, &why)) {
    std::printf("SKIPPED: the accuracy experiment needs a CUDA GPU and found none (%s)\n", why.c_str());
    return 77;
  }
  constexpr int64_t rows = 1024, cols = 4096;
  const double offsets[] = {0, 1e1, 1e2, 1e3, 1e4, 1e5};
  course::DeviceBuffer xb(rows * cols * sizeof(float)), vb(rows * sizeof(float));
  std::vector<float> x(rows * cols), var(rows);
  FILE* f = std::fopen(path.c_str(), "w");
  course::require(f != nullptr, "cannot write ", path);
  std::fprintf(f, "{\n  \"context\": {\"chapter\": \"09_welford_layernorm\", \"experiment\": \"variance accuracy\",\n");
  std::fprintf(f, "    \"gpu_name\": \"%s\", \"gpu_slug\": \"%s\", \"git_commit\": \"%s\",\n", dev.name.c_str(),
               dev.slug.c_str(), course::git_commit().c_str());
  std::fprintf(f, "    \"rows\": %lld, \"cols\": %lld, \"data\": \"normal(offset, 1), fp32\", \"block\": %d},\n",
               (long long)rows, (long long)cols, kBlock);
  std::fprintf(f, "  \"results\": [\n");
  std::printf("%10s %16s %14s %14s %12s\n", "offset", "method", "max rel err", "median rel", "rows <= 0");
  bool first = true;
  for (double off : offsets) {
    course::FillSpec spec;
    spec.seed = 11;
    spec.outliers = false;
    spec.shift = float(off);
    course::fill(xb.get(), course::DType::f32, rows, cols, spec, nullptr);
    CUDA_CHECK(cudaMemcpy(x.data(), xb.get(), x.size() * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<double> ref(rows);
    for (int64_t r = 0; r < rows; ++r) {  // float64, two passes over the exact fp32 inputs
      double m = 0, q = 0;
      for (int64_t j = 0; j < cols; ++j) m += x[r * cols + j];
      m /= cols;
      for (int64_t j = 0; j < cols; ++j) q += (x[r * cols + j] - m) * (x[r * cols + j] - m);
      ref[r] = q / cols;
    }
    for (Method m : {Method::sum_of_squares, Method::two_pass, Method::welford}) {
      float* v = static_cast<float*>(vb.get());
      const float* xp = static_cast<const float*>(xb.get());
      if (m == Method::sum_of_squares) launch<Method::sum_of_squares>(xp, rows, cols, v);
      if (m == Method::two_pass) launch<Method::two_pass>(xp, rows, cols, v);
      if (m == Method::welford) launch<Method::welford>(xp, rows, cols, v);
      CUDA_CHECK(cudaMemcpy(var.data(), v, rows * sizeof(float), cudaMemcpyDeviceToHost));
      std::vector<double> err(rows);
      int nonpositive = 0;
      for (int64_t r = 0; r < rows; ++r) {
        err[r] = std::fabs(double(var[r]) - ref[r]) / ref[r];
        if (!(var[r] > 0)) ++nonpositive;
      }
      std::vector<double> sorted = err;
      std::sort(sorted.begin(), sorted.end());
      const double max_err = sorted.back(), median = sorted[rows / 2];
      std::printf("%10.0f %16s %14.3g %14.3g %12d\n", off, method_name(m), max_err, median, nonpositive);
      std::fprintf(f, "%s    {\"offset\": %g, \"method\": \"%s\", \"max_rel_err\": %.6g, \"median_rel_err\": %.6g, "
                   "\"nonpositive_rows\": %d}",
                   first ? "" : ",\n", off, method_name(m), max_err, median, nonpositive);
      first = false;
    }
  }
  std::fprintf(f, "\n  ]\n}\n");
  std::fclose(f);
  std::printf("wrote %s\n", path.c_str());
  return 0;
}

}  // namespace ch09
