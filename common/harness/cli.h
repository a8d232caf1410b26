/// @file cli.h
/// @brief The command line every chapter shares.
///
/// ```
/// chNN_name                         benchmark sweep (Google Benchmark flags pass through)
/// chNN_name --quick                 a handful of shapes
/// chNN_name --verify                the correctness suite (docs/testing.md)
/// chNN_name --verify --rows R --cols C [--dtype f32|f16|bf16] [--seed S] [--offset E] [--save DIR]
/// chNN_name --list                  variants and their limits
/// ```
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/dtype.h"

namespace course {

/// What the executable was asked to do.
enum class Mode { bench, verify, list, device_info, help };

/// Parsed command line.
struct Options {
  Mode mode = Mode::bench;
  std::optional<int64_t> rows;              ///< --rows: one case (verify) or one shape (bench)
  std::optional<int64_t> cols;              ///< --cols
  std::optional<DType> dtype;               ///< --dtype
  uint64_t seed = 1;                        ///< --seed
  int64_t offset = 0;                       ///< --offset: elements into the input and output buffers
  std::string save_dir;                     ///< --save: .npy files of the case
  std::string kernel;                       ///< --kernel: only variants whose name (op/kernel/dtype) contains this ('^': begins with it)
  bool quick = false;                       ///< --quick: a handful of shapes
  bool shapes = false;                      ///< --sweep shapes: the shapes a model brings (shapes_sweeps())
  bool large = false;                       ///< --large: the > 2^31-element cases of the suite
  std::optional<int64_t> max_cols;          ///< --max-cols: the suite reports its wider cases SKIPPED (racecheck's runs)
  bool outliers = false;                    ///< --input-fill outliers: benchmark x with the suite's outliers
  std::vector<std::string> benchmark_args;  ///< --benchmark_* flags, passed to Google Benchmark

  /// --verify with --rows/--cols: check one case rather than the suite.
  bool single_case() const { return mode == Mode::verify && rows.has_value(); }
};

/// Parses argv[1..argc). Throws UsageError naming the bad argument.
Options parse_args(int argc, const char* const* argv);

/// The usage text, for `program`.
std::string usage(const std::string& program);

/// Parses a whole string as a signed 64-bit integer; throws UsageError naming `flag`.
int64_t parse_int(const std::string& flag, const std::string& value);

}  // namespace course
