// The verification's host threads: the range split, the thread count's environment, and that the
// reference and the comparison give on several threads exactly what they give on one.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "harness/ops.h"
#include "harness/parallel.h"

namespace {

using course::IndexRange;
using course::Op;

TEST(Parallel, ThreadCountFromTheEnvironment) {
  EXPECT_GE(course::host_threads_from(nullptr), 1);  // unset: the hardware's count
  EXPECT_GE(course::host_threads_from(""), 1);
  EXPECT_EQ(course::host_threads_from("1"), 1);
  EXPECT_EQ(course::host_threads_from("16"), 16);
  for (const char* bad : {"0", "-2", "four", "4x", "1025"})
    EXPECT_THROW(course::host_threads_from(bad), std::runtime_error) << bad;
}

TEST(Parallel, SplitCoversTheRangeInOrder) {
  EXPECT_TRUE(course::split_range(0, 10, 4).empty());
  EXPECT_TRUE(course::split_range(-5, 10, 4).empty());
  for (int64_t n : {1, 7, 100, 1000, 1001, 65536})
    for (int64_t grain : {1, 10, 64, 5000})
      for (int threads : {1, 3, 16}) {
        const auto parts = course::split_range(n, grain, threads);
        ASSERT_FALSE(parts.empty());
        EXPECT_LE(int(parts.size()), threads);
        int64_t next = 0;
        for (const IndexRange& r : parts) {
          EXPECT_EQ(r.begin, next);
          EXPECT_GT(r.end, r.begin);
          if (parts.size() > 1) EXPECT_GE(r.end - r.begin, grain) << n << " " << grain << " " << threads;
          next = r.end;
        }
        EXPECT_EQ(next, n);
        if (n >= grain * threads) EXPECT_EQ(int(parts.size()), threads);  // enough work: every thread
      }
}

TEST(Parallel, EveryIndexOnceAndTheFirstErrorRethrown) {
  std::vector<std::atomic<int>> seen(10000);
  course::parallel_ranges(
      10000, 100,
      [&](size_t, IndexRange r) {
        for (int64_t i = r.begin; i < r.end; ++i) ++seen[size_t(i)];
      },
      8);
  for (const auto& s : seen) ASSERT_EQ(s.load(), 1);

  try {
    course::parallel_ranges(
        1000, 1,
        [](size_t k, IndexRange) {
          if (k >= 2) throw std::runtime_error("chunk " + std::to_string(k));
        },
        4);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "chunk 2");
  }
}

// Inputs for every tensor of `op`: normal values with a few specials in the first input.
struct Tensors {
  std::vector<std::vector<double>> in, out;
  std::vector<const double*> in_ptr;
  std::vector<double*> out_ptr;
};

Tensors make_tensors(Op op, int64_t rows, int64_t cols, uint64_t seed) {
  const course::OpSpec& spec = course::op_spec(op);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  Tensors t;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    std::vector<double> v(size_t(course::extent_elems(spec.inputs[k].extent, rows, cols)));
    for (double& x : v) x = spec.inputs[k].elem == course::Elem::u8 ? double(rng() % 3 == 0) : nd(rng);
    if (k == 0 && spec.inputs[k].elem != course::Elem::u8) {
      for (int64_t i = 5; i < int64_t(v.size()); i += 977) v[size_t(i)] = -INFINITY;
      v[v.size() / 2] = NAN;
      v[v.size() / 3] = INFINITY;
    }
    t.in.push_back(std::move(v));
  }
  for (const course::OutputSpec& o : spec.outputs)
    t.out.emplace_back(size_t(course::extent_elems(o.extent, rows, cols)), -1.0);
  for (auto& v : t.in) t.in_ptr.push_back(v.data());
  for (auto& v : t.out) t.out_ptr.push_back(v.data());
  return t;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

const Op kOps[] = {Op::copy,          Op::softmax,          Op::log_softmax,          Op::reduce_scale,
                   Op::layer_norm,    Op::relu,             Op::gelu,                 Op::scale,
                   Op::mul,           Op::fma,              Op::cast_to_f32,          Op::cast_from_f32,
                   Op::softmax_backward, Op::log_softmax_backward, Op::scale_mask_softmax, Op::rms_norm};

