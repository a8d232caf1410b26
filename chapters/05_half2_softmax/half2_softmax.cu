/// @file half2_softmax.cu
/// @brief Chapter 05: fp16 and bf16 storage, fp32 compute, converting two elements per
/// instruction through `half2` / `nv_bfloat162` pairs instead of one at a time.
///
/// The kernel is chapter 04's; only the conversion policy changes. The lesson measures what the
/// paired conversions buy: instructions, not bytes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "course/softmax_warp.cuh"

namespace {

/// [paired]
// A pack converted pair by pair (course::Pair, convert.cuh): one instruction per two elements.
// A pack of one element (odd cols or an odd offset) converts alone.
template <typename T>
struct PairedConvert {
  template <int N>
  __device__ __forceinline__ static void to_floats(const course::Pack<T, N>& p, float* out) {
    if constexpr (N == 1) {
      out[0] = course::to_float(p.elem[0]);
    } else {
      const auto* pairs = reinterpret_cast<const typename course::Pair<T>::T2*>(p.elem);
#pragma unroll
      for (int j = 0; j < N / 2; ++j) {
        const float2 f = course::Pair<T>::to_float2(pairs[j]);
        out[2 * j] = f.x;
        out[2 * j + 1] = f.y;
      }
    }
  }
  template <int N>
  __device__ __forceinline__ static void from_floats(const float* in, course::Pack<T, N>& p) {
    if constexpr (N == 1) {
      p.elem[0] = course::from_float<T>(in[0]);
    } else {
      auto* pairs = reinterpret_cast<typename course::Pair<T>::T2*>(p.elem);
#pragma unroll
      for (int j = 0; j < N / 2; ++j) pairs[j] = course::Pair<T>::from_float2(make_float2(in[2 * j], in[2 * j + 1]));
    }
  }
};
/// [paired]

}  // namespace

/// Softmax of fp16/bf16 rows of cols <= 1024, packs of 8, paired conversions.
template <typename T>
void softmax_warp_half2(const course::Args& a, cudaStream_t stream) {
  course::softmax_warp<T, PairedConvert<T>, 8>(a, stream);
}

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("05_half2_softmax", "Warp softmax on fp16/bf16 with paired half2 conversions");
  const course::Limits limits{
      course::kWarpSoftmaxMaxCols,
      {8, 16, 32, 64, 128, 256, 512, 1024},
      "f16/bf16 only; cols <= 1024; packs of 8 when cols and both pointers allow, narrower otherwise"};
  ch.add(Op::softmax, "warp_half2", DType::f16, softmax_warp_half2<__half>, limits);
  ch.add(Op::softmax, "warp_half2", DType::bf16, softmax_warp_half2<__nv_bfloat16>, limits);
  return ch.run(argc, argv);
}
