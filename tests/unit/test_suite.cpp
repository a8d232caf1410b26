// The verification suite's case list (verify.cu: suite_cases): which boundary shapes the full
// suite and the sanitizers' --quick suite check. Host code only; no GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

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

}  // namespace

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
