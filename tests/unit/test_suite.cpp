// The verification suite's case list (verify.cu: suite_cases): which boundary shapes the full
// suite and the sanitizers' --quick suite check. Host code only; no GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "harness/bench.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/verify.h"

namespace {

bool has(const std::vector<course::Case>& cs, int64_t rows, int64_t cols) {
  return std::any_of(cs.begin(), cs.end(), [&](const course::Case& c) { return c.rows == rows && c.cols == cols; });
}

course::Variant variant(course::Limits limits) {
  return course::Variant{course::Op::softmax, "k", course::DType::f32, nullptr, std::move(limits), nullptr};
}

TEST(SuiteCases, ShapesInBothSuitesFullShapesInTheFullSuiteOnly) {
  const auto v = variant(course::Limits{0, {}, "any cols", {{65, 4099}}, {{66, 120001}}});
  const auto full = course::suite_cases(v, /*quick=*/false, /*large=*/false);
  const auto quick = course::suite_cases(v, /*quick=*/true, /*large=*/false);
  EXPECT_TRUE(has(full, 65, 4099));
  EXPECT_TRUE(has(quick, 65, 4099));
  EXPECT_TRUE(has(full, 66, 120001));
  EXPECT_FALSE(has(quick, 66, 120001));
}

// One row of a vocabulary (odd and even), in the full suite only, for kernels that take such rows.
TEST(SuiteCases, VocabularyRowsInTheFullSuite) {
  const auto any = variant(course::Limits{0, {}, "any cols"});
  EXPECT_TRUE(has(course::suite_cases(any, false, false), 1, 50257));
  EXPECT_TRUE(has(course::suite_cases(any, false, false), 1, 151936));
  EXPECT_FALSE(has(course::suite_cases(any, true, false), 1, 50257));
  EXPECT_FALSE(has(course::suite_cases(variant(course::Limits{4096, {}, "cols <= 4096"}), false, false), 1, 50257));
}

TEST(SuiteCases, ThresholdsAndLimitAtEveryOffset) {
  const auto v = variant(course::Limits{2048, {1024}, "cols <= 2048"});
  for (bool quick : {false, true}) {
    const auto cs = course::suite_cases(v, quick, false);
    for (int64_t d : {-8, -1, 0, 1, 8}) EXPECT_TRUE(has(cs, 33, 1024 + d)) << "threshold + " << d;
    EXPECT_TRUE(has(cs, 3, 2047));
    EXPECT_TRUE(has(cs, 3, 2048));
    for (const course::Case& c : cs) EXPECT_LE(c.cols, 2048) << "a case past the limit: " << c.why;
  }
}

// The norms of #42 get rows of a large mean and constant rows (no special values, so that the column
// sums stay finite), and long column sums; other operations do not.
TEST(SuiteCases, NormRowsAndLongColumnSumsForTheNorms) {
  auto norm_case = [](const std::vector<course::Case>& cs) {
    return std::any_of(cs.begin(), cs.end(), [](const course::Case& c) { return c.fill.norm_rows && !c.fill.specials; });
  };
  for (course::Op op : {course::Op::layer_norm_backward, course::Op::rms_norm_backward, course::Op::rms_norm}) {
    const course::Variant v{op, "k", course::DType::f16, nullptr, {}, nullptr};
    const auto full = course::suite_cases(v, false, false), quick = course::suite_cases(v, true, false);
    EXPECT_TRUE(norm_case(full) && norm_case(quick)) << course::op_name(op);
    EXPECT_TRUE(has(full, 100003, 64)) << course::op_name(op);
    EXPECT_TRUE(has(full, 300007, 64)) << course::op_name(op);  // past 2^24 elements: streamed column sums
    EXPECT_FALSE(has(quick, 100003, 64)) << course::op_name(op);
  }
  EXPECT_FALSE(norm_case(course::suite_cases(variant(course::Limits{}), false, false)));  // softmax
}

}  // namespace

