/// @file errors.h
/// @brief Errors the course reports: bad input (a usage error, exit 2) and failed CUDA calls.
#pragma once

#include <cuda_runtime_api.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace course {

/// Bad input: a size, a flag, a shape past a kernel's limit. Reported with exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A CUDA runtime call that failed, with the call's text and where it was made.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const char* call, const char* file, int line)
      : std::runtime_error(format(code, call, file, line)), code_(code) {}
  /// The CUDA error code.
  cudaError_t code() const { return code_; }

 private:
  static std::string format(cudaError_t code, const char* call, const char* file, int line) {
    std::ostringstream s;
    s << file << ":" << line << ": " << call << " failed: " << cudaGetErrorName(code) << " ("
      << cudaGetErrorString(code) << ")";
    return s.str();
  }
  cudaError_t code_;
};

/// Throws UsageError with a message built from the arguments, when cond is false.
template <typename... Parts>
inline void require(bool cond, const Parts&... parts) {
  if (!cond) {
    std::ostringstream s;
    (s << ... << parts);
    throw UsageError(s.str());
  }
}

}  // namespace course

/// Checks a CUDA runtime call; throws course::CudaError naming the call on failure.
#define CUDA_CHECK(call)                                                 \
  do {                                                                   \
    cudaError_t course_err_ = (call);                                    \
    if (course_err_ != cudaSuccess) {                                    \
      throw ::course::CudaError(course_err_, #call, __FILE__, __LINE__); \
    }                                                                    \
  } while (0)

/// Checks the last kernel launch (bad configuration, too much shared memory, ...).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
