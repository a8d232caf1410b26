/// Taught in chapter 03 (warp-shuffle softmax).
/// @file warp.cuh
/// @brief All-reduce within a group of lanes with `__shfl_xor_sync` (chapter 03 explains it).
///
/// A group is `kWidth` consecutive lanes of a warp (kWidth a power of two, 1 to 32). After the
/// butterfly below every lane of the group holds the group's result: no shared memory, no
/// `__syncthreads`, log2(kWidth) shuffle steps.
#pragma once

namespace course {

/// [group_mask]
/// The lanes of the calling thread's group of kWidth lanes, as a `__shfl_*_sync` mask: kWidth one
/// bits, shifted to the group's first lane (lane rounded down to a multiple of kWidth).
template <int kWidth>
__device__ __forceinline__ unsigned group_mask() {
  static_assert(kWidth >= 1 && kWidth <= 32 && (kWidth & (kWidth - 1)) == 0, "kWidth: a power of two <= 32");
  if constexpr (kWidth == 32) {
    return 0xffffffffu;
  } else {
    const unsigned lane = threadIdx.x % 32;
    return ((1u << kWidth) - 1) << (lane & ~unsigned(kWidth - 1));
  }
}
/// [group_mask]

/// Reduction of v over the group with any associative op, returned to every lane of it.
template <int kWidth, typename Op>
__device__ __forceinline__ float group_reduce(float v, unsigned mask, Op op) {
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(mask, v, offset, kWidth));
  return v;
}

/// max(a, b) that returns NaN when either is NaN (fmaxf returns the other one): for reductions
/// whose result must carry a NaN, as torch.amax does. Chapter 10 uses it.
struct NanMax {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return (a != a || b != b) ? __int_as_float(0x7fffffff) : fmaxf(a, b);
  }
};

/// [group_allreduce]
/// Maximum over the group, returned to every lane of it. NaN inputs are ignored by fmaxf; the
/// softmax kernels rely on the sum (which a NaN poisons) to produce PyTorch's NaN rows.
template <int kWidth>
__device__ __forceinline__ float group_max(float v, unsigned mask) {
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(mask, v, offset, kWidth));
  return v;
}

/// Sum over the group, returned to every lane of it.
template <int kWidth>
__device__ __forceinline__ float group_sum(float v, unsigned mask) {
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(mask, v, offset, kWidth);
  return v;
}
/// [group_allreduce]

}  // namespace course
