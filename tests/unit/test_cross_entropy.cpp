// Cross-entropy's host side (#41): the float64 references against brute-force formulas and against
// central differences of the forward (gradient checks), ignore_index, every row ignored, -inf
// logits, label smoothing and z-loss, the targets' check, the bytes model, the reduction streamed
// over row chunks, the tolerances, and the fp32 loss error at a vocabulary of 262144.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "harness/errors.h"
#include "harness/ops.h"
#include "harness/reference.h"

namespace {

using course::Args;
using course::DType;
using course::Op;
using course::Reduction;

const double kInf = std::numeric_limits<double>::infinity();

// Logits rows x cols, normal(0, 1) with about one in 61 times 20 (the suite's fill), rounded to
// fp32; targets in [0, cols) with `ignored` rows (by index) set to -100.
struct Problem {
  int64_t rows, cols;
  std::vector<double> x, t;
};

Problem make_problem(int64_t rows, int64_t cols, uint64_t seed, const std::vector<int64_t>& ignored = {},
                     bool outliers = true) {
  Problem p{rows, cols, std::vector<double>(size_t(rows * cols)), std::vector<double>(size_t(rows))};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd;
  for (double& v : p.x) {
    const float z = nd(rng);
    v = outliers && rng() % 61 == 0 ? 20.0f * z : z;
  }
  for (double& v : p.t) v = double(rng() % uint64_t(cols));
  for (int64_t r : ignored) p.t[size_t(r)] = -100;
  return p;
}

// The forward of one op call: per-row loss and lse, and the reduction (out[2]).
struct Forward {
  std::vector<double> loss, lse;
  double reduced = 0;
};

Forward forward(const Problem& p, const Args& a) {
  Forward f{std::vector<double>(size_t(p.rows)), std::vector<double>(size_t(p.rows))};
  course::reference(Op::cross_entropy, {p.x.data(), p.t.data()}, p.rows, p.cols, {f.loss.data(), f.lse.data(), &f.reduced},
                    a);
  return f;
}

// The brute force: -sum_j q_j log(softmax(x)_j), q = (1 - e) onehot(t) + e / V, plus z lse^2, with the
// softmax's logarithm taken directly (no max subtracted: fine for these logits), in long double.
double brute_loss(const double* xr, int64_t cols, int64_t t, double e, double z) {
  long double s = 0;
  for (int64_t j = 0; j < cols; ++j) s += std::exp((long double)xr[j]);
  const long double lse = std::log(s);
  long double loss = 0;
  for (int64_t j = 0; j < cols; ++j) {
    const long double q = (j == t ? 1 - e : 0) + e / cols;
    loss -= q * (xr[j] - lse);
  }
  return double(loss + z * lse * lse);
}

// The fused reference's dx for the problem (upstream gradient loss_grad).
std::vector<double> fused_dx(const Problem& p, const Args& a, Forward* f = nullptr) {
  std::vector<double> dx(size_t(p.rows * p.cols)), loss(size_t(p.rows));
  double reduced = 0;
  course::reference(Op::cross_entropy_fused, {p.x.data(), p.t.data()}, p.rows, p.cols, {dx.data(), loss.data(), &reduced},
                    a);
  if (f) {
    f->loss = loss;
    f->reduced = reduced;
  }
  return dx;
}

// Central differences of the reduced loss, element by element, against the fused reference's dx
// (loss_grad 1) and against the backward's (its lse from the forward, dloss 1 in every row: the same
// gradient for the same reduction).
void expect_gradient_matches(Problem p, Args a) {
  a.loss_grad = 1.0f;
  const std::vector<double> dx = fused_dx(p, a);
  Forward f = forward(p, a);
  std::vector<double> dloss(size_t(p.rows), 1.0), dxb(dx.size());
  course::reference(Op::cross_entropy_backward, {p.x.data(), p.t.data(), f.lse.data(), dloss.data()}, p.rows, p.cols,
                    {dxb.data()}, a);
  const double h = 1e-5;
  for (size_t i = 0; i < p.x.size(); ++i) {
    const double x0 = p.x[i];
    p.x[i] = x0 + h;
    const double up = forward(p, a).reduced;
    p.x[i] = x0 - h;
    const double down = forward(p, a).reduced;
    p.x[i] = x0;
    const double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(dx[i], numeric, 1e-8 + 1e-6 * std::fabs(numeric)) << "element " << i;
    EXPECT_DOUBLE_EQ(dxb[i], dx[i]) << "backward vs fused, element " << i;
  }
}

TEST(CrossEntropy, DefaultsArePyTorchs) {
  const Args a;
  EXPECT_EQ(a.ignore_index, -100);
  EXPECT_EQ(a.label_smoothing, 0.0f);
  EXPECT_EQ(a.z_loss, 0.0f);
  EXPECT_EQ(a.reduction, Reduction::mean);
  EXPECT_EQ(a.loss_grad, 1.0f);
  EXPECT_STREQ(course::reduction_name(Reduction::none), "none");
  EXPECT_STREQ(course::op_name(Op::cross_entropy_fused), "cross_entropy_fused");
}

TEST(CrossEntropy, TensorsAndTheirTypes) {
  const auto& fwd = course::op_spec(Op::cross_entropy);
  ASSERT_EQ(fwd.inputs.size(), 2u);
  EXPECT_EQ(fwd.inputs[1].extent, course::Extent::per_row);
  EXPECT_EQ(course::tensor_dtype(fwd.inputs[1].elem, DType::bf16), DType::i32);
  EXPECT_EQ(course::dtype_size(DType::i32), 4);
  EXPECT_STREQ(course::dtype_name(DType::i32), "i32");
  ASSERT_EQ(fwd.outputs.size(), 3u);
  EXPECT_EQ(fwd.outputs[2].extent, course::Extent::scalar);
  EXPECT_EQ(course::extent_elems(course::Extent::scalar, 100, 7), 1);
  EXPECT_TRUE(course::is_row_sum(course::Extent::scalar));
  EXPECT_EQ(course::op_spec(Op::cross_entropy_backward).inputs[2].source, course::Source::saved_lse);
  EXPECT_EQ(course::op_spec(Op::cross_entropy_fused).outputs[0].slot, &Args::y);  // dx
  // An int32 round-trips through the host conversions.
  int32_t v[2] = {0, 0};
  course::store_from_double(v, DType::i32, 1, -100);
  EXPECT_EQ(v[1], -100);
  EXPECT_EQ(course::load_as_double(v, DType::i32, 1), -100.0);
}

// One read of the logits, 4 bytes a row of targets (and of the backward's lse and dloss), 4 bytes a
// row of each per-row output, 4 bytes of the reduction, one write of dx.
TEST(CrossEntropy, BytesMoved) {
  const int64_t n = 4096, v = 128256;
  EXPECT_EQ(course::bytes_moved(Op::cross_entropy, n, v, DType::bf16), n * v * 2 + 4 * n + 8 * n + 4);
  EXPECT_EQ(course::bytes_moved(Op::cross_entropy_backward, n, v, DType::bf16), 2 * n * v * 2 + 4 * n * 3);
  EXPECT_EQ(course::bytes_moved(Op::cross_entropy_fused, n, v, DType::f32), 2 * n * v * 4 + 4 * n + 4 * n + 4);
}

TEST(CrossEntropy, PlainMatchesBruteForceAndCentralDifferences) {
  const Problem p = make_problem(5, 13, 1);
  for (Reduction red : {Reduction::none, Reduction::mean, Reduction::sum}) {
    SCOPED_TRACE(course::reduction_name(red));
    Args a;
    a.reduction = red;
    const Forward f = forward(p, a);
    double sum = 0;
    for (int64_t r = 0; r < p.rows; ++r) {
      const double want = brute_loss(p.x.data() + r * p.cols, p.cols, int64_t(p.t[r]), 0, 0);
      EXPECT_NEAR(f.loss[r], want, 1e-13 * std::max(1.0, std::fabs(want))) << r;
      EXPECT_NEAR(f.lse[r], course::ref::logsumexp(p.x.data() + r * p.cols, p.cols), 0) << r;
      sum += want;
    }
    EXPECT_NEAR(f.reduced, red == Reduction::mean ? sum / p.rows : sum, 1e-12 * sum);
    expect_gradient_matches(p, a);
  }
}

TEST(CrossEntropy, LabelSmoothing) {
  const Problem p = make_problem(4, 11, 2);
  Args a;
  a.label_smoothing = 0.1f;
  const double e = double(a.label_smoothing);  // the fp32 value, as kernels take it
  const Forward f = forward(p, a);
  for (int64_t r = 0; r < p.rows; ++r)
    EXPECT_NEAR(f.loss[r], brute_loss(p.x.data() + r * p.cols, p.cols, int64_t(p.t[r]), e, 0), 1e-12) << r;
  expect_gradient_matches(p, a);
  a.reduction = Reduction::sum;
  expect_gradient_matches(p, a);
}

TEST(CrossEntropy, ZLoss) {
  const Problem p = make_problem(4, 9, 3);
  Args a;
  a.z_loss = 1e-2f;
  const Forward f = forward(p, a);
  for (int64_t r = 0; r < p.rows; ++r)
    EXPECT_NEAR(f.loss[r], brute_loss(p.x.data() + r * p.cols, p.cols, int64_t(p.t[r]), 0, double(a.z_loss)), 1e-12)
        << r;
  expect_gradient_matches(p, a);
  a.label_smoothing = 0.1f;  // both at once
  expect_gradient_matches(p, a);
}

// Ignored rows give loss 0, lse 0 and dx 0, and the mean divides by the rows not ignored only.
TEST(CrossEntropy, IgnoreIndexRows) {
  const Problem p = make_problem(6, 10, 4, {1, 4});
  Args a;
  const Forward f = forward(p, a);
  double sum = 0;
  for (int64_t r = 0; r < p.rows; ++r) {
    if (r == 1 || r == 4) {
      EXPECT_EQ(f.loss[r], 0.0);
      EXPECT_EQ(f.lse[r], 0.0);
      continue;
    }
    sum += brute_loss(p.x.data() + r * p.cols, p.cols, int64_t(p.t[r]), 0, 0);
  }
  EXPECT_NEAR(f.reduced, sum / 4, 1e-13);
  const std::vector<double> dx = fused_dx(p, a);
  for (int64_t j = 0; j < p.cols; ++j) EXPECT_EQ(dx[size_t(1 * p.cols + j)], 0.0) << j;
  expect_gradient_matches(p, a);
  // Another ignore_index: -100 is then a bad target (NaN row), 3 ignores the rows whose class is 3.
  Problem q = p;
  q.t = {3, 3, 0, 3, 1, 2};
  a.ignore_index = 3;
  const Forward g = forward(q, a);
  for (int64_t r : {0, 1, 3}) EXPECT_EQ(g.loss[r], 0.0) << r;
  EXPECT_NEAR(g.reduced, (g.loss[2] + g.loss[4] + g.loss[5]) / 3, 1e-13);
}

// PyTorch: the mean of no rows is 0 / 0 = NaN (since 1.11, pytorch/pytorch#64572; #70348 and
// #116349 asked for 0 and were told NaN is intended); reduction none gives zeros, sum gives 0; the
// gradient is 0.
TEST(CrossEntropy, AllRowsIgnored) {
  const Problem p = make_problem(3, 8, 5, {0, 1, 2});
  Args a;
  const Forward f = forward(p, a);
  EXPECT_TRUE(std::isnan(f.reduced));
  for (double l : f.loss) EXPECT_EQ(l, 0.0);
  a.reduction = Reduction::sum;
  EXPECT_EQ(forward(p, a).reduced, 0.0);
  for (Reduction red : {Reduction::mean, Reduction::sum}) {
    a.reduction = red;
    for (double d : fused_dx(p, a)) EXPECT_EQ(d, 0.0);
  }
  // Split over threads in chunks of rows, the mean is still 0 / 0.
  a.reduction = Reduction::mean;
  std::vector<double> loss(3), lse(3);
  double reduced = 0;
  course::reference_parallel(Op::cross_entropy, {p.x.data(), p.t.data()}, 3, 8, {loss.data(), lse.data(), &reduced}, a,
                             3);
  EXPECT_TRUE(std::isnan(reduced));
}

// -inf logits: a row of -inf but the target's (finite) has lse = x_t and loss exactly 0, and dx 0
// (p is one-hot); with label smoothing the loss is +inf, as PyTorch's (mean(x) is -inf). A row of
// -inf only, or one holding NaN or +inf, gives NaN, as PyTorch's log_softmax. -inf elements of an
// ordinary row add nothing to the sum and get p = 0.
TEST(CrossEntropy, MinusInfinityLogits) {
  Problem p{4, 5, {-kInf, -kInf, 2.5, -kInf, -kInf,  // all -inf but the target's
                   -kInf, -kInf, -kInf, -kInf, -kInf,  // all -inf
                   0.5, -kInf, 1.0, -kInf, -0.25,     // some -inf
                   0.5, kInf, 1.0, 0.0, -0.25},       // +inf
            {2, 0, 4, 2}};
  Args a;
  a.reduction = Reduction::none;
  const Forward f = forward(p, a);
  EXPECT_EQ(f.loss[0], 0.0);
  EXPECT_EQ(f.lse[0], 2.5);
  EXPECT_TRUE(std::isnan(f.loss[1]));
  EXPECT_TRUE(std::isnan(f.loss[3]));
  const double finite[3] = {0.5, 1.0, -0.25};
  EXPECT_NEAR(f.loss[2], brute_loss(finite, 3, 2, 0, 0), 1e-14);
  const std::vector<double> dx = fused_dx(p, a);
  for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(dx[size_t(j)], 0.0) << j;
  for (int64_t j : {1, 3}) EXPECT_EQ(dx[size_t(2 * 5 + j)], 0.0) << j;
  for (int64_t j = 0; j < 5; ++j) EXPECT_TRUE(std::isnan(dx[size_t(5 + j)])) << j;
  a.label_smoothing = 0.1f;
  EXPECT_EQ(forward(p, a).loss[0], kInf);
  // The gradient of the rows that stay finite, by central differences (the -inf elements held).
  Problem q{1, 5, {0.5, -kInf, 1.0, -kInf, -0.25}, {4}};
  a.label_smoothing = 0;
  a.reduction = Reduction::sum;
  a.loss_grad = 1.0f;
  const std::vector<double> dq = fused_dx(q, a);
  const double h = 1e-5;
  for (size_t i : {size_t(0), size_t(2), size_t(4)}) {
    Problem u = q, d = q;
    u.x[i] += h;
    d.x[i] -= h;
    EXPECT_NEAR(dq[i], (forward(u, a).reduced - forward(d, a).reduced) / (2 * h), 1e-9) << i;
  }
}

// A target outside [0, V) that is not ignore_index: check_targets refuses it by row (UsageError:
// exit 2 from a command line), and the references give that row NaN (loss, lse, dx): what a kernel
// that meets one anyway must write, never a wrong loss or a read outside the row.
TEST(CrossEntropy, BadTargets) {
  const std::vector<int32_t> good{0, 4, -100, 2};
  EXPECT_EQ(course::check_targets(good.data(), 4, 5, -100), 3);
  for (int32_t bad : {5, -1, 1 << 30}) {
    std::vector<int32_t> t = good;
    t[3] = bad;
    try {
      course::check_targets(t.data(), 4, 5, -100);
      ADD_FAILURE() << "accepted target " << bad;
    } catch (const course::UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("target[3] = " + std::to_string(bad)), std::string::npos) << m;
      EXPECT_NE(m.find("[0, 5)"), std::string::npos) << m;
    }
  }
  Problem p = make_problem(2, 6, 6);
  p.t[1] = 6;
  Args a;
  a.reduction = Reduction::sum;
  const Forward f = forward(p, a);
  EXPECT_TRUE(std::isnan(f.loss[1]) && std::isnan(f.lse[1]) && std::isnan(f.reduced));
  EXPECT_FALSE(std::isnan(f.loss[0]));
  const std::vector<double> dx = fused_dx(p, a);
  for (int64_t j = 0; j < 6; ++j) EXPECT_TRUE(std::isnan(dx[size_t(6 + j)]));
}

