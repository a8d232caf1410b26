/// @file verify_case.h
/// @brief One case of the correctness suite (verify.h): its tensors, poisoned outputs, two launches
/// compared bit for bit, and the float64 comparison. Internal to the harness.
#pragma once

#include <cstdint>
#include <string>

#include "harness/harness.h"
#include "harness/verify.h"

namespace course {
namespace detail {

/// 0xFF bytes: NaN in f32, f16 and bf16, so an element the kernel never wrote fails.
constexpr uint8_t kNaNPoison = 0xFF;

/// A case's result, with a line of detail for the report.
struct Outcome {
  enum Kind { pass, fail, skip } kind;
  std::string detail;
};

/// Whether the variant accepts rows of `cols` (its Limits::max_cols).
inline bool fits(const Variant& v, int64_t cols) { return v.limits.max_cols == 0 || cols <= v.limits.max_cols; }

/// `op/kernel/dtype rows=R cols=C seed=S offset=E`: what replays the case.
std::string case_name(const Variant& v, const Case& c);

/// Runs one case: fill, poison NaN, launch, check guards; poison finite, launch, check the two
/// outputs are bitwise equal; compare each output with the float64 reference. `save_dir`: write
/// the case's tensors as .npy files there (empty: do not).
Outcome run_case(const Variant& v, const Case& c, cudaStream_t s, const std::string& save_dir);

/// Calls the launcher with arguments it must refuse; passes when it throws UsageError, launches
/// nothing and leaves no CUDA error behind.
Outcome expect_refusal(const Variant& v, Args a, cudaStream_t s);

}  // namespace detail
}  // namespace course
