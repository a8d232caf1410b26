// The float64 references against values computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "harness/reference.h"

namespace ref = course::ref;
namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST(Reference, SoftmaxHandComputed) {
  // softmax(0, ln 2, ln 3) = (1, 2, 3) / 6
  std::vector<double> x{0, std::log(2.0), std::log(3.0)}, y(3);
  ref::softmax(x.data(), 1, 3, y.data());
  EXPECT_NEAR(y[0], 1.0 / 6, 1e-15);
  EXPECT_NEAR(y[1], 2.0 / 6, 1e-15);
  EXPECT_NEAR(y[2], 3.0 / 6, 1e-15);
}

TEST(Reference, SoftmaxIsShiftInvariantAndSafeForLargeValues) {
  std::vector<double> x{1000, 1001, 1002}, y(3), x0{0, 1, 2}, y0(3);
  ref::softmax(x.data(), 1, 3, y.data());
  ref::softmax(x0.data(), 1, 3, y0.data());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[i], y0[i], 1e-15);
}

TEST(Reference, SoftmaxSpecialRowsFollowPyTorch) {
  // row 0: all -kInf -> NaN; row 1: +kInf -> NaN; row 2: NaN -> NaN; row 3: masked -> exact 0
  std::vector<double> x{-kInf, -kInf, -kInf, 1, kInf, 2, 1, kNaN, 2, 0, -kInf, 0}, y(12);
  ref::softmax(x.data(), 4, 3, y.data());
  for (int i = 0; i < 9; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
  EXPECT_EQ(y[9], 0.5);
  EXPECT_EQ(y[10], 0.0);
  EXPECT_EQ(y[11], 0.5);
}

TEST(Reference, LogSoftmax) {
  std::vector<double> x{0, std::log(3.0), -kInf}, y(3);
  ref::log_softmax(x.data(), 1, 3, y.data());
  EXPECT_NEAR(y[0], std::log(0.25), 1e-15);
  EXPECT_NEAR(y[1], std::log(0.75), 1e-15);
  EXPECT_EQ(y[2], -kInf);
  std::vector<double> bad{-kInf, -kInf};
  ref::log_softmax(bad.data(), 1, 2, y.data());
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
}

TEST(Reference, SoftmaxBackward) {
  // y = (0.5, 0.5), dy = (1, 0): sum(dy * y) = 0.5, dx = y * (dy - 0.5) = (0.25, -0.25)
  std::vector<double> y{0.5, 0.5}, dy{1, 0}, dx(2);
  ref::softmax_backward(y.data(), dy.data(), 1, 2, dx.data());
  EXPECT_DOUBLE_EQ(dx[0], 0.25);
  EXPECT_DOUBLE_EQ(dx[1], -0.25);
}

TEST(Reference, LogSoftmaxBackward) {
  // y = log(0.25, 0.75), dy = (1, 2): dx = dy - exp(y) * 3 = (0.25, -0.25)
  std::vector<double> y{std::log(0.25), std::log(0.75)}, dy{1, 2}, dx(2);
  ref::log_softmax_backward(y.data(), dy.data(), 1, 2, dx.data());
  EXPECT_NEAR(dx[0], 0.25, 1e-15);
  EXPECT_NEAR(dx[1], -0.25, 1e-15);
}

TEST(Reference, LayerNormHandComputed) {
  // x = 1 2 3 4: mean 2.5, var 1.25
  std::vector<double> x{1, 2, 3, 4}, g{1, 2, 1, 1}, b{0, 0, 0, 1}, y(4), mean(1), rstd(1);
  const float eps = 1e-5f;
  ref::layer_norm(x.data(), g.data(), b.data(), 1, 4, eps, y.data(), mean.data(), rstd.data());
  const double rs = 1.0 / std::sqrt(1.25 + double(eps));
  EXPECT_DOUBLE_EQ(mean[0], 2.5);
  EXPECT_DOUBLE_EQ(rstd[0], rs);
  EXPECT_DOUBLE_EQ(y[0], -1.5 * rs);
  EXPECT_DOUBLE_EQ(y[1], -0.5 * rs * 2);
  EXPECT_DOUBLE_EQ(y[3], 1.5 * rs + 1);
}

TEST(Reference, LayerNormConstantRowGivesBetaExactly) {
  std::vector<double> x{7, 7, 7}, g{3, 4, 5}, b{0.25, -1, 2}, y(3), mean(1), rstd(1);
  ref::layer_norm(x.data(), g.data(), b.data(), 1, 3, 1e-5f, y.data(), mean.data(), rstd.data());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(y[i], b[i]);
}

TEST(Reference, LayerNormMeanShiftedRow) {
  // A small spread on a large offset: the double two-pass result keeps the spread.
  std::vector<double> x{1e6 + 1, 1e6 - 1}, g{1, 1}, b{0, 0}, y(2), mean(1), rstd(1);
  ref::layer_norm(x.data(), g.data(), b.data(), 1, 2, 0.0f, y.data(), mean.data(), rstd.data());
  EXPECT_DOUBLE_EQ(mean[0], 1e6);
  EXPECT_DOUBLE_EQ(rstd[0], 1.0);
  EXPECT_DOUBLE_EQ(y[0], 1.0);
}

TEST(Reference, LayerNormNonFiniteRowIsNaNEverywhere) {
  // +inf, NaN, all -inf: inf - inf inside the statistics, as PyTorch's Welford reaches it.
  std::vector<double> x{1, kInf, 2, kNaN, -kInf, -kInf}, g{1, 1}, b{0, 0}, y(6), mean(3), rstd(3);
  ref::layer_norm(x.data(), g.data(), b.data(), 3, 2, 1e-5f, y.data(), mean.data(), rstd.data());
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(std::isnan(mean[r])) << r;
    EXPECT_TRUE(std::isnan(rstd[r])) << r;
  }
  for (double v : y) EXPECT_TRUE(std::isnan(v));
}

