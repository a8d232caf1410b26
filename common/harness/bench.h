/// @file bench.h
/// @brief The timing method, on Google Benchmark with manual time.
///
/// For each timed launch: L2 flushed outside the timed region, one CUDA event pair around the
/// launch alone. Warm-up launches first; a fixed number of timed launches; the median reported
/// with its spread. Bandwidth is the operation's bytes model (ops.h) over the median time, and
/// the same as a percentage of a device-to-device cudaMemcpy measured once in the process.
#pragma once

#include <string>
#include <vector>

#include "harness/cli.h"
#include "harness/device.h"
#include "harness/harness.h"
#include "harness/stats.h"

namespace course {

/// The commit the numbers belong to: $COURSE_GIT_COMMIT, else git in the source tree (with
/// "-dirty" when tracked files changed), else "unknown (...)". Only a hexadecimal hash is trusted.
std::string git_commit();

/// The shapes the options ask for (the benchmarks and --list): --rows/--cols one shape, --quick
/// the quick sweep, --sweep shapes shapes_sweeps() (a UsageError for a chapter of flat sizes),
/// else the chapter's sweeps.
std::vector<Sweep> selected_sweeps(const Chapter& ch, const Options& opt);

/// Registers and runs the chapter's sweep. Returns the exit code.
int run_benchmarks(const Chapter& ch, const Options& opt, const DeviceInfo& dev, const char* argv0);

}  // namespace course
