// The comparison catches what a weak check lets through: NaN, unwritten outputs, near misses.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "harness/compare.h"

using course::compare;
using course::element_ok;
using course::Tolerance;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const Tolerance tol{1e-6, 1e-5};
}  // namespace

TEST(Compare, NaNOutputNeverPassesAgainstAFiniteReference) {
  EXPECT_FALSE(element_ok(kNaN, 0.5, tol));
  EXPECT_FALSE(element_ok(kNaN, 0.5, Tolerance{1e30, 1e30}));  // however loose
}

TEST(Compare, NaNReferenceNeedsNaN) {
  EXPECT_TRUE(element_ok(kNaN, kNaN, tol));
  EXPECT_FALSE(element_ok(0.5, kNaN, tol));
}

TEST(Compare, InfinitiesMustMatch) {
  EXPECT_TRUE(element_ok(-kInf, -kInf, tol));
  EXPECT_FALSE(element_ok(kInf, -kInf, tol));
  EXPECT_FALSE(element_ok(1e38, kInf, tol));
  EXPECT_FALSE(element_ok(kInf, 1.0, tol));
}

TEST(Compare, ExactZeroMustBeZero) {
  EXPECT_TRUE(element_ok(0.0, 0.0, tol));
  EXPECT_TRUE(element_ok(-0.0, 0.0, tol));
  EXPECT_FALSE(element_ok(1e-9, 0.0, tol));  // a masked position must give exactly 0
}

TEST(Compare, MixedToleranceBoundary) {
  // |got - ref| <= atol + rtol * |ref|: for ref = 1, the bound is 1.1e-5
  EXPECT_TRUE(element_ok(1.0 + 1.09e-5, 1.0, tol));
  EXPECT_FALSE(element_ok(1.0 + 1.11e-5, 1.0, tol));
  EXPECT_TRUE(element_ok(1e-7 + 9e-7, 1e-7, tol));  // near zero atol dominates
}

TEST(Compare, UnwrittenPoisonedOutputFails) {
  // An output poisoned with NaN bytes and never written by the kernel.
  std::vector<double> ref{0.1, 0.2, 0.3, 0.4}, got{0.1, 0.2, kNaN, 0.4};
  auto r = compare(got.data(), ref.data(), 2, 2, tol);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.failed, 1);
  ASSERT_EQ(r.first.size(), 1u);
  EXPECT_EQ(r.first[0].row, 1);
  EXPECT_EQ(r.first[0].col, 0);
}

TEST(Compare, ReportsRowIdsAndFirstMismatches) {
  std::vector<double> ref(10, 1.0), got(10, 2.0);
  int64_t ids[] = {7, 4000000000LL};
  auto r = compare(got.data(), ref.data(), 2, 5, tol, ids, 3);
  EXPECT_EQ(r.failed, 10);
  EXPECT_EQ(r.first.size(), 3u);
  EXPECT_EQ(r.first[0].row, 7);
  std::string d = course::describe(r);
  EXPECT_NE(d.find("row 7, col 0: got 2, expected 1"), std::string::npos) << d;
  EXPECT_NE(d.find("7 more"), std::string::npos) << d;
  auto r2 = compare(got.data() + 5, ref.data(), 1, 5, tol, ids + 1);
  EXPECT_EQ(r2.first[0].row, 4000000000LL);
}

TEST(Compare, NothingComparedIsNotAPass) {
  course::CompareResult r;
  EXPECT_FALSE(r.ok());
}

TEST(Compare, TolerancesPerDtype) {
  EXPECT_EQ(course::tolerance_for(course::DType::f16).rtol, std::ldexp(1.0, -10));
  EXPECT_EQ(course::tolerance_for(course::DType::bf16).rtol, std::ldexp(1.0, -7));
  EXPECT_LT(course::tolerance_for(course::DType::f32).rtol, 1e-4);
  // One fp16 ulp off at 1.0 passes, two do not.
  const Tolerance h = course::tolerance_for(course::DType::f16);
  EXPECT_TRUE(element_ok(1.0 + std::ldexp(1.0, -10), 1.0, h));
  EXPECT_FALSE(element_ok(1.0 + std::ldexp(1.0, -9), 1.0, h));
}
