/// @file main.cu
/// @brief Chapter 16's executable: cross-entropy forward, backward and the
/// fused forward and backward, a block per row, on the common harness.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <string>
#include <vector>

#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "launch.cuh"

namespace {

using course::DType;
using course::Op;

template <typename T>
void add_type(course::Chapter& ch, DType d) {
  const std::string text = "cols < 2^31, any rows; a block per row (" + std::to_string(ch16::kSmallBlock) +
                           " threads up to " + std::to_string(ch16::small_block_max_cols<T>()) + " columns, " +
                           std::to_string(ch16::kLargeBlock) + " past), 16-byte packs from each row's first boundary";
  const std::vector<int64_t> small = {ch16::small_block_max_cols<T>()};
  ch.add(Op::cross_entropy, "rows", d, ch16::cross_entropy<T>, course::Limits{0, small, text});
  ch.add(Op::cross_entropy_backward, "rows", d, ch16::cross_entropy_backward<T>, course::Limits{0, small, text},
         ch16::count_workspace);
  std::vector<int64_t> thresholds = ch16::fused_thresholds<T>();
  const std::string fused_text =
      thresholds.empty() ? text + "; one read of rows a block caches, two past them"
                         : text + "; one read up to " + std::to_string(thresholds.back()) +
                               " columns (a block, then a cluster of 2-16 blocks, holds the row in shared memory), two past it";
  thresholds.insert(thresholds.begin(), small.front());
  ch.add(Op::cross_entropy_fused, "rows", d, ch16::cross_entropy_fused<T>, course::Limits{0, thresholds, fused_text},
         ch16::count_workspace);
}

/// In place: the fused call with dlogits written over the logits (as frameworks run it) must give
/// the bits of the call with a separate dlogits buffer, on a row each path takes (H100): 128-thread
/// blocks; one block of 512 (fp32 20000 columns, 80 KB; bf16 50257, 101 KB); a cluster of 8 (513 KB,
/// sm_90); two reads (2000003 columns). The suite checks the separate-buffer call against the
/// float64 reference.
template <typename T>
bool check_in_place(cudaStream_t s, std::string* detail) {
  const int64_t c1 = ch16::small_block_max_cols<T>() - 5, c2 = sizeof(T) == 2 ? 50257 : 20000,
                c3 = 128256 * (sizeof(T) == 2 ? 2 : 1),
                c4 = 2000003;
  std::string out;
  for (int64_t cols : {c1, c2, c3, c4}) {
    const int64_t rows = 5, n = rows * cols;
    T *x = nullptr, *dx = nullptr, *xy = nullptr;
    int32_t* target = nullptr;
    float *loss = nullptr, *loss2 = nullptr, *ws = nullptr;
    CUDA_CHECK(cudaMalloc(&x, n * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&dx, n * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&xy, n * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&target, rows * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&loss, (rows + 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&loss2, (rows + 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&ws, ch16::count_workspace(rows, cols, course::DType::f32)));
    course::FillSpec f;
    f.seed = 3;
    course::fill(x, course::DTypeOf<T>::value, rows, cols, f, s);
    course::FillSpec t;
    t.seed = 4;
    t.classes = cols;
    course::fill(target, course::DType::i32, rows, 1, t, s);
    CUDA_CHECK(cudaMemcpyAsync(xy, x, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
    course::Args a;
    a.rows = rows;
    a.cols = cols;
    a.target = target;
    a.label_smoothing = 0.1f;
    a.workspace = ws;
    a.workspace_bytes = ch16::count_workspace(rows, cols, course::DType::f32);
    a.x = x;
    a.y = dx;
    a.loss = loss;
    a.loss_reduced = loss + rows;
    ch16::cross_entropy_fused<T>(a, s);
    a.x = xy;
    a.y = xy;
    a.loss = loss2;
    a.loss_reduced = loss2 + rows;
    ch16::cross_entropy_fused<T>(a, s);
    std::vector<T> h1(n), h2(n);
    std::vector<float> l1(rows + 1), l2(rows + 1);
    CUDA_CHECK(cudaMemcpyAsync(h1.data(), dx, n * sizeof(T), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(h2.data(), xy, n * sizeof(T), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(l1.data(), loss, l1.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(l2.data(), loss2, l2.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    for (void* p : {static_cast<void*>(x), static_cast<void*>(dx), static_cast<void*>(xy), static_cast<void*>(target),
                    static_cast<void*>(loss), static_cast<void*>(loss2), static_cast<void*>(ws)})
      CUDA_CHECK(cudaFree(p));
    const bool same = std::memcmp(h1.data(), h2.data(), n * sizeof(T)) == 0 &&
                      std::memcmp(l1.data(), l2.data(), l1.size() * sizeof(float)) == 0;
    out += (out.empty() ? "" : ", ") + std::to_string(rows) + " x " + std::to_string(cols) +
           (same ? " same bits" : " DIFFERENT");
    if (!same) {
      *detail = "in place against a separate dlogits: " + out;
      return false;
    }
  }
  *detail = "in place against a separate dlogits: " + out;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  course::Chapter ch("16_cross_entropy", "Cross-entropy over a large vocabulary: loss and gradient");
  add_type<float>(ch, DType::f32);
  add_type<__half>(ch, DType::f16);
  add_type<__nv_bfloat16>(ch, DType::bf16);
  // Language models' vocabularies only (baselines/torch_peers.py's VOCAB): the standard sweep's
  // 32-32768 columns are not a vocabulary (the suite still checks them).
  ch.add_check({"cross_entropy_fused/rows/f32: in place", DType::f32, check_in_place<float>});
  ch.add_check({"cross_entropy_fused/rows/bf16: in place", DType::bf16, check_in_place<__nv_bfloat16>});
  ch.set_sweeps({{{4096, 16384}, {32000, 50257, 128256}}}, true);
  return ch.run(argc, argv);
}
