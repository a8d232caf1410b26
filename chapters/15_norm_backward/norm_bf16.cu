/// @file norm_bf16.cu
/// @brief Chapter 15's kernels for __nv_bfloat16 (one translation unit per type: the three build in parallel).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "launch.cuh"
#include "rms_norm.cuh"

namespace ch15 {
template void rms_norm<__nv_bfloat16>(const course::Args&, cudaStream_t);
template void norm_backward<__nv_bfloat16, true>(const course::Args&, cudaStream_t);
template void norm_backward<__nv_bfloat16, false>(const course::Args&, cudaStream_t);
}  // namespace ch15
