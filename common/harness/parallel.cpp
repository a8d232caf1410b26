#include "harness/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace course {

int host_threads_from(const char* env) {
  if (env && *env) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (*end || v < 1 || v > 1024)
      throw std::runtime_error(std::string("COURSE_HOST_THREADS: '") + env + "' is not a thread count (1-1024)");
    return int(v);
  }
  return std::max(1, int(std::thread::hardware_concurrency()));
}

int host_threads() {
  static const int n = host_threads_from(std::getenv("COURSE_HOST_THREADS"));
  return n;
}

std::vector<IndexRange> split_range(int64_t n, int64_t grain, int threads) {
  std::vector<IndexRange> parts;
  if (n <= 0) return parts;
  grain = std::max<int64_t>(grain, 1);
  const int64_t k = std::clamp<int64_t>(n / grain, 1, std::max(threads, 1));
  // n = q * k + rem: the first rem ranges take one index more.
  const int64_t q = n / k, rem = n % k;
  int64_t begin = 0;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t len = q + (i < rem ? 1 : 0);
    parts.push_back({begin, begin + len});
    begin += len;
  }
  return parts;
}

}  // namespace course