TEST(Reference, ReduceScale) {
  std::vector<double> x{-4, 2, 1, 0, 0, 0, 1, kNaN}, y(8);
  ref::reduce_scale(x.data(), 2, 4, y.data());
  EXPECT_EQ(y[0], -1.0);
  EXPECT_EQ(y[1], 0.5);
  EXPECT_EQ(y[2], 0.25);
  EXPECT_EQ(y[3], 0.0);
  for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;  // a NaN makes amax NaN
  std::vector<double> zeros{0, 0};
  ref::reduce_scale(zeros.data(), 1, 2, y.data());
  EXPECT_TRUE(std::isnan(y[0]));  // 0 / 0, as in PyTorch
}

TEST(Reference, ElementwiseFunctors) {
  EXPECT_EQ(ref::relu(-2), 0.0);
  EXPECT_EQ(ref::relu(3), 3.0);
  EXPECT_TRUE(std::isnan(ref::relu(kNaN)));
  EXPECT_NEAR(ref::gelu(1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(ref::gelu(-1.0), -0.15865525393145707, 1e-15);
  EXPECT_EQ(ref::gelu(0.0), 0.0);
  // Far in the negative tail 1 + erf cancels to 0 in double; the erfc form keeps the value.
  EXPECT_LT(ref::gelu(-10.0), 0.0);
  EXPECT_NEAR(ref::gelu(-10.0) / -7.619853e-23, 1.0, 1e-6);
  EXPECT_EQ(ref::scale(3, 0.5), 1.5);
  EXPECT_EQ(ref::fma3(2, 3, 4), 10.0);
  EXPECT_TRUE(std::isnan(ref::gelu(kNaN)));
}

TEST(Reference, RoundToF16) {
  EXPECT_EQ(ref::round_to_f16(1.0), 1.0);
  EXPECT_EQ(ref::round_to_f16(1.0 + std::ldexp(1, -11)), 1.0);                          // tie -> even
  EXPECT_EQ(ref::round_to_f16(1.0 + 3 * std::ldexp(1, -11)), 1.0 + std::ldexp(1, -9));  // tie -> even
  EXPECT_EQ(ref::round_to_f16(65504.0), 65504.0);
  EXPECT_EQ(ref::round_to_f16(65519.0), 65504.0);
  EXPECT_EQ(ref::round_to_f16(65520.0), kInf);  // max + half an ulp rounds to kInf
  EXPECT_EQ(ref::round_to_f16(-1e9), -kInf);
  EXPECT_EQ(ref::round_to_f16(std::ldexp(1, -24)), std::ldexp(1, -24));  // smallest subnormal
  EXPECT_EQ(ref::round_to_f16(std::ldexp(1, -25)), 0.0);                 // tie -> even (0)
  EXPECT_EQ(ref::round_to_f16(std::ldexp(1.5, -25)), std::ldexp(1, -24));
  EXPECT_TRUE(std::isnan(ref::round_to_f16(kNaN)));
  EXPECT_TRUE(std::signbit(ref::round_to_f16(-0.0)));
}

TEST(Reference, RoundToBf16) {
  EXPECT_EQ(ref::round_to_bf16(1.0 + std::ldexp(1, -8)), 1.0);  // tie -> even
  EXPECT_EQ(ref::round_to_bf16(1.0 + 3 * std::ldexp(1, -8)), 1.0 + std::ldexp(1, -6));
  const double max = std::ldexp(2.0 - std::ldexp(1, -7), 127);
  EXPECT_EQ(ref::round_to_bf16(max), max);
  EXPECT_EQ(ref::round_to_bf16(max + std::ldexp(1, 119)), kInf);  // max + half an ulp
  EXPECT_EQ(ref::round_to_bf16(max + std::ldexp(1, 118)), max);
  EXPECT_EQ(ref::round_to_bf16(std::ldexp(1, -133)), std::ldexp(1, -133));  // smallest subnormal
}

// Every fp16 value is a fixed point of the rounding, and every midpoint between neighbours
// rounds to the one with an even mantissa: the whole binary16 range, checked exhaustively.
TEST(Reference, RoundToF16ExhaustiveMidpoints) {
  for (uint32_t bits = 0; bits < 0x7C00; ++bits) {  // +0 .. largest finite
    __half_raw r;
    r.x = static_cast<unsigned short>(bits);
    const double v = __half2float(__half(r));
    ASSERT_EQ(ref::round_to_f16(v), v) << bits;
    ASSERT_EQ(ref::round_to_f16(-v), -v) << bits;
    if (bits + 1 < 0x7C00) {
      r.x = static_cast<unsigned short>(bits + 1);
      const double next = __half2float(__half(r));
      const double even = (bits % 2 == 0) ? v : next;
      ASSERT_EQ(ref::round_to_f16(0.5 * (v + next)), even) << bits;
    }
  }
}

// The same with bf16 (all 2^15 non-negative finite patterns).
TEST(Reference, RoundToBf16ExhaustiveMidpoints) {
  for (uint32_t bits = 0; bits < 0x7F80; ++bits) {
    __nv_bfloat16_raw r;
    r.x = static_cast<unsigned short>(bits);
    const double v = __bfloat162float(__nv_bfloat16(r));
    ASSERT_EQ(ref::round_to_bf16(v), v) << bits;
    if (bits + 1 < 0x7F80) {
      r.x = static_cast<unsigned short>(bits + 1);
      const double next = __bfloat162float(__nv_bfloat16(r));
      ASSERT_EQ(ref::round_to_bf16(0.5 * (v + next)), (bits % 2 == 0) ? v : next) << bits;
    }
  }
}

// Independent implementations agree: ours against the CUDA headers' host conversion.
TEST(Reference, RoundToF16AgreesWithCudaHostConversion) {
  uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    float f;
    uint32_t bits = (state & 0x807FFFFFu) | ((100u + (state >> 8) % 60u) << 23);  // |f| in [2^-27, 2^33)
    std::memcpy(&f, &bits, 4);
    ASSERT_EQ(ref::round_to_f16(f), double(__half2float(__float2half_rn(f)))) << f;
    ASSERT_EQ(ref::round_to_bf16(f), double(__bfloat162float(__float2bfloat16_rn(f)))) << f;
  }
}

// The norms' backward against central differences of their forward references: L = sum(dy * y),
// so dL/dx, dL/dgamma and dL/dbeta are what the backward must give, with mean and rstd recomputed
// from the perturbed x (the backward's formula includes their dependence on x).
namespace {
std::vector<double> lcg_values(size_t n, uint32_t seed) {
  std::vector<double> v(n);
  for (auto& e : v) {
    seed = seed * 1664525u + 1013904223u;
    e = double(seed >> 8) / double(1u << 24) * 4.0 - 2.0;
  }
  return v;
}
}  // namespace

TEST(Reference, LayerNormBackwardMatchesCentralDifferences) {
  const int64_t rows = 3, cols = 7;
  const float eps = 1e-5f;
  std::vector<double> x = lcg_values(rows * cols, 1), dy = lcg_values(rows * cols, 2), gamma = lcg_values(cols, 3),
                      beta = lcg_values(cols, 4);
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& g, const std::vector<double>& b) {
    std::vector<double> y(rows * cols), m(rows), r(rows);
    ref::layer_norm(xx.data(), g.data(), b.data(), rows, cols, eps, y.data(), m.data(), r.data());
    double l = 0;
    for (int64_t i = 0; i < rows * cols; ++i) l += dy[i] * y[i];
    return l;
  };
  std::vector<double> y(rows * cols), mean(rows), rstd(rows), dx(rows * cols), dgamma(cols, 0.0), dbeta(cols, 0.0);
  ref::layer_norm(x.data(), gamma.data(), beta.data(), rows, cols, eps, y.data(), mean.data(), rstd.data());
  ref::layer_norm_backward(x.data(), dy.data(), gamma.data(), mean.data(), rstd.data(), rows, cols, dx.data(),
                           dgamma.data(), dbeta.data());
  const double h = 1e-6;
  for (int64_t i = 0; i < rows * cols; ++i) {
    auto xp = x, xm = x;
    xp[i] += h, xm[i] -= h;
    EXPECT_NEAR(dx[i], (loss(xp, gamma, beta) - loss(xm, gamma, beta)) / (2 * h), 1e-6) << "dx " << i;
  }
  for (int64_t c = 0; c < cols; ++c) {
    auto gp = gamma, gm = gamma, bp = beta, bm = beta;
    gp[c] += h, gm[c] -= h, bp[c] += h, bm[c] -= h;
    EXPECT_NEAR(dgamma[c], (loss(x, gp, beta) - loss(x, gm, beta)) / (2 * h), 1e-6) << "dgamma " << c;
    EXPECT_NEAR(dbeta[c], (loss(x, gamma, bp) - loss(x, gamma, bm)) / (2 * h), 1e-6) << "dbeta " << c;
  }
  // Row chunks accumulate: rows 0 and 1-2 in two calls give the same column sums.
  std::vector<double> dx2(rows * cols), dgamma2(cols, 0.0), dbeta2(cols, 0.0);
  ref::layer_norm_backward(x.data(), dy.data(), gamma.data(), mean.data(), rstd.data(), 1, cols, dx2.data(),
                           dgamma2.data(), dbeta2.data());
  ref::layer_norm_backward(x.data() + cols, dy.data() + cols, gamma.data(), mean.data() + 1, rstd.data() + 1, 2, cols,
                           dx2.data() + cols, dgamma2.data(), dbeta2.data());
  for (int64_t c = 0; c < cols; ++c) {
    EXPECT_NEAR(dgamma2[c], dgamma[c], 1e-12);
    EXPECT_NEAR(dbeta2[c], dbeta[c], 1e-12);
  }
}

