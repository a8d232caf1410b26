/// @file functors.cuh
/// @brief The functors chapter 11 ships. Each computes in fp32 and rounds once to its output type;
/// those with `Apply2` also handle two 16-bit elements at once through paired conversions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "blocks/convert.cuh"

namespace ew {

using course::from_float;
using course::to_float;

/// True for the 16-bit storage types, which have a paired (half2 / nv_bfloat162) form.
template <typename T>
constexpr bool kIs16Bit = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// [functors]
/// Applies a float -> float function to two 16-bit elements with two paired conversions.
template <typename T, typename G>
__device__ __forceinline__ void apply2_via_float2(T* out, const T* in, G g) {
  using T2 = typename course::Pair<T>::T2;
  float2 v = course::Pair<T>::to_float2(*reinterpret_cast<const T2*>(in));
  *reinterpret_cast<T2*>(out) = course::Pair<T>::from_float2(make_float2(g(v.x), g(v.y)));
}

/// ReLU: max(x, 0), NaN kept (as torch.relu). Exact in every type.
template <typename T>
struct Relu {
  __device__ static float f(float v) { return (v > 0.0f || v != v) ? v : 0.0f; }
  __device__ T operator()(T x) const { return from_float<T>(f(to_float(x))); }
};

/// GELU, erf form, for fp32 output (the 16-bit types use gelu_16bit, below):
/// 0.5 * x * (1 + erf(x / sqrt 2)), PyTorch's formula, evaluated as
/// h + h * erf(x / sqrt 2) with h = x / 2 in one fmaf: one rounding and one instruction fewer
/// than PyTorch's two products and a sum.
/// Below x = -5 the sum cancels (the result is then below 1e-6 in magnitude and carries absolute
/// error only); x * normcdff(x) avoids that at about twice the instructions (exercise 3 of the
/// lesson asks what they cost).
/// H100: gelu_16bit for fp32 output gained within the noise, so fp32 keeps erff (TUNING.md).
template <typename T>
struct Gelu {
  __device__ static float f(float v) {
    const float h = 0.5f * v;
    return fmaf(h, erff(v * 0.70710678118654752f), h);
  }
  __device__ T operator()(T x) const { return from_float<T>(f(to_float(x))); }
};

/// alpha * x. Built on the device by ScaleFactory from the host's alpha.
template <typename T>
struct Scale {
  float alpha;
  __device__ T operator()(T x) const { return from_float<T>(alpha * to_float(x)); }
};

/// x * b (binary) and x * b + c (ternary, one fp32 rounding: fmaf).
template <typename T>
struct Mul {
  __device__ T operator()(T x, T b) const { return from_float<T>(to_float(x) * to_float(b)); }
};
template <typename T>
struct Fma {
  __device__ T operator()(T x, T b, T c) const { return from_float<T>(fmaf(to_float(x), to_float(b), to_float(c))); }
};

/// Casts between fp32 and a 16-bit type, round to nearest even; Apply2 converts a pair with one
/// instruction (F2FP packs two floats; two halves widen with one PRMT/HADD2.F32).
template <typename T>
struct CastToF32 {
  __device__ float operator()(T x) const { return to_float(x); }
  __device__ void Apply2(float* out, const T* in) const {
    *reinterpret_cast<float2*>(out) =
        course::Pair<T>::to_float2(*reinterpret_cast<const typename course::Pair<T>::T2*>(in));
  }
};
template <typename T>
struct CastFromF32 {
  __device__ T operator()(float x) const { return from_float<T>(x); }
  __device__ void Apply2(T* out, const float* in) const {
    *reinterpret_cast<typename course::Pair<T>::T2*>(out) = course::Pair<T>::from_float2(make_float2(in[0], in[1]));
  }
};

/// The same casts without Apply2: one conversion per element, still in 16-byte packs (the
/// `no_apply2` variants; the `scalar` variant is CastFromF32 with packs of one element).
template <typename T>
struct CastToF32Scalar {
  __device__ float operator()(T x) const { return to_float(x); }
};
template <typename T>
struct CastFromF32Scalar {
  __device__ T operator()(float x) const { return from_float<T>(x); }
};
/// [functors]

/// [gelu16]
/// GELU for 16-bit output: x * Phi(x), with Phi, the normal CDF, from the form of Abramowitz and
/// Stegun 26.2.17 (absolute error under 7.5e-8). For a = |x| the upper tail is
/// Q(a) = phi(a) * t * P(t), with t = 1 / (1 + p a), P of degree 4 and phi(a) = exp(-a^2 / 2) /
/// sqrt(2 pi) (the 1 / sqrt(2 pi) is folded into P's coefficients); then Phi(x) = 1 - Q(a) for
/// x >= 0 and Q(a) below. The reciprocal and the exponential are the SFU's approximate ones
/// (rcp.approx, ex2.approx: relative error about 2^-22). The result is rounded to 11 bits (fp16) or
/// 8 (bf16), so an error of 1e-7 moves it only when it lies that close to a rounding boundary;
/// `--verify` runs every 16-bit pattern through it against float64 (main.cu, check_gelu_all).
/// About 14 instructions per element where the erf form takes about 25 (erff picks between two
/// coefficient sets by |x| and branches for the larger ones; the lesson's profile counts them).
/// Below zero Q is computed directly, so nothing cancels as 1 + erf does. +inf gives +inf, -inf
/// gives -inf * 0 = NaN, and NaN gives NaN, as in the erf form.
/// H100: +2.7% (fp16) and +4.6% (bf16) over the erf form at 2^24 elements (TUNING.md).
__device__ __forceinline__ float gelu_16bit(float x) {
  const float a = fabsf(x);
  float t, e;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(fmaf(0.2316419f, a, 1.0f)));
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"((x * -0.72134752044448170f) * x));  // exp(-x^2 / 2)
  float p = fmaf(0.53070271f, t, -0.72657601f);  // b_k / sqrt(2 pi), k = 5 .. 1
  p = fmaf(p, t, 0.71070687f);
  p = fmaf(p, t, -0.14224837f);
  p = fmaf(p, t, 0.12741480f);
  const float q = (p * t) * e;
  return x * (x >= 0.0f ? 1.0f - q : q);
}

