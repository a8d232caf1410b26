/// @file column_sum.cuh
/// @brief Chapter 15: the second stage of the column sums. The backward's blocks leave one fp32
/// partial row each (norm_backward.cuh); here every column's partials are added in one fixed
/// order, so dgamma and dbeta come out the same bits on every run (atomicAdd would add them in the
/// order the blocks happen to finish). Launched as the backward's programmatic dependent
/// (sm_90 on): it is on the GPU, waiting, when the backward's last blocks finish.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "harness/device.h"
#include "harness/errors.h"

namespace ch15 {

/// [column_sum]
/// A block takes 32 adjacent columns of the partial rows (kAccs x cols wide); warp w adds rows w,
/// w + kWarps, ... of them (coalesced: a warp reads 128 contiguous bytes per row), then warp 0 adds
/// the warps' sums in warp order. Column c < cols goes to out0, the next cols to out1.
constexpr int kColumnSumWarps = 32;  // H200: 16 read 1-4% less at 768-1024 columns, 4096 rows (TUNING.md)
template <int kWarps>
__global__ void __launch_bounds__(32 * kWarps)
    column_sum_kernel(const float* __restrict__ partials, int64_t parts, int64_t width, int64_t cols,
                      float* __restrict__ out0, float* __restrict__ out1) {
  __shared__ float sums[kWarps][32];
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const int64_t c = int64_t(blockIdx.x) * 32 + lane;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();  // the backward's blocks are done and their partial rows visible
#endif
  float s = 0.0f;
  if (c < width)
#pragma unroll 8
    for (int64_t r = w; r < parts; r += kWarps) s += partials[r * width + c];
  sums[w][lane] = s;
  __syncthreads();
  if (w != 0 || c >= width) return;
  for (int i = 1; i < kWarps; ++i) s += sums[i][lane];
  if (c < cols)
    out0[c] = s;
  else
    out1[c - cols] = s;
}
/// [column_sum]

/// [dependent_launch]
/// The launch: a programmatic dependent of the kernel before it in the stream (sm_90 on). It may
/// launch once every block of the backward has called cudaTriggerProgrammaticLaunchCompletion,
/// which they do as they start (the backward is one wave: soon after it starts); its blocks take
/// SMs as the backward's leave them, and the kernel boundary's gap is hidden. Correctness does
/// not depend on where the trigger is: cudaGridDependencySynchronize above waits for the whole
/// backward to finish, its writes visible. Below sm_90 a plain launch (the attribute is only set
/// where the device code has the wait).
inline void launch_column_sum(const float* partials, int64_t parts, int64_t cols, int accs, float* out0, float* out1,
                              cudaStream_t stream) {
  const int64_t width = accs * cols;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned((width + 31) / 32));
  cfg.blockDim = dim3(32 * kColumnSumWarps);
  cfg.stream = stream;
  cudaLaunchAttribute dependent{};
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &dependent;
  cfg.numAttrs = course::device_code_version() >= 90 ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, column_sum_kernel<kColumnSumWarps>, partials, parts, width, cols, out0, out1));
}
/// [dependent_launch]

}  // namespace ch15
