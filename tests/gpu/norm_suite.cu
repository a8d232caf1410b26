// The suite end to end for the norms' backward (#42), on a GPU: naive kernels written for this test
// go through run_case (verify_case.cu) as a chapter's would. The correct ones must pass every case
// of the quick suite and a case past 2^24 elements (dx sampled, the column sums streamed over every
// row); one that leaves a block of rows out of its column sums must fail on them. Exits 77 without
// a GPU, 1 when an outcome is not the expected one.
#include <algorithm>
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

// dx, one thread per row: xhat = (x - mean) * rstd, g = dy * gamma,
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); RMSNorm (mean null): no mean and no mean(g).
// g is rounded once (__fmul_rn: never contracted into an fma with the subtraction), so a row whose
// g all equal their mean (one column) gives dx = 0 exactly, as the reference does.
template <typename T>
__global__ void dx_kernel(const T* x, const T* dy, const T* gamma, const float* mean, const float* rstd, int64_t rows,
                          int64_t cols, T* dx) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows; r += int64_t(gridDim.x) * blockDim.x) {
    const T *xr = x + r * cols, *dyr = dy + r * cols;
    const float mu = mean ? mean[r] : 0.0f, rs = rstd[r];
    float sg = 0, sgx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const float g = __fmul_rn(to_float(dyr[c]), to_float(gamma[c]));
      sg += g;
      sgx += g * ((to_float(xr[c]) - mu) * rs);
    }
    const float mg = mean ? sg / float(cols) : 0.0f, mgx = sgx / float(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const float g = __fmul_rn(to_float(dyr[c]), to_float(gamma[c])), xhat = (to_float(xr[c]) - mu) * rs;
      dx[r * cols + c] = from_float<T>(rs * (g - mg - xhat * mgx));
    }
  }
}

// dgamma (and dbeta) one thread per column, every row in one fp32 accumulator (the longest chain
// of additions), except rows [skip_begin, skip_end): the wrong variant's missing block.
template <typename T>
__global__ void col_sum_kernel(const T* x, const T* dy, const float* mean, const float* rstd, int64_t rows,
                               int64_t cols, int64_t skip_begin, int64_t skip_end, float* dgamma, float* dbeta) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x) {
    float sg = 0, sb = 0;
    for (int64_t r = 0; r < rows; ++r) {
      if (r >= skip_begin && r < skip_end) continue;
      const float d = to_float(dy[r * cols + c]);
      sg += d * ((to_float(x[r * cols + c]) - (mean ? mean[r] : 0.0f)) * rstd[r]);
      sb += d;
    }
    dgamma[c] = sg;
    if (dbeta) dbeta[c] = sb;
  }
}

unsigned blocks_for(int64_t n) { return unsigned(std::min<int64_t>((n + 255) / 256, 4096)); }

// A launcher for `op` (layer_norm_backward or rms_norm_backward) whose column sums leave out rows
// [skip_begin, skip_end).
template <typename T>
Launcher norm_backward(Op op, int64_t skip_begin = 0, int64_t skip_end = 0) {
  return [=](const Args& a, cudaStream_t s) {
    if (!check_op_args(a, op)) return;
    const bool ln = op == Op::layer_norm_backward;
    const auto* mean = ln ? static_cast<const float*>(a.saved_mean) : nullptr;
    const auto* rstd = static_cast<const float*>(a.saved_rstd);
    dx_kernel<T><<<blocks_for(a.rows), 256, 0, s>>>(static_cast<const T*>(a.x), static_cast<const T*>(a.dy),
                                                  static_cast<const T*>(a.gamma), mean, rstd, a.rows, a.cols,
                                                  static_cast<T*>(a.y));
    CUDA_CHECK_LAUNCH();
    col_sum_kernel<T><<<blocks_for(a.cols), 256, 0, s>>>(static_cast<const T*>(a.x), static_cast<const T*>(a.dy), mean,
                                                       rstd, a.rows, a.cols, skip_begin, skip_end,
                                                       static_cast<float*>(a.dgamma),
                                                       ln ? static_cast<float*>(a.dbeta) : nullptr);
    CUDA_CHECK_LAUNCH();
  };
}

}  // namespace

int main() {
  course_test::SuiteOutcomes t;
  for (Op op : {Op::layer_norm_backward, Op::rms_norm_backward}) {
    const Variant f32{op, "naive", DType::f32, norm_backward<float>(op), {}, {}};
    const Variant f16{op, "naive", DType::f16, norm_backward<__half>(op), {}, {}};
    for (const Variant* v : {&f32, &f16}) {
      for (const Case& c : suite_cases(*v, /*quick=*/true, /*large=*/false)) t.expect(*v, c, detail::Outcome::pass);
      t.expect(*v, Case{300007, 64, 14, 0, {}, "past 2^24 elements: column sums streamed"}, detail::Outcome::pass);
    }
    const Variant bad{op, "missing_rows", DType::f32, norm_backward<float>(op, 256, 512), {}, {}};
    t.expect(bad, Case{1000, 64, 3, 0, {}, "rows 256-511 missing from the column sums"}, detail::Outcome::fail,
           "dgamma: ");
  }
  return t.finish();
}
