/// @file cudnn_softmax.cu
/// @brief The cuDNN peer: `cudnnSoftmaxForward` (ACCURATE for softmax, LOG for log-softmax;
/// INSTANCE mode: over the cols of each row) registered on the course's harness, so that it is
/// verified by the same suite and timed by the same method as the chapters' kernels.
#include <cudnn.h>

#include <climits>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "harness/errors.h"
#include "harness/harness.h"

namespace {

void check(cudnnStatus_t st, const char* what) {
  if (st != CUDNN_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cudnnGetErrorString(st));
}

cudnnHandle_t handle() {
  static cudnnHandle_t h = [] {
    cudnnHandle_t x;
    check(cudnnCreate(&x), "cudnnCreate");
    return x;
  }();
  return h;
}

cudnnDataType_t cudnn_type(course::DType t) {
  switch (t) {
    case course::DType::f32:
      return CUDNN_DATA_FLOAT;
    case course::DType::f16:
      return CUDNN_DATA_HALF;
    case course::DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    case course::DType::u8:
    case course::DType::i32:
      break;
  }
  return CUDNN_DATA_FLOAT;
}

// One descriptor per shape, made once: the timed region then holds the cuDNN call alone.
cudnnTensorDescriptor_t descriptor(int64_t rows, int64_t cols, course::DType t) {
  static std::map<std::tuple<int64_t, int64_t, course::DType>, cudnnTensorDescriptor_t> cache;
  auto key = std::make_tuple(rows, cols, t);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  cudnnTensorDescriptor_t d;
  check(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor");
  check(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, cudnn_type(t), int(rows), int(cols), 1, 1),
        "cudnnSetTensor4dDescriptor");
  return cache[key] = d;
}

/// [cudnn_call]
template <course::DType kType, cudnnSoftmaxAlgorithm_t kAlgo>
void cudnn_softmax(const course::Args& a, cudaStream_t stream) {
  if (!course::check_rowwise_args(a)) return;
  course::require(a.rows * a.cols <= INT_MAX, "rows x cols = ", a.rows * a.cols,
                  " is past cuDNN's int tensor dimensions (at most 2^31 - 1 elements)");
  check(cudnnSetStream(handle(), stream), "cudnnSetStream");
  const cudnnTensorDescriptor_t d = descriptor(a.rows, a.cols, kType);
  const float one = 1.0f, zero = 0.0f;
  check(cudnnSoftmaxForward(handle(), kAlgo, CUDNN_SOFTMAX_MODE_INSTANCE, &one, d, a.x, &zero, d, a.y),
        "cudnnSoftmaxForward");
}
/// [cudnn_call]

// Backward: dx from the forward output y (Args::x) and dy. cudnnSoftmaxBackward takes the
// algorithm of the forward (ACCURATE: softmax, LOG: log-softmax).
template <course::DType kType, cudnnSoftmaxAlgorithm_t kAlgo>
void cudnn_softmax_backward(const course::Args& a, cudaStream_t stream) {
  if (!course::check_op_args(a, kAlgo == CUDNN_SOFTMAX_LOG ? course::Op::log_softmax_backward
                                                           : course::Op::softmax_backward))
    return;
  course::require(a.rows * a.cols <= INT_MAX, "rows x cols = ", a.rows * a.cols,
                  " is past cuDNN's int tensor dimensions (at most 2^31 - 1 elements)");
  check(cudnnSetStream(handle(), stream), "cudnnSetStream");
  const cudnnTensorDescriptor_t d = descriptor(a.rows, a.cols, kType);
  const float one = 1.0f, zero = 0.0f;
  check(cudnnSoftmaxBackward(handle(), kAlgo, CUDNN_SOFTMAX_MODE_INSTANCE, &one, d, a.x, d, a.dy, &zero, d, a.y),
        "cudnnSoftmaxBackward");
}

}  // namespace

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("peer_cudnn", "cuDNN softmax and log-softmax, forward and backward (INSTANCE mode)");
  const course::Limits lim{0, {}, "rows x cols < 2^31 (cuDNN's int dimensions)"};
  ch.add(Op::softmax, "cudnn", DType::f32, cudnn_softmax<DType::f32, CUDNN_SOFTMAX_ACCURATE>, lim);
  ch.add(Op::softmax, "cudnn", DType::f16, cudnn_softmax<DType::f16, CUDNN_SOFTMAX_ACCURATE>, lim);
  ch.add(Op::softmax, "cudnn", DType::bf16, cudnn_softmax<DType::bf16, CUDNN_SOFTMAX_ACCURATE>, lim);
  ch.add(Op::log_softmax, "cudnn", DType::f32, cudnn_softmax<DType::f32, CUDNN_SOFTMAX_LOG>, lim);
  ch.add(Op::log_softmax, "cudnn", DType::f16, cudnn_softmax<DType::f16, CUDNN_SOFTMAX_LOG>, lim);
  ch.add(Op::log_softmax, "cudnn", DType::bf16, cudnn_softmax<DType::bf16, CUDNN_SOFTMAX_LOG>, lim);
  ch.add(Op::softmax_backward, "cudnn", DType::f32, cudnn_softmax_backward<DType::f32, CUDNN_SOFTMAX_ACCURATE>, lim);
  ch.add(Op::softmax_backward, "cudnn", DType::f16, cudnn_softmax_backward<DType::f16, CUDNN_SOFTMAX_ACCURATE>, lim);
  ch.add(Op::softmax_backward, "cudnn", DType::bf16, cudnn_softmax_backward<DType::bf16, CUDNN_SOFTMAX_ACCURATE>,
         lim);
  ch.add(Op::log_softmax_backward, "cudnn", DType::f32, cudnn_softmax_backward<DType::f32, CUDNN_SOFTMAX_LOG>, lim);
  ch.add(Op::log_softmax_backward, "cudnn", DType::f16, cudnn_softmax_backward<DType::f16, CUDNN_SOFTMAX_LOG>, lim);
  ch.add(Op::log_softmax_backward, "cudnn", DType::bf16, cudnn_softmax_backward<DType::bf16, CUDNN_SOFTMAX_LOG>,
         lim);
  ch.add_sweep(course::long_row_sweep());
  return ch.run(argc, argv);
}
