/// @file norm_f32.cu
/// @brief Chapter 15's kernels for float (one translation unit per type: the three build in parallel).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "launch.cuh"
#include "rms_norm.cuh"

namespace ch15 {
template void rms_norm<float>(const course::Args&, cudaStream_t);
template void norm_backward<float, true>(const course::Args&, cudaStream_t);
template void norm_backward<float, false>(const course::Args&, cudaStream_t);
}  // namespace ch15