TEST(Reference, RmsNormAndItsBackwardMatchCentralDifferences) {
  const int64_t rows = 3, cols = 7;
  const float eps = 1e-5f;
  std::vector<double> x = lcg_values(rows * cols, 5), dy = lcg_values(rows * cols, 6), gamma = lcg_values(cols, 7);
  std::vector<double> y(rows * cols), rstd(rows), dx(rows * cols), dgamma(cols, 0.0);
  ref::rms_norm(x.data(), gamma.data(), rows, cols, eps, y.data(), rstd.data());
  double ss = 0;  // row 0 by hand
  for (int64_t c = 0; c < cols; ++c) ss += x[c] * x[c];
  EXPECT_NEAR(rstd[0], 1.0 / std::sqrt(ss / cols + double(eps)), 1e-15);
  EXPECT_NEAR(y[3], x[3] * rstd[0] * gamma[3], 1e-15);
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& g) {
    std::vector<double> yy(rows * cols), r(rows);
    ref::rms_norm(xx.data(), g.data(), rows, cols, eps, yy.data(), r.data());
    double l = 0;
    for (int64_t i = 0; i < rows * cols; ++i) l += dy[i] * yy[i];
    return l;
  };
  ref::rms_norm_backward(x.data(), dy.data(), gamma.data(), rstd.data(), rows, cols, dx.data(), dgamma.data());
  const double h = 1e-6;
  for (int64_t i = 0; i < rows * cols; ++i) {
    auto xp = x, xm = x;
    xp[i] += h, xm[i] -= h;
    EXPECT_NEAR(dx[i], (loss(xp, gamma) - loss(xm, gamma)) / (2 * h), 1e-6) << "dx " << i;
  }
  for (int64_t c = 0; c < cols; ++c) {
    auto gp = gamma, gm = gamma;
    gp[c] += h, gm[c] -= h;
    EXPECT_NEAR(dgamma[c], (loss(x, gp) - loss(x, gm)) / (2 * h), 1e-6) << "dgamma " << c;
  }
}
