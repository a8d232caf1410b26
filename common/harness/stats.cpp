#include <algorithm>

#include "harness/stats.h"

namespace course {

TimingStats summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))]; };
  TimingStats t;
  t.min = v.front();
  t.max = v.back();
  t.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  t.p10 = rank(0.10);
  t.p90 = rank(0.90);
  return t;
}

}  // namespace course