TEST(Parallel, ReferenceOnThreadsEqualsOneThread) {
  // 211 x 977 elements: about six chunks of the reference's grain, so four threads all work; and
  // one long row, which a row-wise operation cannot split but an elementwise one does.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{211, 977}, {1, 200003}})
    for (Op op : kOps) {
      course::Args a;
      a.alpha = 1.7f;
      Tensors one = make_tensors(op, rows, cols, 3), many = make_tensors(op, rows, cols, 3);
      course::reference(op, one.in_ptr, rows, cols, one.out_ptr, a);
      course::reference_parallel(op, many.in_ptr, rows, cols, many.out_ptr, a, 4);
      for (size_t k = 0; k < one.out.size(); ++k)
        for (size_t i = 0; i < one.out[k].size(); ++i)
          ASSERT_TRUE(same_bits(one.out[k][i], many.out[k][i]))
              << course::op_name(op) << " output " << k << " element " << i << ": " << one.out[k][i] << " vs "
              << many.out[k][i];
    }
}

// The norms' backward: dx on threads equals one thread bit for bit; the column sums over every row
// (Extent::col_sum) are added chunk by chunk, so they equal one thread's up to the order of the
// additions: within 1e-12 of the sum of the magnitudes.
TEST(Parallel, ColumnSumsOnThreadsMatchOneThread) {
  for (Op op : {Op::layer_norm_backward, Op::rms_norm_backward}) {
    const int64_t rows = 5000, cols = 16;  // the grain is 2048 rows of 16: three chunks on four threads
    Tensors one = make_tensors(op, rows, cols, 7), many = make_tensors(op, rows, cols, 7);
    for (auto* t : {&one, &many}) {  // finite inputs, a positive rstd
      for (auto& v : t->in)
        for (double& x : v) x = std::isfinite(x) ? x : 0.5;
      for (double& x : t->in.back()) x = std::fabs(x) + 0.1;
      for (auto& v : t->out) std::fill(v.begin(), v.end(), 0.0);  // reference() adds the column sums
    }
    course::Args a;
    course::reference(op, one.in_ptr, rows, cols, one.out_ptr, a);
    course::reference_parallel(op, many.in_ptr, rows, cols, many.out_ptr, a, 4);
    const course::OpSpec& spec = course::op_spec(op);
    for (size_t k = 0; k < one.out.size(); ++k)
      for (size_t i = 0; i < one.out[k].size(); ++i) {
        if (spec.outputs[k].extent == course::Extent::col_sum)
          EXPECT_NEAR(many.out[k][i], one.out[k][i], 1e-12 * (1.0 + std::fabs(one.out[k][i])) * double(rows))
              << course::op_name(op) << " output " << k << " col " << i;
        else
          ASSERT_TRUE(same_bits(one.out[k][i], many.out[k][i])) << course::op_name(op) << " output " << k;
      }
  }
}

// The reference's outputs, with `got` made from them as a kernel of storage type t would give
// them, and a few elements knocked out of tolerance.
struct Compared {
  Tensors t;
  std::vector<std::vector<double>> got;
  std::vector<int64_t> ids;
};

Compared make_compared(Op op, course::DType dt, int64_t rows, int64_t cols, const std::vector<int64_t>& bad) {
  Compared c{make_tensors(op, rows, cols, 5), {}, {}};
  course::Args a;
  a.alpha = 1.7f;
  course::reference(op, c.t.in_ptr, rows, cols, c.t.out_ptr, a);
  const course::OpSpec& spec = course::op_spec(op);
  for (size_t k = 0; k < c.t.out.size(); ++k) {
    const course::DType ot = course::tensor_dtype(spec.outputs[k].elem, dt);
    std::vector<double> g(c.t.out[k].size());
    for (size_t i = 0; i < g.size(); ++i) g[i] = course::round_to_type(ot, c.t.out[k][i]);
    for (int64_t i : bad)
      if (i < int64_t(g.size())) g[size_t(i)] = std::isfinite(g[size_t(i)]) ? g[size_t(i)] * 1.5 + 1.0 : 0.25;
    c.got.push_back(std::move(g));
  }
  for (int64_t r = 0; r < rows; ++r) c.ids.push_back(1000 + 3 * r);  // sampled rows, as verify names them
  return c;
}

