/// @file verify.h
/// @brief The correctness suite (docs/testing.md) and single-case checks, run by Chapter::run.
#pragma once

#include <string>
#include <vector>

#include "harness/cli.h"
#include "harness/device.h"
#include "harness/harness.h"

namespace course {

/// One verification case.
struct Case {
  int64_t rows = 1, cols = 1;
  uint64_t seed = 1;
  int64_t offset = 0;  ///< elements into every buffer: a misaligned view when not 0
  FillSpec fill;       ///< seed is copied from `seed`
  std::string why;     ///< what the case is for ("dispatch threshold 1024 + 1")
  // Cross-entropy's scalars for this case (Args' fields of the same names); PyTorch's defaults.
  float label_smoothing = 0.0f;
  float z_loss = 0.0f;
  Reduction reduction = Reduction::mean;
};

/// The suite's cases for a variant (its limits decide the boundary cases). `quick`: small
/// shapes only (for the sanitizers); `large`: only the > 2^31-element cases.
std::vector<Case> suite_cases(const Variant& v, bool quick, bool large);

/// Runs the suite (or the single case of `opt`) over the chapter's variants selected by `opt`.
/// Prints one line per case and a summary; returns 0 when all passed, 1 otherwise, 77 when
/// nothing could run (every case skipped for memory).
int run_verification(const Chapter& ch, const Options& opt, const DeviceInfo& dev);

}  // namespace course
