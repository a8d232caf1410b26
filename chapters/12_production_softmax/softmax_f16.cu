/// @file softmax_f16.cu
/// @brief Chapter 12's launchers instantiated for __half storage (one file per type: the kernels
/// compile in parallel).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "dispatch.cuh"

CH12_INSTANTIATE(__half)
