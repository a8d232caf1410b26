/// @file softmax_f32.cu
/// @brief Chapter 14's launchers instantiated for float storage (one file per type: the kernels
/// compile in parallel).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "dispatch.cuh"

CH14_INSTANTIATE(float)
