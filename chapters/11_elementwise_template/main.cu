/// @file main.cu
/// @brief Chapter 11's executable: the shipped functors through the elementwise template on the
/// common harness (each tensor of rows x cols elements taken as one flat array), and the casts
/// checked over every 16-bit pattern and every fp32 pattern.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/ops.h"
#include "harness/parallel.h"
#include "harness/reference.h"
#include "elementwise.cuh"
#include "functors.cuh"

namespace {

using course::Args;

// The harness's checks (sizes, null pointers), then the flat element count.
int64_t flat_count(const Args& a, course::Op op) {
  return course::check_op_args(a, op) ? a.rows * a.cols : 0;
}

/// [launchers]
template <typename T, int kMaxPack = 16, int kU = ew::kUnroll>
void relu(const Args& a, cudaStream_t s) {
  if (int64_t n = flat_count(a, course::Op::relu))
    ew::Unary<kMaxPack, ew::kMaxWaves, kU>(s, ew::SimpleFactory<ew::Relu<T>>{}, n, static_cast<T*>(a.y), static_cast<const T*>(a.x));
}
template <typename T, int kMaxPack = 16, int64_t kWaves = ew::kMaxWaves, int kU = ew::kUnroll>
void gelu(const Args& a, cudaStream_t s) {
  if (int64_t n = flat_count(a, course::Op::gelu))
    ew::Unary<kMaxPack, kWaves, kU>(s, ew::SimpleFactory<ew::Gelu<T>>{}, n, static_cast<T*>(a.y), static_cast<const T*>(a.x));
}
template <typename T, int kU = ew::kUnroll>
void gelu_erf(const Args& a, cudaStream_t s) {
  if (int64_t n = flat_count(a, course::Op::gelu))
    ew::Unary<16, ew::kMaxWaves, kU>(s, ew::SimpleFactory<ew::GeluErf<T>>{}, n, static_cast<T*>(a.y), static_cast<const T*>(a.x));
}
template <typename T>
void scale(const Args& a, cudaStream_t s) {
  if (int64_t n = flat_count(a, course::Op::scale))
    ew::Unary(s, ew::ScaleFactory<T>{a.alpha}, n, static_cast<T*>(a.y), static_cast<const T*>(a.x));
}
template <typename T, int kU = ew::kUnroll>
void mul(const Args& a, cudaStream_t s) {
  if (int64_t n = flat_count(a, course::Op::mul))
    ew::Binary<16, ew::kMaxWaves, kU>(s, ew::SimpleFactory<ew::Mul<T>>{}, n, static_cast<T*>(a.y), static_cast<const T*>(a.x),
               static_cast<const T*>(a.b));
}
template <typename T>
void fma(const Args& a, cudaStream_t s) {
  if (int64_t n = flat_count(a, course::Op::fma))
    ew::Ternary(s, ew::SimpleFactory<ew::Fma<T>>{}, n, static_cast<T*>(a.y), static_cast<const T*>(a.x),
                static_cast<const T*>(a.b), static_cast<const T*>(a.c));
}
template <typename T, typename F = ew::CastToF32<T>, int kMaxPack = 16>
void cast_to_f32(const Args& a, cudaStream_t s) {
  if (int64_t n = flat_count(a, course::Op::cast_to_f32))
    ew::Unary<kMaxPack>(s, ew::SimpleFactory<F>{}, n, static_cast<float*>(a.y), static_cast<const T*>(a.x));
}
template <typename T, typename F = ew::CastFromF32<T>, int kMaxPack = 16>
void cast_from_f32(const Args& a, cudaStream_t s) {
  if (int64_t n = flat_count(a, course::Op::cast_from_f32))
    ew::Unary<kMaxPack>(s, ew::SimpleFactory<F>{}, n, static_cast<T*>(a.y), static_cast<const float*>(a.x));
}
/// [launchers]

// The value of a 16-bit pattern, decoded from the format's definition (sign, exponent bits,
// mantissa bits), independently of the CUDA headers.
double decode16(uint16_t bits, int mant_bits, int exp_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = (bits >> mant_bits) & ((1 << exp_bits) - 1);
  const int m = bits & ((1 << mant_bits) - 1);
  const double sign = (bits >> 15) ? -1.0 : 1.0;
  if (e == (1 << exp_bits) - 1) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(double(m), 1 - bias - mant_bits);  // subnormal
  return sign * std::ldexp(double(m | (1 << mant_bits)), e - bias - mant_bits);
}
double decode(uint16_t bits, course::DType t) {
  return t == course::DType::f16 ? decode16(bits, 10, 5) : decode16(bits, 7, 8);
}

bool same_value(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

// The output of `launcher` on the 65536 16-bit patterns 0x0000..0xffff in order, as one flat
// tensor; Out is the output element (its bits, for a 16-bit output).
template <typename Out>
std::vector<Out> every_pattern(void (*launcher)(const Args&, cudaStream_t), cudaStream_t s) {
  std::vector<uint16_t> in(65536);
  for (int i = 0; i < 65536; ++i) in[i] = uint16_t(i);
  std::vector<Out> out(in.size());
  course::DeviceBuffer xb(in.size() * sizeof(uint16_t)), yb(out.size() * sizeof(Out));
  CUDA_CHECK(cudaMemcpy(xb.get(), in.data(), in.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  Args a;
  a.rows = 1;
  a.cols = int64_t(in.size());
  a.x = xb.get();
  a.y = yb.get();
  launcher(a, s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  CUDA_CHECK(cudaMemcpy(out.data(), yb.get(), out.size() * sizeof(Out), cudaMemcpyDeviceToHost));
  return out;
}

/// [exhaustive_widen]
// Every one of the 65536 patterns of T through cast_to_f32: the fp32 result must be the
// pattern's exact value (sign of zero included), NaN for NaN.
template <typename T>
bool check_widen_all(cudaStream_t s, std::string* detail) {
  const course::DType t = course::DTypeOf<T>::value;
  const std::vector<float> out = every_pattern<float>(cast_to_f32<T>, s);
  int bad = 0;
  std::string first;
  for (int i = 0; i < 65536; ++i) {
    if (!same_value(out[i], decode(uint16_t(i), t)) && bad++ < 4) {
      char buf[96];
      std::snprintf(buf, sizeof buf, " 0x%04x -> %.9g (expected %.9g);", i, out[i], decode(uint16_t(i), t));
      first += buf;
    }
  }
  *detail = bad ? std::to_string(bad) + " of 65536 patterns wrong:" + first : "65536 of 65536 patterns exact";
  return bad == 0;
}
/// [exhaustive_widen]

/// [exhaustive_narrow]
// Every one of the 2^32 fp32 patterns through cast_from_f32, in chunks of 2^28: the result must
// be the nearest T, ties to even (course::ref, written from the IEEE definition), overflow to
// infinity, NaN for NaN, the sign of zero kept. The reference runs on every host core.
template <typename T>
bool check_narrow_all(cudaStream_t s, std::string* detail) {
  const course::DType t = course::DTypeOf<T>::value;
  constexpr int64_t kChunk = int64_t(1) << 28;
  std::vector<uint32_t> in(kChunk);
  std::vector<uint16_t> out(kChunk);
  course::DeviceBuffer xb(kChunk * 4), yb(kChunk * 2);
  // Per host thread (harness/parallel.h): its count of wrong results and its first wrong pattern.
  std::vector<int64_t> bad(size_t(course::host_threads()));
  std::vector<uint32_t> first_bad(bad.size(), 0);
  int64_t total_bad = 0;
  uint32_t example = 0;
  for (int64_t base = 0; base < (int64_t(1) << 32); base += kChunk) {
    for (int64_t i = 0; i < kChunk; ++i) in[i] = uint32_t(base + i);
    CUDA_CHECK(cudaMemcpy(xb.get(), in.data(), kChunk * 4, cudaMemcpyHostToDevice));
    Args a;
    a.rows = 1;
    a.cols = kChunk;
    a.x = xb.get();
    a.y = yb.get();
    cast_from_f32<T>(a, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(out.data(), yb.get(), kChunk * 2, cudaMemcpyDeviceToHost));
    std::fill(bad.begin(), bad.end(), 0);
    course::parallel_ranges(kChunk, course::kHostGrain, [&](size_t w, course::IndexRange r) {
      for (int64_t i = r.begin; i < r.end; ++i) {
        float f;
        std::memcpy(&f, &in[i], 4);
        if (!same_value(decode(out[i], t), course::round_to_type(t, f)) && bad[w]++ == 0) first_bad[w] = in[i];
      }
    });
    for (size_t w = 0; w < bad.size(); ++w) {  // in order: the first wrong pattern overall
      if (bad[w] && total_bad == 0) example = first_bad[w];
      total_bad += bad[w];
    }
  }
  if (total_bad == 0) {
    *detail = "4294967296 of 4294967296 fp32 patterns rounded exactly";
    return true;
  }
  float f;
  std::memcpy(&f, &example, 4);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%lld of 2^32 fp32 patterns rounded wrong; first: 0x%08x (%.9g)",
                (long long)total_bad, example, f);
  *detail = buf;
  return false;
}
/// [exhaustive_narrow]

/// [exhaustive_gelu]
// Every one of the 65536 patterns of T through `launcher` (a 16-bit GELU), against float64
// (course::ref::gelu): each output within the harness's GELU tolerance, NaN where the reference is
// NaN. Passed or not, the detail counts the results in T's normal range that are not the
// correctly rounded value (course::ref::round_to_*), and the largest distance from it in units of
// the last place: TUNING.md compares gelu_16bit with the erf form by these counts.
template <typename T>
bool check_gelu_all(void (*launcher)(const Args&, cudaStream_t), cudaStream_t s, std::string* detail) {
  const course::DType t = course::DTypeOf<T>::value;
  const course::Tolerance tol = course::op_tolerance(course::Op::gelu, t);
  const std::vector<uint16_t> out = every_pattern<uint16_t>(launcher, s);
  // Patterns ordered by value: for finite same-sign values the distance in ulps is the distance
  // between the bit patterns.
  auto ordinal = [](uint16_t b) { return (b & 0x8000) ? -int(b & 0x7fff) : int(b); };
  int bad = 0, off = 0, max_ulps = 0, normal = 0;
  std::string first;
  for (int i = 0; i < 65536; ++i) {
    const double x = decode(uint16_t(i), t), ref = course::ref::gelu(x), got = decode(out[i], t);
    if (!course::element_ok(got, ref, tol) && bad++ < 4) {
      char buf[96];
      std::snprintf(buf, sizeof buf, " 0x%04x (%.6g) -> %.6g (expected %.6g);", i, x, got, ref);
      first += buf;
    }
    // Rounding is compared where the result is a normal number of T; below, the absolute part of
    // the tolerance governs (the subnormal spacing is a fixed absolute step).
    const double min_normal = t == course::DType::f16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126);
    const double want = course::round_to_type(t, ref);
    if (!std::isfinite(ref) || !std::isfinite(got) || std::fabs(want) < min_normal) continue;
    ++normal;
    if (same_value(got, want)) continue;
    ++off;
    int ulps = 65;  // past the search: more than 64
    for (int d = -64; d <= 64; ++d) {
      const int b = int(out[i]) + d;
      if (b >= 0 && b <= 0xffff && decode(uint16_t(b), t) == want)
        ulps = std::min(ulps, std::abs(ordinal(uint16_t(b)) - ordinal(out[i])));
    }
    max_ulps = std::max(max_ulps, ulps);
  }
  *detail = std::to_string(65536 - bad) + " of 65536 patterns within tolerance; " + std::to_string(off) + " of " +
            std::to_string(normal) + " normal results not the correctly rounded value" +
            (off ? " (at most " + (max_ulps > 64 ? std::string("> 64") : std::to_string(max_ulps)) + " ulp away)" : "") +
            (bad ? "; outside:" + first : "");
  return bad == 0;
}
/// [exhaustive_gelu]

// Element counts around one wave of 8-element packs (elementwise.cuh, grid_size): below it one
// pack per thread, above it kUnroll packs per thread, the last step partial. For the unroll4
// variants. None without a device (a wave is the device's).
std::vector<std::pair<int64_t, int64_t>> wave_boundary() {
  int dev = 0, count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  const int64_t wave = 8 * ew::resident_blocks() * ew::kBlock;  // elements in one wave of packs
  return {{1, wave - 8}, {1, wave}, {1, wave + 8}, {1, wave + 13}, {1, 4 * wave + 8 * 3 + 5}};
}

}  // namespace

int main(int argc, char** argv) {
  using course::DType;
  using course::Op;
  course::Chapter ch("11_elementwise_template", "A generic elementwise template: packs, tail, half2, waves");
  const course::Limits any{0, {}, "any count (rows x cols as one flat array); misaligned pointers: narrower packs"};
  const course::Limits scalar{0, {}, "any count; one element per thread (the comparison for packs)"};
  ch.add(Op::relu, "pack", DType::f32, relu<float>, any);
  ch.add(Op::relu, "pack", DType::f16, relu<__half>, any);
  ch.add(Op::relu, "pack", DType::bf16, relu<__nv_bfloat16>, any);
  ch.add(Op::gelu, "pack", DType::f32, gelu<float>, any);
  ch.add(Op::gelu, "pack", DType::f16, gelu<__half>, any);
  ch.add(Op::gelu, "pack", DType::bf16, gelu<__nv_bfloat16>, any);
  ch.add(Op::gelu, "scalar", DType::f32, gelu<float, 1>, scalar);
  ch.add(Op::gelu, "scalar", DType::f16, gelu<__half, 1>, scalar);
  ch.add(Op::gelu, "waves32", DType::f32, gelu<float, 16, 32>,
         {0, {}, "any count; the grid capped at 32 waves, threads looping (OneFlow's choice)"});
  // Below 32 waves (fp16 at 2^24 elements: 8) the capped grid is the uncapped one, so this is the
  // same kernel with the grid-stride loop kept: the comparison for kLoop.
  ch.add(Op::gelu, "waves32", DType::f16, gelu<__half, 16, 32>,
         {0, {}, "any count; the grid capped at 32 waves, threads looping (OneFlow's choice)"});
  ch.add(Op::scale, "pack", DType::f32, scale<float>, any);
  ch.add(Op::scale, "pack", DType::f16, scale<__half>, any);
  ch.add(Op::scale, "pack", DType::bf16, scale<__nv_bfloat16>, any);
  ch.add(Op::mul, "pack", DType::f32, mul<float>, any);
  ch.add(Op::mul, "pack", DType::f16, mul<__half>, any);
  ch.add(Op::mul, "pack", DType::bf16, mul<__nv_bfloat16>, any);
  ch.add(Op::fma, "pack", DType::f32, fma<float>, any);
  ch.add(Op::fma, "pack", DType::f16, fma<__half>, any);
  ch.add(Op::fma, "pack", DType::bf16, fma<__nv_bfloat16>, any);
  ch.add(Op::cast_to_f32, "pack", DType::f16, cast_to_f32<__half>, any);
  ch.add(Op::cast_to_f32, "pack", DType::bf16, cast_to_f32<__nv_bfloat16>, any);
  ch.add(Op::cast_from_f32, "pack", DType::f16, cast_from_f32<__half>, any);
  ch.add(Op::cast_from_f32, "pack", DType::bf16, cast_from_f32<__nv_bfloat16>, any);
  // The comparisons of the lesson: without Apply2 (one conversion per element), and scalar.
  ch.add(Op::cast_from_f32, "no_apply2", DType::f16, cast_from_f32<__half, ew::CastFromF32Scalar<__half>>, any);
  ch.add(Op::cast_to_f32, "no_apply2", DType::f16, cast_to_f32<__half, ew::CastToF32Scalar<__half>>, any);
  ch.add(Op::cast_from_f32, "scalar", DType::f16, cast_from_f32<__half, ew::CastFromF32<__half>, 1>, scalar);
  // Four packs per thread past one wave: what hid the erf form's arithmetic, and what it does to
  // gelu_16bit's.
  const course::Limits unroll4{
      0, {}, "any count; four packs per thread past one wave (the comparison for kUnroll)", wave_boundary()};
  ch.add(Op::gelu, "unroll4", DType::f16, gelu<__half, 16, ew::kMaxWaves, 4>, unroll4);
  ch.add(Op::gelu, "erf_unroll4", DType::f16, gelu_erf<__half, 4>, unroll4);
  ch.add(Op::gelu, "erf", DType::f16, gelu_erf<__half>,
         {0, {}, "any count; erff rounded to fp16, PyTorch's formula (the comparison for gelu_16bit)"});
  ch.add(Op::gelu, "erf", DType::bf16, gelu_erf<__nv_bfloat16>,
         {0, {}, "any count; erff rounded to bf16, PyTorch's formula (the comparison for gelu_16bit)"});
  ch.add_check({"gelu/pack/f16: every fp16 pattern", DType::f16,
                [](cudaStream_t s, std::string* d) { return check_gelu_all<__half>(gelu<__half>, s, d); }});
  ch.add_check({"gelu/pack/bf16: every bf16 pattern", DType::bf16,
                [](cudaStream_t s, std::string* d) { return check_gelu_all<__nv_bfloat16>(gelu<__nv_bfloat16>, s, d); }});
  ch.add_check({"gelu/erf/f16: every fp16 pattern", DType::f16,
                [](cudaStream_t s, std::string* d) { return check_gelu_all<__half>(gelu_erf<__half>, s, d); }});
  ch.add_check({"gelu/erf/bf16: every bf16 pattern", DType::bf16,
                [](cudaStream_t s, std::string* d) { return check_gelu_all<__nv_bfloat16>(gelu_erf<__nv_bfloat16>, s, d); }});
  ch.add_check({"cast_to_f32/pack/f16: every fp16 pattern", DType::f16, check_widen_all<__half>});
  ch.add_check({"cast_to_f32/pack/bf16: every bf16 pattern", DType::bf16, check_widen_all<__nv_bfloat16>});
  ch.add_check({"cast_from_f32/pack/f16: every fp32 pattern", DType::f16, check_narrow_all<__half>});
  ch.add_check(
      {"cast_from_f32/pack/bf16: every fp32 pattern", DType::bf16, check_narrow_all<__nv_bfloat16>});
  // Flat sizes: 2^20 (launch-bound), 2^24 (fits in a few waves, larger than L2), 2^28 (streaming).
  ch.set_sweeps({course::Sweep{{1}, {int64_t(1) << 20, int64_t(1) << 24, int64_t(1) << 28}}});
  return ch.run(argc, argv);
}
