/// @file bulk_copy.cuh
/// @brief Hopper's bulk copy (the one-dimensional form of the Tensor Memory Accelerator's copies,
/// PTX `cp.async.bulk`): one thread asks for a contiguous span of global memory, the TMA unit
/// writes it to shared memory, and an mbarrier counts the bytes as they land. Every thread that
/// needs the data waits on the barrier's phase. sm_90 and later only: the wrappers compile to
/// nothing below it, and a launcher must not take a path that uses them there.
///
/// Through libcu++ (cuda::ptx, CUDA 13.0's CCCL) where its wrapper emits the same PTX instruction
/// as the inline PTX it replaced: the two fences and the wait. Three stay inline PTX, because
/// cuda::ptx emits other instructions for them: mbarrier_init takes the count in a register (an
/// extra mov, and `.shared` for `.shared::cta`); mbarrier_arrive_expect_tx with `.cta` scope
/// returns the barrier's state into a register where this discards it (`_`); cp_async_bulk
/// converts the source to a global address first (an extra cvta.to.global).
#pragma once

#include <cstdint>

#include <cuda/ptx>

namespace course {

/// [bulk_copy]
/// The shared-memory address of p (a pointer into shared memory), as PTX's .shared instructions take it.
__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// Initializes the mbarrier at `bar` (8 bytes of shared memory) for kCopies bulk_loads per phase
/// (each arrives once), and makes the initialization visible to the TMA. One thread calls
/// it, then the block synchronizes.
template <unsigned kCopies = 1>
__device__ __forceinline__ void bulk_barrier_init(uint64_t* bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "n"(kCopies) : "memory");
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
#endif
}

/// Copies `bytes` (a multiple of 16, under 2^20) from global `src` to shared `dst` (both 16-byte
/// aligned) and arms `bar` to complete its current phase when they have all landed (and the
/// phase's other bulk_loads theirs). One thread makes a phase's calls. The fence orders this
/// thread's earlier accesses to shared memory (and the block's, after a barrier: a buffer reused
/// for the next phase) before the TMA's writes.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
#if __CUDA_ARCH__ >= 900
  const unsigned b = smem_address(bar);
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_address(dst)),
               "l"(src), "r"(bytes), "r"(b)
               : "memory");
#endif
}

/// Waits until the phase of `bar` with parity `parity` (0 for the first, then alternating) completes:
/// the bytes of that phase's bulk_load are in shared memory and visible to the calling thread.
__device__ __forceinline__ void bulk_wait(uint64_t* bar, unsigned parity) {
#if __CUDA_ARCH__ >= 900
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
#endif
}
/// [bulk_copy]

}  // namespace course
