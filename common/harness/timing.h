/// @file timing.h
/// @brief The harness's timing method (bench.cu uses it): one CUDA event pair around each launch,
/// L2 flushed before it, warm-up launches first; and the arena every benchmark's tensors come from.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/device.h"
#include "harness/errors.h"

namespace course {
namespace timing {

constexpr int kWarmup = 10;  // at least, each as timed: L2 flush, then the launch
// ... and for at least this long, so that the GPU has left any idle state before the first timed
// launch (docs/harness.md: "Warm-up"). COURSE_WARMUP_MS overrides it (0: the count alone).
constexpr double kWarmupMs = 50;

inline double warmup_seconds() {
  static const double s = [] {
    const char* e = std::getenv("COURSE_WARMUP_MS");
    char* end = nullptr;
    const double ms = e && *e ? std::strtod(e, &end) : kWarmupMs;
    require(!(e && *e) || (end && *end == '\0' && ms >= 0 && ms <= 60000),
            "COURSE_WARMUP_MS must be a number of milliseconds in [0, 60000], got '", e ? e : "", "'");
    return ms * 1e-3;
  }();
  return s;
}

inline std::string warmup_text() {
  char buf[96];
  std::snprintf(buf, sizeof buf, "at least %d warm-up launches (flushed) and %g ms of them", kWarmup,
                warmup_seconds() * 1e3);
  return buf;
}

// One CUDA event pair, reused for every launch of a benchmark.
class EventPair {
 public:
  EventPair() {
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventPair() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  // The course's timing of one launch: flush L2 (untimed), then events around the launch alone.
  template <typename F>
  double time(F&& launch, L2Flusher& l2, cudaStream_t s) {
    l2.flush(s);
    CUDA_CHECK(cudaEventRecord(start_, s));
    launch();
    CUDA_CHECK(cudaEventRecord(stop_, s));
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

  // Untimed launches, exactly as the timed ones: at least kWarmup of them, and for at least
  // warmup_seconds() of wall time.
  template <typename F>
  void warm_up(F&& launch, L2Flusher& l2, cudaStream_t s) {
    warm_up(launch, [] {}, l2, s);
  }

  // The same for two launches timed in turn (a kernel and its copy of the same bytes): each at
  // least kWarmup times, alternately, for at least warmup_seconds() in all.
  template <typename F, typename G>
  void warm_up(F&& first, G&& second, L2Flusher& l2, cudaStream_t s) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    for (int i = 0; i < kWarmup || std::chrono::duration<double>(clock::now() - t0).count() < warmup_seconds(); ++i) {
      time(first, l2, s);
      time(second, l2, s);
    }
  }

 private:
  cudaEvent_t start_, stop_;
};

// Where every benchmark's tensors live: one device allocation, made once before the first
// benchmark and sized for the largest, from which each benchmark takes its tensors anew (each at a
// 2 MB boundary, as cudaMalloc places large buffers), the way a framework's caching allocator
// reuses its memory. A cudaMalloc per benchmark made the time of a few-microsecond kernel depend on
// its place in the sweep: the first benchmark of a process read 3-4% more than the same benchmark
// repeated after it, on buffers freed and allocated again (docs/harness.md, "Where the tensors
// live").
class Arena {
 public:
  static constexpr size_t kAlign = size_t(2) << 20;
  static size_t rounded(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
  // At least `bytes`; a larger request than the reservation reallocates (not expected: run_benchmarks
  // reserves for the largest benchmark it registers).
  void reserve(size_t bytes) {
    if (bytes > buf_.bytes()) buf_ = DeviceBuffer(bytes);
  }
  void reset() { used_ = 0; }
  void* take(size_t bytes) {
    if (bytes == 0) return nullptr;
    require(used_ + rounded(bytes) <= buf_.bytes(), "benchmark arena: ", rounded(bytes), " bytes past its ",
            buf_.bytes(), " (", used_, " taken)");
    void* p = static_cast<char*>(buf_.get()) + used_;
    used_ += rounded(bytes);
    return p;
  }

 private:
  DeviceBuffer buf_;
  size_t used_ = 0;
};

}  // namespace timing
}  // namespace course
