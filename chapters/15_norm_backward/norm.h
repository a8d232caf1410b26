/// @file norm.h
/// @brief Chapter 15's launchers, compiled once per type (norm_f32.cu, norm_f16.cu, norm_bf16.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "harness/ops.h"
#include "plan.h"

namespace ch15 {

template <typename T>
void rms_norm(const course::Args& a, cudaStream_t stream);
template <typename T, bool kLayer>
void norm_backward(const course::Args& a, cudaStream_t stream);

}  // namespace ch15
