/// @file compare.h
/// @brief The comparison every kernel is judged by: |out - ref| <= atol + rtol * |ref|, NaN-aware.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/dtype.h"

namespace course {

/// A mixed tolerance: an element passes when |got - ref| <= atol + rtol * |ref|.
struct Tolerance {
  double atol;  ///< absolute part: matters for outputs near zero
  double rtol;  ///< relative part: about one unit in the last place of the output type
};

/// The tolerance for outputs stored as `t`, computed in fp32.
///
/// - f32: rtol 1e-5 (about 80 fp32 ulps: fp32 exp/log and sums over up to millions of terms
///   each add a few ulps), atol 1e-6 (below any value a softmax row of <= 1M columns resolves).
/// - f16: rtol 2^-10 (one fp16 ulp: half an ulp of output rounding plus the fp32 arithmetic),
///   atol 1e-5 (fp16 subnormals are spaced 6e-8; values below 1e-5 carry few bits).
/// - bf16: rtol 2^-7 (one bf16 ulp), atol 1e-5.
///
/// `magnitude` widens atol for outputs that are sums of large terms (log-softmax values are
/// x - max - log(sum), whose fp32 rounding scales with |x|): pass the largest |input|, or 1.
Tolerance tolerance_for(DType t, double magnitude = 1.0);

/// One element that failed.
struct Mismatch {
  int64_t row;  ///< -1: a column sum over every row
  int64_t col;
  double got;
  double expected;
};

/// What a comparison found.
struct CompareResult {
  int64_t checked = 0;          ///< elements compared
  int64_t failed = 0;           ///< elements outside tolerance
  double max_abs_err = 0;       ///< over the finite pairs
  double max_rel_err = 0;       ///< |got - ref| / |ref| where rtol * |ref| >= atol
  std::vector<Mismatch> first;  ///< the first few failures, in row-major order
  bool ok() const { return failed == 0 && checked > 0; }
};

/// Whether one element passes:
/// - ref NaN: got must be NaN;
/// - ref +-inf: got must be the same infinity;
/// - ref exactly 0 (a masked -inf input, ReLU of a negative): got must be exactly 0;
/// - ref finite: got must be finite and within tolerance (a NaN never passes a `<=`).
bool element_ok(double got, double ref, Tolerance tol);

/// Compares `got` with `ref` (both rows x cols, row-major); `row_ids` names the rows for the
/// report (nullptr: 0, 1, 2, ...). Keeps at most `max_report` mismatches.
CompareResult compare(const double* got, const double* ref, int64_t rows, int64_t cols, Tolerance tol,
                      const int64_t* row_ids = nullptr, int max_report = 8);

/// Merges b into a (a's first mismatches come first).
void merge(CompareResult& a, const CompareResult& b, int max_report = 8);

/// "row 3, col 17: got nan, expected 0.0123" lines, one per mismatch ("col 17 (sum over every
/// row): ..." for row -1).
std::string describe(const CompareResult& r);

}  // namespace course
