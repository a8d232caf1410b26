/// @file softmax.cuh
/// @brief The production softmax's whole API (chapters 12-14): softmax, log-softmax and the fused
/// scale-and-mask softmax on every forward path (chapter 13's dispatch), and, new in chapter 14,
/// their backward over the same paths. Every launcher has the harness's signature, the storage
/// type a template parameter (float, __half, __nv_bfloat16), the path chosen per shape by the
/// policy (12_production_softmax/policy.h) unless one is forced. Defined by chapter 13's
/// softmax_{f32,f16,bf16}.cu (the forward) and this chapter's (the backward).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "13_hopper_softmax/softmax.cuh"
#include "harness/ops.h"

namespace ch14 {

/// [api]
namespace policy = ch12::policy;
using ch12::device;
using ch12::Path;
using ch12::path_name;
using ch12::unfused_workspace;

// The forward: chapter 13's launchers (every path).
using ch13::log_softmax;
using ch13::scale_mask_softmax;
using ch13::scale_mask_softmax_unfused;
using ch13::softmax;

/// dx (Args::y) = y * (dy - sum(dy * y)), y in Args::x. Paths: automatic, warp, tile, block_regs,
/// smem, cluster (y and dy cached across the blocks of a cluster), uncached.
template <typename T>
void softmax_backward(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// dx (Args::y) = dy - exp(y) * sum(dy), y in Args::x. Paths as softmax_backward.
template <typename T>
void log_softmax_backward(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// [api]

/// Threads per block the block-registers path takes for a row of `cols` columns stored as T, with
/// 16-byte packs, for `op` (the forward's kernel for any forward op); 0 where it holds no such row
/// or without a GPU. From the kernels' occupancy (ch12::detail::block_regs_shape).
template <typename T>
int block_regs_threads(course::Op op, int64_t cols);

}  // namespace ch14