// Bad input to a norm backward: cols = 0, and a missing saved mean or rstd, each refused with a
// message naming it. (No size can disagree: every tensor's follows from rows and cols.)
// Args for `op` with every input and output of its spec at `buf` (check_op_args reads only
// whether they are null), and check_op_args's message for them ("accepted" when it accepts).
static course::Args all_slots(course::Op op, int64_t rows, int64_t cols, void* buf) {
  course::Args a;
  a.rows = rows;
  a.cols = cols;
  for (const course::InputSpec& t : course::op_spec(op).inputs) a.*(t.slot) = buf;
  for (const course::OutputSpec& t : course::op_spec(op).outputs) a.*(t.slot) = buf;
  return a;
}
static std::string check_message(const course::Args& a, course::Op op) {
  try {
    course::check_op_args(a, op);
  } catch (const course::UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(CheckOpArgs, NormBackwardRefusesBadInputByName) {
  static char buf[64];
  auto args = [](course::Op op, int64_t rows, int64_t cols) { return all_slots(op, rows, cols, buf); };
  auto message = check_message;
  using course::Op;
  EXPECT_TRUE(course::check_op_args(args(Op::layer_norm_backward, 4, 8), Op::layer_norm_backward));
  EXPECT_EQ(message(args(Op::layer_norm_backward, 4, 0), Op::layer_norm_backward), "cols must be >= 1, got 0");
  course::Args a = args(Op::layer_norm_backward, 4, 8);
  a.saved_mean = nullptr;
  EXPECT_EQ(message(a, Op::layer_norm_backward),
            "layer_norm_backward: input 'mean' is null (the forward's saved per-row statistic, fp32, rows elements)");
  a = args(Op::rms_norm_backward, 4, 8);
  a.saved_rstd = nullptr;
  EXPECT_EQ(message(a, Op::rms_norm_backward),
            "rms_norm_backward: input 'rstd' is null (the forward's saved per-row statistic, fp32, rows elements)");
  a = args(Op::layer_norm_backward, 4, 8);
  a.dbeta = nullptr;
  EXPECT_EQ(message(a, Op::layer_norm_backward), "layer_norm_backward: output 'dbeta' is null");
  a.dy = nullptr;  // inputs first
  EXPECT_EQ(message(a, Op::layer_norm_backward), "layer_norm_backward: input 'dy' is null");
}

// Cross-entropy's cases (#41): each reduction, label smoothing, z-loss, every row ignored, the
// special rows with -inf but the target; V = 262144 in the full suite only. Other ops get none.
TEST(SuiteCases, CrossEntropyScalarsAndSpecialTargets) {
  course::Variant v{course::Op::cross_entropy_fused, "k", course::DType::bf16, nullptr, course::Limits{}, nullptr};
  const auto full = course::suite_cases(v, false, false), quick = course::suite_cases(v, true, false);
  auto count = [](const std::vector<course::Case>& cs, auto pred) { return std::count_if(cs.begin(), cs.end(), pred); };
  for (const auto* cs : {&full, &quick}) {
    for (course::Reduction red : {course::Reduction::none, course::Reduction::mean, course::Reduction::sum})
      EXPECT_GE(count(*cs, [&](const course::Case& c) { return c.reduction == red; }), 1);
    EXPECT_GE(count(*cs, [](const course::Case& c) { return c.label_smoothing == 0.1f; }), 1);
    EXPECT_GE(count(*cs, [](const course::Case& c) { return c.z_loss > 0; }), 1);
    EXPECT_EQ(count(*cs, [](const course::Case& c) { return c.fill.all_ignored; }), 2);
    EXPECT_EQ(count(*cs, [](const course::Case& c) { return c.fill.ce_rows && c.fill.specials; }), 1);
  }
  EXPECT_TRUE(has(full, 4, 262144));
  EXPECT_FALSE(has(quick, 4, 262144));
  const auto softmax = course::suite_cases(variant(course::Limits{}), false, false);
  EXPECT_EQ(count(softmax, [](const course::Case& c) { return c.fill.all_ignored || c.label_smoothing != 0; }), 0);
}

// Cross-entropy's launch checks (#41): V = 0, a null target or saved lse by name, the scalars out of
// range; the forward has no Args::y and needs none.
TEST(CheckOpArgs, CrossEntropyRefusesBadInputByName) {
  static char buf[64], other[64];
  auto args = [](course::Op op, int64_t rows, int64_t cols) {
    course::Args a = all_slots(op, rows, cols, buf);
    if (op == course::Op::cross_entropy) a.lse = other;  // loss and lse may not be one buffer
    return a;
  };
  auto message = check_message;
  using course::Op;
  for (Op op : {Op::cross_entropy, Op::cross_entropy_backward, Op::cross_entropy_fused}) {
    SCOPED_TRACE(course::op_name(op));
    EXPECT_TRUE(course::check_op_args(args(op, 4, 8), op));
    EXPECT_FALSE(course::check_op_args(args(op, 0, 8), op));  // nothing to do
    EXPECT_EQ(message(args(op, 4, 0), op), "cols must be >= 1, got 0");
    course::Args a = args(op, 4, 8);
    a.target = nullptr;
    EXPECT_EQ(message(a, op), std::string(course::op_name(op)) + ": input 'target' is null");
    a = args(op, 4, 8);
    a.label_smoothing = 1.5f;
    EXPECT_EQ(message(a, op), std::string(course::op_name(op)) + ": label_smoothing must be in [0, 1], got 1.5");
    a = args(op, 4, 8);
    a.z_loss = -1.0f;
    EXPECT_EQ(message(a, op), std::string(course::op_name(op)) + ": z_loss must be finite and >= 0, got -1");
    a = args(op, 4, 8);
    a.reduction = static_cast<course::Reduction>(7);
    EXPECT_EQ(message(a, op), std::string(course::op_name(op)) + ": reduction must be none, mean or sum, got 7");
    a = args(op, 4, 8);
    a.ignore_index = int64_t(1) << 40;
    EXPECT_NE(message(a, op).find("does not fit the int32 targets"), std::string::npos);
  }
  course::Args a = args(Op::cross_entropy, 4, 8);
  EXPECT_EQ(a.y, nullptr);  // the forward writes no y
  a.lse = a.loss;
  EXPECT_EQ(message(a, Op::cross_entropy), "cross_entropy: loss and lse are one buffer (each holds rows fp32 values of its own)");
  a = args(Op::cross_entropy_backward, 4, 8);
  a.saved_lse = nullptr;
  EXPECT_EQ(message(a, Op::cross_entropy_backward),
            "cross_entropy_backward: input 'lse' is null (the forward's saved per-row statistic, fp32, rows elements)");
  a = args(Op::cross_entropy_fused, 4, 8);
  a.loss_reduced = nullptr;
  EXPECT_EQ(message(a, Op::cross_entropy_fused), "cross_entropy_fused: output 'loss_reduced' is null");
}

// --kernel selects by the variant's whole name, op/kernel/dtype, as --list prints it.
TEST(VariantSelection, KernelFilterMatchesTheWholeName) {
  const course::Variant v{course::Op::log_softmax_backward, "cluster", course::DType::f16, nullptr, {}, nullptr};
  EXPECT_EQ(v.name(), "log_softmax_backward/cluster/f16");
  EXPECT_TRUE(v.selected_by(""));
  EXPECT_TRUE(v.selected_by("cluster"));
  EXPECT_TRUE(v.selected_by("log_softmax_backward/cluster"));
  EXPECT_TRUE(v.selected_by("softmax_backward/"));  // a substring: log_softmax_backward contains it
  EXPECT_FALSE(v.selected_by("softmax/cluster"));
  EXPECT_FALSE(v.selected_by("cluster/f32"));
  // '^' anchors the filter at the start of the name.
  EXPECT_TRUE(v.selected_by("^log_softmax_backward/"));
  EXPECT_FALSE(v.selected_by("^softmax_backward/"));
  EXPECT_FALSE(v.selected_by("^cluster"));
  EXPECT_TRUE(v.selected_by("^"));
  EXPECT_FALSE(v.selected_by("^log_softmax_backward/cluster/f16/x"));  // longer than the name
  EXPECT_TRUE(course::name_selected("softmax/smem/f32/rows:3", "^softmax/smem/"));  // a check's name
}

// Commas separate alternatives (make run's shapes sweep: the dispatch variants of several chapters).
TEST(VariantSelection, CommasAreAlternatives) {
  const course::Variant v{course::Op::softmax, "production", course::DType::bf16, nullptr, {}, nullptr};
  EXPECT_TRUE(v.selected_by("/dispatch/,/production/"));
  EXPECT_TRUE(v.selected_by("/production/,/dispatch/"));
  EXPECT_TRUE(v.selected_by("x,y,^softmax/"));
  EXPECT_FALSE(v.selected_by("/dispatch/,/fused/"));
  EXPECT_FALSE(v.selected_by("^log_softmax/,/f32"));
}

// --sweep shapes: what the shapes issue asks for, and nothing the standard sweep already has.
TEST(Sweeps, ShapesSweepHasTheModelShapes) {
  std::vector<course::Sweep> s = course::shapes_sweeps();
  ASSERT_EQ(s.size(), 4u);
  auto has = [&](int64_t r, int64_t c) {
    for (const course::Sweep& sw : s)
      if (std::count(sw.rows.begin(), sw.rows.end(), r) && std::count(sw.cols.begin(), sw.cols.end(), c)) return true;
    return false;
  };
  for (int k = 5; k <= 15; ++k) {  // odd widths on both sides of every power of two from 32 to 32768
    EXPECT_TRUE(has(49152, (int64_t(1) << k) - 1)) << k;
    EXPECT_TRUE(has(49152, (int64_t(1) << k) + 1)) << k;
    EXPECT_FALSE(has(49152, int64_t(1) << k)) << k;  // the standard sweep's
  }
  for (int64_t c : {1000, 3000, 5000, 10000}) EXPECT_TRUE(has(49152, c));
  EXPECT_TRUE(std::is_sorted(s[0].cols.begin(), s[0].cols.end()));
  for (int64_t r : {1, 8, 64, 512})
    for (int64_t c : {32000, 50257, 128256, 151936, 262144}) EXPECT_TRUE(has(r, c)) << r << " x " << c;
  for (int64_t r : {128, 2048})
    for (int64_t c : {65536, 2097152}) EXPECT_TRUE(has(r, c));
  bool past_2_31 = false;  // one shape of more than 2^31 elements at an odd width
  for (const course::Sweep& sw : s)
    for (int64_t r : sw.rows)
      for (int64_t c : sw.cols) past_2_31 = past_2_31 || (r * c > (int64_t(1) << 31) && c % 2 == 1);
  EXPECT_TRUE(past_2_31);
}

// Which shapes the benchmarks (and --list) take: one shape, the quick sweep, the shapes sweep (row-wise
// chapters only), else the chapter's own.
TEST(Sweeps, SelectedByTheOptions) {
  course::Chapter rowwise("99_test", "test");
  rowwise.add_sweep(course::long_row_sweep());
  course::Options o;
  EXPECT_EQ(course::selected_sweeps(rowwise, o).size(), 2u);  // standard + long rows
  o.shapes = true;
  EXPECT_EQ(course::selected_sweeps(rowwise, o).size(), course::shapes_sweeps().size());
  o.shapes = false;
  o.quick = true;
  ASSERT_EQ(course::selected_sweeps(rowwise, o).size(), 1u);
  EXPECT_EQ(course::selected_sweeps(rowwise, o)[0].cols, course::quick_sweep().cols);
  o.quick = false;
  o.rows = 3;
  o.cols = 5;
  const auto one = course::selected_sweeps(rowwise, o);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].rows, std::vector<int64_t>{3});
  EXPECT_EQ(one[0].cols, std::vector<int64_t>{5});
  course::Chapter flat("98_test", "test");
  flat.set_sweeps({course::Sweep{{1}, {1 << 20}}});
  course::Options s;
  s.shapes = true;
  EXPECT_THROW(course::selected_sweeps(flat, s), course::UsageError);
}