// The saved lse is the forward's, rounded to fp32, and 0 for an ignored row.
TEST(CrossEntropy, SavedLse) {
  const Problem p = make_problem(4, 50, 7, {2});
  std::vector<double> lse(4);
  course::saved_lse(p.x.data(), p.t.data(), 4, 50, -100, lse.data());
  for (int64_t r = 0; r < 4; ++r) {
    const double want = r == 2 ? 0.0 : course::ref::round_to_f32(course::ref::logsumexp(p.x.data() + r * 50, 50));
    EXPECT_EQ(lse[size_t(r)], want) << r;
  }
  EXPECT_THROW(course::saved_row_stat(Op::cross_entropy_backward, course::Source::saved_lse, p.x.data(), 1, 50, 1e-5f,
                                      lse.data()),
               std::invalid_argument);
}

// Split over threads (reference_parallel) or streamed in row chunks (column_sums_streamed, as the
// suite reads a large case back), the mean divides by the rows not ignored in the whole tensor.
TEST(CrossEntropy, ReductionOverChunksOfRows) {
  const int64_t rows = 3001, cols = 40;
  std::vector<int64_t> ignored;
  for (int64_t r = 0; r < rows; r += 16) ignored.push_back(r);
  const Problem p = make_problem(rows, cols, 8, ignored);
  for (Reduction red : {Reduction::mean, Reduction::sum}) {
    SCOPED_TRACE(course::reduction_name(red));
    Args a;
    a.reduction = red;
    const Forward whole = forward(p, a);
    std::vector<double> loss(rows), lse(rows);
    double reduced = 0;
    course::reference_parallel(Op::cross_entropy, {p.x.data(), p.t.data()}, rows, cols,
                               {loss.data(), lse.data(), &reduced}, a, 4);
    EXPECT_NEAR(reduced, whole.reduced, 1e-12 * std::fabs(whole.reduced));
    auto fetch = [&](int64_t b, int64_t e) {
      return std::vector<std::vector<double>>{std::vector<double>(p.x.begin() + b * cols, p.x.begin() + e * cols),
                                              std::vector<double>(p.t.begin() + b, p.t.begin() + e)};
    };
    EXPECT_THROW(course::column_sums_streamed(Op::cross_entropy, rows, cols, a, 500, fetch), std::invalid_argument);
    std::vector<int32_t> t32(p.t.begin(), p.t.end());
    a.valid_rows = course::check_targets(t32.data(), rows, cols, a.ignore_index);
    EXPECT_EQ(a.valid_rows, rows - int64_t(ignored.size()));
    for (Op op : {Op::cross_entropy, Op::cross_entropy_fused}) {
      const course::ColumnSums s = course::column_sums_streamed(op, rows, cols, a, 500, fetch, 2);
      ASSERT_EQ(s.sum[2].size(), 1u);
      EXPECT_NEAR(s.sum[2][0], whole.reduced, 1e-12 * std::fabs(whole.reduced));
      EXPECT_GT(s.magnitude[2][0], std::fabs(whole.reduced));  // |lse| + |x_t| + ... per row
      // Judged as a column sum of one column: the fp32 sum passes, one row's loss left out fails.
      float f32 = 0;
      for (double l : whole.loss) f32 += float(red == Reduction::mean ? l / double(a.valid_rows) : l);
      const double got = f32, missing = whole.reduced - whole.loss[5] / (red == Reduction::mean ? a.valid_rows : 1);
      EXPECT_TRUE(course::compare_col_sum(&got, s.sum[2].data(), s.magnitude[2].data(), rows, 1).ok());
      EXPECT_FALSE(course::compare_col_sum(&missing, s.sum[2].data(), s.magnitude[2].data(), rows, 1).ok());
      EXPECT_THROW(course::compare_output(op, DType::f32, 2, {}, {}, &got, 1, cols, nullptr), std::invalid_argument);
    }
  }
}

