// gelu16_emulate.cu: where do chapter 11's two 16-bit GELU forms miss the correctly rounded result
// by more than one ulp? A host-side emulation (no GPU needed): gelu_16bit's formula with an exact
// reciprocal and exp2f in place of the SFU's approximate ones, and the erf form with the host's
// erff, each rounded to fp16 and bf16 and compared, over every pattern whose correctly rounded
// GELU is a normal number, with 0.5 x erfc(-x / sqrt 2) in double. The device's own counts come
// from `ch11_elementwise_template --verify --kernel gelu` (check_gelu_all).
// Build and run: nvcc -o gelu16_emulate gelu16_emulate.cu && ./gelu16_emulate
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

static float gelu_16bit(float x) {  // functors.cuh's gelu_16bit, exact rcp and exp2
  const float a = std::fabs(x);
  const float t = 1.0f / std::fmaf(0.2316419f, a, 1.0f);
  const float e = std::exp2f((x * -0.72134752044448170f) * x);
  float p = std::fmaf(0.53070271f, t, -0.72657601f);
  p = std::fmaf(p, t, 0.71070687f);
  p = std::fmaf(p, t, -0.14224837f);
  p = std::fmaf(p, t, 0.12741480f);
  const float q = (p * t) * e;
  return x * (x >= 0.0f ? 1.0f - q : q);
}
static float gelu_erf(float v) {  // Gelu<float>::f
  const float h = 0.5f * v;
  return std::fmaf(h, std::erff(v * 0.70710678118654752f), h);
}

struct Type {
  const char* name;
  float (*decode)(unsigned short);
  unsigned short (*encode)(float);  // round to nearest even
  double min_normal;
};
static float dec_f16(unsigned short b) { __half_raw r; r.x = b; return __half2float(__half(r)); }
static unsigned short enc_f16(float v) { __half h = __float2half_rn(v); __half_raw r = h; return r.x; }
static float dec_bf16(unsigned short b) { unsigned u = unsigned(b) << 16; float f; std::memcpy(&f, &u, 4); return f; }
static unsigned short enc_bf16(float v) { __nv_bfloat16 h = __float2bfloat16_rn(v); unsigned short b; std::memcpy(&b, &h, 2); return b; }
static int ordinal(unsigned short b) { return (b & 0x8000) ? -int(b & 0x7fff) : int(b); }

int main() {
  const Type types[] = {{"fp16", dec_f16, enc_f16, std::ldexp(1.0, -14)}, {"bf16", dec_bf16, enc_bf16, std::ldexp(1.0, -126)}};
  for (const Type& t : types) {
    int normal = 0, off[2] = {0, 0}, far[2] = {0, 0}, worst[2] = {0, 0};
    double far_x_max[2] = {-INFINITY, -INFINITY}, far_abs_max[2] = {0, 0};
    for (int b = 0; b < 65536; ++b) {
      const float x = t.decode((unsigned short)b);
      if (!std::isfinite(x)) continue;
      const double ref = 0.5 * double(x) * std::erfc(-double(x) / std::sqrt(2.0));
      // Rounded to the 16-bit type through float: exact for these magnitudes but for a double
      // rounding, which the counts tolerate (it moves a result that lies within 2^-24 of a tie).
      const unsigned short want = t.encode(float(ref));
      if (std::fabs(t.decode(want)) < t.min_normal) continue;
      ++normal;
      const float got[2] = {gelu_16bit(x), gelu_erf(x)};
      for (int f = 0; f < 2; ++f) {
        const int d = std::abs(ordinal(t.encode(got[f])) - ordinal(want));
        if (d > 0) ++off[f];
        if (d > worst[f]) worst[f] = d;
        if (d > 1) {
          ++far[f];
          far_x_max[f] = std::fmax(far_x_max[f], x);
          far_abs_max[f] = std::fmax(far_abs_max[f], std::fabs(ref));
        }
      }
    }
    const char* names[2] = {"gelu_16bit", "erf form"};
    for (int f = 0; f < 2; ++f) {
      std::printf("%s %-10s: %5d of %d normal results not correctly rounded, at most %d ulp away;", t.name, names[f],
                  off[f], normal, worst[f]);
      if (far[f])
        std::printf(" %d more than 1 ulp away, all at x <= %g, where |GELU(x)| <= %.3g\n", far[f], far_x_max[f],
                    far_abs_max[f]);
      else
        std::printf(" none more than 1 ulp away\n");
    }
  }
  return 0;
}
