// What the GPU suite tests (norm_suite.cu, cross_entropy_suite.cu) share: the device probe (SKIPPED,
// exit 77, without a GPU), one stream, and `expect`, which runs a case through run_case as a
// chapter's --verify would and checks its outcome, printing one line per case.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/device.h"
#include "harness/errors.h"
#include "harness/verify_case.h"

namespace course_test {

class SuiteOutcomes {
 public:
  /// Exits 77 (SKIPPED) when there is no usable GPU.
  SuiteOutcomes() {
    course::DeviceInfo dev;
    std::string why;
    if (!course::probe_device(&dev, &why)) {
      std::printf("SKIPPED: needs a CUDA GPU and found none (%s)\n", why.c_str());
      std::exit(77);
    }
    CUDA_CHECK(cudaStreamCreate(&stream_));
  }
  ~SuiteOutcomes() { cudaStreamDestroy(stream_); }

  /// Runs one case; its outcome must be `want`, and a failure's detail must name `output`.
  void expect(const course::Variant& v, const course::Case& c, course::detail::Outcome::Kind want,
              const std::string& output = "") {
    const course::detail::Outcome o = course::detail::run_case(v, c, stream_, "");
    const bool ok = o.kind == want && o.detail.find(output) != std::string::npos;
    std::printf("%s %s - %s: %s\n", ok ? "[  OK  ]" : "[ FAIL ]", course::detail::case_name(v, c).c_str(),
                c.why.c_str(), o.detail.c_str());
    wrong_ += !ok;
  }

  /// The exit code: 0 when every outcome was the expected one, else 1.
  int finish() const {
    std::printf("%s\n", wrong_ ? "some outcomes were not the expected ones" : "every outcome as expected");
    return wrong_ ? 1 : 0;
  }

 private:
  cudaStream_t stream_ = nullptr;
  int wrong_ = 0;
};

}  // namespace course_test
