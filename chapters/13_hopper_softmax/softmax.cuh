/// @file softmax.cuh
/// @brief Chapter 13: the production softmax's forward on every path: chapter 12's dispatch
/// (12_production_softmax/softmax.cuh) with Hopper's two paths added, the tile path (the bulk
/// copy, paths_tile.cuh) and the cluster path (thread-block clusters and distributed shared
/// memory, paths_cluster.cuh). The same launchers and signatures as chapter 12's; the path set
/// (HopperPaths, dispatch.cuh) is the only difference. Chapter 14 adds the backward
/// (14_softmax_backward/softmax.cuh: the whole API).
#pragma once

#include "12_production_softmax/softmax.cuh"

namespace ch13 {

using ch12::device;
using ch12::Path;
using ch12::path_name;
using ch12::unfused_workspace;

/// y = softmax(x) over each row. Paths: automatic, warp, tile, block_regs, smem, uncached, cluster.
template <typename T>
void softmax(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// y = log_softmax(x) over each row. Paths as softmax.
template <typename T>
void log_softmax(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// y = softmax(mask ? -inf : x * alpha), the mask (u8) in Args::b, fused into the load. Paths:
/// automatic, warp, smem, uncached, cluster.
template <typename T>
void scale_mask_softmax(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// The same as two kernels through an fp32 workspace (unfused_workspace bytes): the comparison.
template <typename T>
void scale_mask_softmax_unfused(const course::Args& a, cudaStream_t stream);

}  // namespace ch13
