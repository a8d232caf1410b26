/// @file softmax.cuh
/// @brief Chapter 12: the production softmax's forward over the paths chapters 03-08 built (warp,
/// block in registers, shared memory, uncached). One launcher per operation, the storage type a
/// template parameter (float, __half, __nv_bfloat16; fp32 arithmetic), the path chosen per shape by
/// the policy (policy.h) from the device's properties. Every launcher has the harness's signature:
/// it validates its arguments (UsageError on bad ones) and launches on `stream`. Chapter 13 adds
/// the tile and cluster paths to this dispatch (13_hopper_softmax/softmax.cuh), chapter 14 the
/// backward; 14_softmax_backward/softmax.cuh is the whole API.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "blocks/occupancy.cuh"
#include "harness/device.h"
#include "harness/dtype.h"
#include "harness/ops.h"
#include "policy.h"

namespace ch12 {

/// [device]
/// The GPU as the policy sees it, read once (policy::Device{} without a GPU).
inline const policy::Device& device() {
  static const policy::Device d = [] {
    policy::Device v;
    v.smem_optin = course::smem_per_block_optin();
    if (v.smem_optin == 0) return v;  // no usable GPU
    v.sm_count = course::sm_count();
    v.threads_per_sm = course::threads_per_sm();
    v.dram_gbps = course::dram_peak_gbps();
    int dev = 0, cluster = 0;
    // The cluster kernels are empty below sm_90: clusters need the device and this build's code.
    if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&cluster, cudaDevAttrClusterLaunch, dev) == cudaSuccess)
      v.clusters = cluster != 0 && course::device_code_version() >= 90;
    v.bulk_copy = course::bulk_copy_available();
    cudaGetLastError();
    return v;
  }();
  return d;
}
/// [device]

/// y = softmax(x) over each row. Paths: automatic, warp, block_regs, smem, uncached.
template <typename T>
void softmax(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// y = log_softmax(x) over each row. Paths as softmax.
template <typename T>
void log_softmax(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// y = softmax(mask ? -inf : x * alpha), the mask (u8) in Args::b: scale and mask fused into
/// the softmax's load.
template <typename T>
void scale_mask_softmax(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// The same as two kernels: scale-and-mask writes fp32 logits to the workspace, then the
/// softmax reads them. The comparison the lesson measures.
template <typename T>
void scale_mask_softmax_unfused(const course::Args& a, cudaStream_t stream);
/// Workspace bytes of scale_mask_softmax_unfused: rows x cols fp32 logits.
inline size_t unfused_workspace(int64_t rows, int64_t cols, course::DType) {
  return size_t(rows * cols) * sizeof(float);
}

/// Softmax on the warp path with at least kMinPacks packs per lane for short rows (narrower
/// groups): the lesson's comparison of group shapes.
template <typename T, int kMinPacks>
void softmax_warp_min_packs(const course::Args& a, cudaStream_t stream);

/// Columns each lane of the warp path holds for storage type T: 32 for fp32 (rows of 1024), 96 for
/// f16/bf16 (rows of 3072; past 32 per lane held in the storage type: RowRegs in paths_warp.cuh).
template <typename T>
constexpr int kWarpColsPerLane = policy::warp_cols_per_lane(int(sizeof(T)));

/// Largest cols of the warp path (forward and backward) for storage type T.
template <typename T>
constexpr int64_t kWarpMaxCols = policy::warp_max_cols(int(sizeof(T)));

}  // namespace ch12