template <>
struct Gelu<__half> {
  __device__ __half operator()(__half x) const { return from_float<__half>(gelu_16bit(to_float(x))); }
  __device__ void Apply2(__half* out, const __half* in) const {
    apply2_via_float2(out, in, [](float v) { return gelu_16bit(v); });
  }
};
template <>
struct Gelu<__nv_bfloat16> {
  __device__ __nv_bfloat16 operator()(__nv_bfloat16 x) const {
    return from_float<__nv_bfloat16>(gelu_16bit(to_float(x)));
  }
  __device__ void Apply2(__nv_bfloat16* out, const __nv_bfloat16* in) const {
    apply2_via_float2(out, in, [](float v) { return gelu_16bit(v); });
  }
};
/// [gelu16]

/// The erf form (Gelu<float>::f) rounded to a 16-bit T: PyTorch's formula, registered as the
/// `gelu/erf` variants for the lesson's comparison with gelu_16bit.
template <typename T>
struct GeluErf {
  __device__ T operator()(T x) const { return from_float<T>(Gelu<float>::f(to_float(x))); }
  __device__ void Apply2(T* out, const T* in) const { apply2_via_float2(out, in, Gelu<float>::f); }
};

/// [scale_factory]
/// A factory with a host-side parameter: each thread builds its Scale from alpha. A functor with
/// per-thread state would compute it here (from blockIdx and threadIdx).
template <typename T>
struct ScaleFactory {
  float alpha;
  __device__ Scale<T> operator()() const { return Scale<T>{alpha}; }
};
/// [scale_factory]

}  // namespace ew