TEST(Parallel, ComparisonOnThreadsEqualsOneThread) {
  const std::vector<int64_t> bad{7, 5000, 90001, 150000, 150001, 206000};  // spread over the chunks
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{211, 977}, {1, 200003}})
    for (Op op : kOps) {
      Compared c = make_compared(op, course::DType::f16, rows, cols, bad);
      for (size_t k = 0; k < c.got.size(); ++k) {
        const auto one = course::compare_output(op, course::DType::f16, int(k), c.t.in_ptr, c.t.out_ptr,
                                                c.got[k].data(), rows, cols, c.ids.data(), 1);
        const auto many = course::compare_output(op, course::DType::f16, int(k), c.t.in_ptr, c.t.out_ptr,
                                                 c.got[k].data(), rows, cols, c.ids.data(), 5);
        SCOPED_TRACE(std::string(course::op_name(op)) + " output " + std::to_string(k));
        EXPECT_EQ(one.checked, int64_t(c.got[k].size()));
        EXPECT_EQ(many.checked, one.checked);
        EXPECT_EQ(many.failed, one.failed);
        EXPECT_TRUE(same_bits(many.max_abs_err, one.max_abs_err));
        EXPECT_TRUE(same_bits(many.max_rel_err, one.max_rel_err));
        ASSERT_EQ(many.first.size(), one.first.size());
        for (size_t m = 0; m < one.first.size(); ++m) {
          EXPECT_EQ(many.first[m].row, one.first[m].row);
          EXPECT_EQ(many.first[m].col, one.first[m].col);
        }
        if (k == 0) EXPECT_GE(one.failed, 1);  // a knocked-out element of y is always caught
      }
    }
}

TEST(Parallel, ComparisonNamesTheTensorsRowAndColumn) {
  // Elementwise (compared in chunks of elements) and row-wise (in chunks of rows), each with one
  // bad element at row 150, column 3 of a 211 x 977 tensor: reported at the row's id, 1000 + 3 * 150.
  for (Op op : {Op::gelu, Op::cast_from_f32, Op::softmax}) {
    Compared c = make_compared(op, course::DType::bf16, 211, 977, {150 * 977 + 3});
    const auto r = course::compare_output(op, course::DType::bf16, 0, c.t.in_ptr, c.t.out_ptr, c.got[0].data(), 211,
                                          977, c.ids.data(), 4);
    ASSERT_EQ(r.failed, 1) << course::op_name(op);
    EXPECT_EQ(r.first[0].row, 1450) << course::op_name(op);
    EXPECT_EQ(r.first[0].col, 3) << course::op_name(op);
  }
}

TEST(Parallel, ComparisonSaturatesToTheOutputType) {
  // fp16 holds at most 65504: a reference of 70000 is +inf there, and +inf is the right output;
  // 65504 itself stays finite.
  std::vector<double> x{70000.0, 65504.0, -1e6, 1.0};
  std::vector<double> y(x);
  std::vector<const double*> in{x.data()};
  std::vector<double*> ref{y.data()};
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> got{inf, 65504.0, -inf, 1.0};
  const int64_t id = 0;
  auto r = course::compare_output(Op::scale, course::DType::f16, 0, in, ref, got.data(), 1, 4, &id, 2);
  EXPECT_TRUE(r.ok());
  got[1] = inf;  // 65504 is finite in fp16
  r = course::compare_output(Op::scale, course::DType::f16, 0, in, ref, got.data(), 1, 4, &id, 2);
  EXPECT_EQ(r.failed, 1);
}

}  // namespace
