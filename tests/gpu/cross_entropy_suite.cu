// The suite end to end for cross-entropy (#41), on a GPU: naive kernels written for this test go
// through run_case (verify_case.cu) as a chapter's would: the targets' fill and host check, the saved
// lse derived from x, the reduction judged against every row, each case's reduction, label smoothing
// and z-loss. The correct kernels must pass every case of the quick suite; a backward that forgets
// the mean's divisor must fail on dx. Exits 77 without a GPU, 1 when an outcome is not the expected one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "blocks/convert.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/verify.h"
#include "harness/verify_case.h"
#include "suite_outcomes.h"

namespace {

using namespace course;

// The row's class, -1 for ignore_index, -2 for a target outside [0, cols) (its outputs are NaN).
__device__ int64_t row_class(int32_t t, int64_t cols, int64_t ignore_index) {
  if (t == ignore_index) return -1;
  return t >= 0 && t < cols ? t : -2;
}

// One thread per row: lse (max, then the sum of exponentials, in fp32), the loss with label
// smoothing e and z-loss z; ignored rows 0, bad targets NaN. A NaN anywhere in the row makes m NaN.
template <typename T>
__global__ void forward_kernel(const T* x, const int32_t* target, int64_t rows, int64_t cols, int64_t ignore_index,
                               float e, float z, float* loss, float* lse) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows; r += int64_t(gridDim.x) * blockDim.x) {
    const T* xr = x + r * cols;
    const int64_t t = row_class(target[r], cols, ignore_index);
    if (t == -1) {
      loss[r] = 0.0f;
      if (lse) lse[r] = 0.0f;
      continue;
    }
    float m = -INFINITY, sum_x = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      const float v = to_float(xr[j]);
      m = isnan(v) || isnan(m) ? NAN : fmaxf(m, v);
      sum_x += v;
    }
    float d = 0.0f;  // NaN for a row of -inf or with +inf (x - m), as the reference's lse
    for (int64_t j = 0; j < cols; ++j) d += expf(to_float(xr[j]) - m);
    const float l = m + logf(d);
    float v = t < 0 ? NAN : (1.0f - e) * (l - to_float(xr[t]));
    if (e != 0.0f) v += e * (l - sum_x / float(cols));
    if (z != 0.0f) v += z * l * l;
    loss[r] = v;
    if (lse) lse[r] = t < 0 ? NAN : l;
  }
}

// The rows not ignored (one thread: the count a mean divides by, on the device as PyTorch keeps it).
__global__ void count_kernel(const int32_t* target, int64_t rows, int64_t ignore_index, float* count) {
  float n = 0.0f;
  for (int64_t r = 0; r < rows; ++r) n += target[r] != ignore_index;
  *count = n;
}

// The reduction, one thread adding the losses in row order: the sum, or over `count` for a mean
// (0 / 0: NaN when every row is ignored).
__global__ void reduce_kernel(const float* loss, int64_t rows, const float* count, bool mean, float* out) {
  float s = 0.0f;
  for (int64_t r = 0; r < rows; ++r) s += loss[r];
  *out = mean ? s / *count : s;
}

// dx per element: (softmax(x) (1 + 2 z lse) - (1 - e) onehot(t) - e / V) x g[r] (or g0) / count for a mean.
template <typename T>
__global__ void backward_kernel(const T* x, const int32_t* target, const float* lse, const float* g, float g0,
                                const float* count, bool mean, int64_t rows, int64_t cols, int64_t ignore_index,
                                float e, float z, T* dx) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, j = i % cols;
    const int64_t t = row_class(target[r], cols, ignore_index);
    float v;
    if (t == -1) {
      v = 0.0f;
    } else if (t == -2) {
      v = NAN;
    } else {
      const float l = lse[r], scale = (g ? g[r] : g0) / (mean ? *count : 1.0f);
      const float p = expf(to_float(x[i]) - l);
      v = scale * (p * (1.0f + 2.0f * z * l) - (j == t ? 1.0f - e : 0.0f) - e / float(cols));
    }
    dx[i] = from_float<T>(v);
  }
}

unsigned blocks_for(int64_t n) { return unsigned(std::min<int64_t>((n + 255) / 256, 4096)); }

// A launcher for `op`; `forget_count`: the backward's mean not divided by the count (must fail).
template <typename T>
Launcher cross_entropy(Op op, bool forget_count = false) {
  return [=](const Args& a, cudaStream_t s) {
    if (!check_op_args(a, op)) return;
    const auto* x = static_cast<const T*>(a.x);
    const auto* target = static_cast<const int32_t*>(a.target);
    const bool mean = a.reduction == Reduction::mean;
    float* count = nullptr;
    CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&count), sizeof(float), s));
    count_kernel<<<1, 1, 0, s>>>(target, a.rows, a.ignore_index, count);
    CUDA_CHECK_LAUNCH();
    float* lse = nullptr;
    if (op == Op::cross_entropy_fused) CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&lse), a.rows * sizeof(float), s));
    if (op != Op::cross_entropy_backward) {
      float* loss = static_cast<float*>(a.loss);
      forward_kernel<T><<<blocks_for(a.rows), 256, 0, s>>>(x, target, a.rows, a.cols, a.ignore_index,
                                                           a.label_smoothing, a.z_loss, loss,
                                                           op == Op::cross_entropy ? static_cast<float*>(a.lse) : lse);
      CUDA_CHECK_LAUNCH();
      reduce_kernel<<<1, 1, 0, s>>>(loss, a.rows, count, mean, static_cast<float*>(a.loss_reduced));
      CUDA_CHECK_LAUNCH();
    }
    if (op != Op::cross_entropy) {
      const bool fused = op == Op::cross_entropy_fused;
      backward_kernel<T><<<blocks_for(a.rows * a.cols), 256, 0, s>>>(
          x, target, fused ? lse : static_cast<const float*>(a.saved_lse),
          fused ? nullptr : static_cast<const float*>(a.dloss), a.loss_grad, count, mean && !forget_count, a.rows,
          a.cols, a.ignore_index, a.label_smoothing, a.z_loss, static_cast<T*>(a.y));
      CUDA_CHECK_LAUNCH();
    }
    if (lse) CUDA_CHECK(cudaFreeAsync(lse, s));
    CUDA_CHECK(cudaFreeAsync(count, s));
  };
}

}  // namespace

int main() {
  course_test::SuiteOutcomes t;
  for (Op op : {Op::cross_entropy, Op::cross_entropy_backward, Op::cross_entropy_fused}) {
    const Variant f32{op, "naive", DType::f32, cross_entropy<float>(op), {}, {}};
    const Variant bf16{op, "naive", DType::bf16, cross_entropy<__nv_bfloat16>(op), {}, {}};
    for (const Variant* v : {&f32, &bf16})
      for (const Case& c : suite_cases(*v, /*quick=*/true, /*large=*/false)) t.expect(*v, c, detail::Outcome::pass);
  }
  const Variant bad{Op::cross_entropy_backward, "no_count", DType::f32,
                    cross_entropy<float>(Op::cross_entropy_backward, true), {}, {}};
  t.expect(bad, Case{1000, 64, 3, 0, {}, "the mean's divisor forgotten"}, detail::Outcome::fail, "dx");
  return t.finish();
}
