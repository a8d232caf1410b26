/// @file parallel.h
/// @brief Host threads for the verification's float64 work: an index range cut into contiguous
/// chunks, one thread each.
///
/// The suite's cost is on the host: widening each output to double, the float64 reference and
/// the comparison, about a hundred nanoseconds per element on one core, and chapter 12's full
/// suite checks 2.3 billion elements. Every step is independent per row (row-wise operations)
/// or per element (elementwise ones), so it splits into contiguous chunks with no change to
/// what is computed; results that are merged (the comparison's first mismatches) are merged in
/// chunk order, so the report is the one a single thread gives.
#pragma once

#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace course {

/// Threads the host work may use: `env` (COURSE_HOST_THREADS) when set and non-empty, a whole
/// number from 1 to 1024; otherwise the hardware's count (at least 1). Anything else throws
/// std::runtime_error naming the variable.
int host_threads_from(const char* env);

/// host_threads_from(std::getenv("COURSE_HOST_THREADS")), read once.
int host_threads();

/// The least work worth a thread of its own: 2^15 elements of float64 work, a few milliseconds,
/// against the tens of microseconds a thread takes to start.
constexpr int64_t kHostGrain = int64_t(1) << 15;

/// A half-open range of indices [begin, end).
struct IndexRange {
  int64_t begin;
  int64_t end;
};

/// [0, n) as at most `threads` contiguous, non-empty ranges in order, each at least `grain`
/// indices long (one range when n <= grain); empty when n <= 0.
std::vector<IndexRange> split_range(int64_t n, int64_t grain, int threads);

/// Calls f(k, range) for each range k of split_range(n, grain, threads), the first on the calling
/// thread and the others on threads of their own, and returns when every call has. If calls
/// throw, the exception of the lowest k is rethrown after all have finished.
template <typename F>
void parallel_ranges(int64_t n, int64_t grain, F&& f, int threads = host_threads()) {
  const std::vector<IndexRange> parts = split_range(n, grain, threads);
  std::vector<std::exception_ptr> errors(parts.size());
  auto call = [&](size_t k) {
    try {
      f(k, parts[k]);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (size_t k = 1; k < parts.size(); ++k) pool.emplace_back(call, k);
  if (!parts.empty()) call(0);
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// f(i) for every i in [0, n), on the host threads: each i independent of the others.
template <typename F>
void parallel_for(int64_t n, F&& f) {
  parallel_ranges(n, kHostGrain, [&](size_t, IndexRange r) {
    for (int64_t i = r.begin; i < r.end; ++i) f(i);
  });
}

}  // namespace course