// The per-row tolerances: an fp32 computation of the loss (max, then a blocked sum of exp, as a
// kernel does) passes, a loss off by 1e-3 fails; dx from fp32 arithmetic passes in every storage type
// rounding, and a dx that forgets the mean's count fails.
TEST(CrossEntropy, TolerancesPassFp32AndCatchErrors) {
  const int64_t rows = 64, cols = 3001;
  const Problem p = make_problem(rows, cols, 9, {3, 19});
  Args a;
  std::vector<int32_t> t32(p.t.begin(), p.t.end());
  a.valid_rows = course::check_targets(t32.data(), rows, cols, a.ignore_index);
  Forward f = forward(p, a);
  std::vector<double> got(rows), got_lse(rows), dx32(size_t(rows * cols));
  const std::vector<double> dx = fused_dx(p, a);
  const float g = 1.0f / float(a.valid_rows);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = p.x.data() + r * cols;
    if (p.t[r] == -100) continue;  // 0, exactly
    float m = -INFINITY;
    for (int64_t j = 0; j < cols; ++j) m = std::fmax(m, float(xr[j]));
    float s = 0;  // 32 partial sums, then added: a kernel's threads
    float part[32] = {};
    for (int64_t j = 0; j < cols; ++j) part[j % 32] += std::exp(float(xr[j]) - m);
    for (float q : part) s += q;
    const float lse = m + std::log(s);
    got_lse[r] = lse;
    got[r] = lse - float(xr[int64_t(p.t[r])]);
    for (int64_t j = 0; j < cols; ++j)
      dx32[size_t(r * cols + j)] = (std::exp(float(xr[j]) - lse) - (j == int64_t(p.t[r]) ? 1.0f : 0.0f)) * g;
  }
  std::vector<const double*> in{p.x.data(), p.t.data()};
  std::vector<double*> ref{f.loss.data(), f.lse.data(), &f.reduced};
  EXPECT_TRUE(course::compare_output(Op::cross_entropy, DType::f32, 0, in, ref, got.data(), rows, cols, nullptr, 2, &a).ok());
  EXPECT_TRUE(
      course::compare_output(Op::cross_entropy, DType::f32, 1, in, ref, got_lse.data(), rows, cols, nullptr, 2, &a).ok());
  std::vector<double> off = got;
  off[7] += 1e-3;
  EXPECT_FALSE(course::compare_output(Op::cross_entropy, DType::f32, 0, in, ref, off.data(), rows, cols, nullptr, 2, &a).ok());
  off = got;
  off[3] = 1e-30;  // an ignored row's loss must be 0 exactly
  EXPECT_FALSE(course::compare_output(Op::cross_entropy, DType::f32, 0, in, ref, off.data(), rows, cols, nullptr, 2, &a).ok());
  Forward ff;
  const std::vector<double> dxr = fused_dx(p, a, &ff);
  std::vector<double*> fref{const_cast<double*>(dxr.data()), ff.loss.data(), &ff.reduced};
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(course::dtype_name(t));
    std::vector<double> stored(dx32.size()), unscaled(dx32.size());
    for (size_t i = 0; i < dx32.size(); ++i) {
      stored[i] = course::round_to_type(t, dx32[i]);
      unscaled[i] = course::round_to_type(t, dx32[i] / double(g));  // the mean's count forgotten
    }
    EXPECT_TRUE(course::compare_output(Op::cross_entropy_fused, t, 0, in, fref, stored.data(), rows, cols, nullptr, 2, &a).ok());
    EXPECT_FALSE(
        course::compare_output(Op::cross_entropy_fused, t, 0, in, fref, unscaled.data(), rows, cols, nullptr, 2, &a).ok());
  }
}

