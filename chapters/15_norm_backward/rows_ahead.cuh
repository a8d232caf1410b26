/// @file rows_ahead.cuh
/// @brief Chapter 15: a group's next rows in flight while it works on this one. A thread of the
/// backward holds one to four packs of each of x and dy: the row it works on. Its loads for the
/// next row cannot be issued before the registers are free, so between rows (the group's sums,
/// the write of dx) an SM has few bytes in flight. Here each thread copies its own packs of x and
/// dy for the trips ahead straight into shared memory with `cp.async` (sm_80 on): no register
/// holds them while they travel, and the thread that copied a pack is the one that reads it back,
/// so no barrier is needed, only the thread's own wait for its copies.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ch15 {

/// [rows_ahead]
/// Copies 16 bytes from global memory at `from` into shared memory at `to`, asynchronously
/// (`cp.async.cg`: through L2 only, no register, no L1 line); below sm_80, a plain load and store.
/// `from` is a generic pointer, which on these GPUs is the global address the instruction takes.
__device__ __forceinline__ void copy_async16(void* to, const void* from) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(to));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(at), "l"(from) : "memory");
#else
  *static_cast<uint4*>(to) = *static_cast<const uint4*>(from);
#endif
}
/// Closes the thread's copies issued since the last commit into one group (one trip's).
__device__ __forceinline__ void copy_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
/// Waits until at most kPending of the thread's groups are still in flight: the older ones have
/// landed and the thread can read them.
template <int kPending>
__device__ __forceinline__ void copy_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
#endif
}

/// A block's staging area: kStages trips of kRows rows x kHeld packs of x and dy a thread, each
/// 16-byte pack at [stage][row][pack][tensor][thread], so that a warp's 32 packs are 512
/// consecutive bytes (no bank conflict). Trip t lands in stage t % kStages.
template <int kStages, int kRows, int kHeld, int kBlock>
struct Staging {
  static constexpr size_t kBytes = size_t(kStages) * kRows * kHeld * 2 * kBlock * 16;
  uint4* base;
  __device__ uint4* at(int64_t trip, int r, int i, int tensor) const {
    return base + ((((trip % kStages) * kRows + r) * kHeld + i) * 2 + tensor) * kBlock + threadIdx.x;
  }
};
/// [rows_ahead]

}  // namespace ch15
