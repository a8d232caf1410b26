/// @file softmax_bf16.cu
/// @brief Chapter 14's launchers instantiated for __nv_bfloat16 storage (one file per type: the kernels
/// compile in parallel).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "dispatch.cuh"

CH14_INSTANTIATE(__nv_bfloat16)
