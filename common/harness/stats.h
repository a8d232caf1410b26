/// @file stats.h
/// @brief Summary statistics of per-launch times.
#pragma once

#include <vector>

namespace course {

/// Summary of per-launch times (seconds).
struct TimingStats {
  double median = 0, min = 0, max = 0, p10 = 0, p90 = 0;
};

/// Median, extremes and 10th/90th percentiles (nearest-rank) of `samples` (not empty).
TimingStats summarize(std::vector<double> samples);

}  // namespace course