// The lesson's number: the loss of rows of 262144 logits computed in fp32 the naive way (one running
// sum of exp(x - max) in element order) and blocked (256 partial sums, as a block's threads keep them,
// then a tree), against the float64 reference. Printed, for logits normal(0, 1) (the sum spread over
// every element: lse about log(V) + 1/2) and for the suite's fill (one in 61 times 20: a few outliers
// carry the sum); the blocked sum must stay inside the suite's tolerance, the naive one need not.
class LargeVocabulary : public ::testing::TestWithParam<bool> {};

TEST_P(LargeVocabulary, Fp32LossError) {
  const int64_t rows = 16, cols = 262144;
  const Problem p = make_problem(rows, cols, 10, {}, GetParam());
  Args a;
  a.reduction = Reduction::none;
  std::vector<int32_t> t32(p.t.begin(), p.t.end());
  a.valid_rows = course::check_targets(t32.data(), rows, cols, a.ignore_index);
  const Forward f = forward(p, a);
  double naive_max = 0, blocked_max = 0;
  std::vector<double> blocked(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = p.x.data() + r * cols;
    float m = -INFINITY;
    for (int64_t j = 0; j < cols; ++j) m = std::fmax(m, float(xr[j]));
    float naive = 0, part[256] = {};
    for (int64_t j = 0; j < cols; ++j) {
      const float e = std::exp(float(xr[j]) - m);
      naive += e;
      part[j % 256] += e;
    }
    for (int w = 128; w >= 1; w /= 2)  // a tree over the partial sums, as a block reduces
      for (int i = 0; i < w; ++i) part[i] += part[i + w];
    const float xt = float(xr[int64_t(p.t[r])]);
    const double naive_loss = (m + std::log(naive)) - xt, blocked_loss = (m + std::log(part[0])) - xt;
    blocked[r] = blocked_loss;
    naive_max = std::max(naive_max, std::fabs(naive_loss - f.loss[r]));
    blocked_max = std::max(blocked_max, std::fabs(blocked_loss - f.loss[r]));
  }
  std::printf("[ fp32 loss error at V = %lld, %s, %lld rows (loss %.2f, lse %.2f) ] naive running sum: %.3g, "
              "256 partial sums + tree: %.3g\n",
              (long long)cols, GetParam() ? "suite fill" : "normal(0, 1)", (long long)rows, f.loss[0], f.lse[0],
              naive_max, blocked_max);
  std::vector<const double*> in{p.x.data(), p.t.data()};
  std::vector<double*> ref{const_cast<double*>(f.loss.data()), const_cast<double*>(f.lse.data()),
                           const_cast<double*>(&f.reduced)};
  EXPECT_TRUE(
      course::compare_output(Op::cross_entropy, DType::f32, 0, in, ref, blocked.data(), rows, cols, nullptr, 2, &a).ok());
}

INSTANTIATE_TEST_SUITE_P(CrossEntropy, LargeVocabulary, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "SuiteFill" : "Normal"; });

}  // namespace
