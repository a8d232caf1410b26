/// @file softmax.cuh
/// @brief Chapter 12: the production softmax. One launcher per operation, the storage type a
/// template parameter (float, __half, __nv_bfloat16; fp32 arithmetic), the path chosen per shape
/// from the device's properties (dispatch.cuh). Every launcher has the harness's signature: it
/// validates its arguments (UsageError on bad ones) and launches on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "harness/dtype.h"
#include "harness/ops.h"

namespace ch12 {

/// The six ways a row is processed (paths_*.cuh). `automatic` lets the dispatch choose.
enum class Path { automatic, warp, block_regs, smem, uncached, cluster, tile };

/// "warp", "block_regs", "smem", "uncached", "cluster", "tile" or "automatic".
const char* path_name(Path p);

/// y = softmax(x) over each row.
template <typename T>
void softmax(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// y = log_softmax(x) over each row.
template <typename T>
void log_softmax(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// dx (Args::y) = y * (dy - sum(dy * y)), y in Args::x. Paths: automatic, warp, block_regs, smem,
/// cluster (y and dy cached across the blocks of a cluster), uncached.
template <typename T>
void softmax_backward(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// dx (Args::y) = dy - exp(y) * sum(dy), y in Args::x. Paths as softmax_backward.
template <typename T>
void log_softmax_backward(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// y = softmax(mask ? -inf : x * alpha), the mask (u8) in Args::b: scale and mask fused into
/// the softmax's load.
template <typename T>
void scale_mask_softmax(const course::Args& a, cudaStream_t stream, Path path = Path::automatic);
/// The same as two kernels: scale-and-mask writes fp32 logits to the workspace, then the
/// softmax reads them. The comparison the lesson measures.
template <typename T>
void scale_mask_softmax_unfused(const course::Args& a, cudaStream_t stream);
/// Workspace bytes of scale_mask_softmax_unfused: rows x cols fp32 logits.
size_t unfused_workspace(int64_t rows, int64_t cols, course::DType t);

/// Softmax on the warp path with at least kMinPacks packs per lane for short rows (narrower
/// groups): the lesson's comparison of group shapes.
template <typename T, int kMinPacks>
void softmax_warp_min_packs(const course::Args& a, cudaStream_t stream);

/// Columns each lane of the warp path holds: 32 for fp32 (rows of 1024), 96 for f16/bf16 (rows
/// of 3072). Past 32 per lane a 16-bit row is held in its storage type (RowRegs in paths_warp.cuh),
/// so a lane's 96 columns cost the registers of 48 floats; the lesson measures the warp path
/// against the shared-memory path on 16-bit rows of 1024-3072 columns.
template <typename T>
constexpr int kWarpColsPerLane = sizeof(T) == 2 ? 96 : 32;

/// Largest cols of the warp path (forward and backward) for storage type T: 32 lanes x
/// kWarpColsPerLane<T> (1024 for fp32, 3072 for f16 and bf16).
template <typename T>
constexpr int64_t kWarpMaxCols = 32 * kWarpColsPerLane<T>;

/// The backward takes the block-registers path (with rows enough) from rows whose y and dy hold
/// this many bytes together: fp32 rows of 512 columns, 16-bit rows of 1024 (paths_block_regs.cuh,
/// block_regs_rule).
constexpr int64_t kBlockRegsBackwardMinBytes = 4 * 1024;

/// The forward takes the block-registers path (with rows enough) for rows of more than
/// kBlockRegsForwardMinBytes and under kBlockRegsForwardEndBytes of x: fp32 rows of 1025-4095
/// columns, 16-bit rows of 2049-8191 (paths_block_regs.cuh, block_regs_rule).
constexpr int64_t kBlockRegsForwardMinBytes = 4 * 1024;
constexpr int64_t kBlockRegsForwardEndBytes = 16 * 1024;

/// The forward's tile path (paths_tile.cuh, softmax_tile_kernel) takes rows of more than
/// kTileMinRowBytes and at most kTileMaxRowBytes where the warp path would, with 16-byte packs, on
/// GPUs with the bulk copy (sm_90 and later): fp32 rows of 17-64 columns, 16-bit rows of 33-128
/// (paths_tile.cuh, tile_rule). Forced, the path takes any row up to kTileMaxRowBytes.
constexpr int64_t kTileMinRowBytes = 64;
constexpr int64_t kTileMaxRowBytes = 256;

/// The backward takes the tile path (paths_tile.cuh's tile layout, backward.cuh,
/// softmax_backward_tile_kernel) for packed rows of more than kBackwardTileMinCols and at most
/// kBackwardTileEndCols columns where its warp path would, on GPUs with the bulk copy, in every
/// dtype (paths_tile.cuh, backward_tile_rule). Forced, its tile path takes any row up to
/// kBackwardTileMaxRowBytes.
constexpr int64_t kBackwardTileMinCols = 16;
constexpr int64_t kBackwardTileEndCols = 128;
constexpr int64_t kBackwardTileMaxRowBytes = 512;

/// Largest cols of the tile path for storage type T: the forward's, the backward's.
template <typename T>
constexpr int64_t kTileMaxCols = kTileMaxRowBytes / int64_t(sizeof(T));
template <typename T>
constexpr int64_t kBackwardTileMaxCols = kBackwardTileMaxRowBytes / int64_t(sizeof(T));

/// True when this GPU and this build can take the tile path (the bulk copy: sm_90 and later).
bool tile_path_available();

/// Largest cols of the shared-memory path on this GPU for `op` stored as T (0 without a GPU):
/// the row (the backward: y) in the device's opt-in shared memory per block.
template <typename T>
int64_t smem_max_cols(course::Op op);

/// Largest cols at which the backward's shared-memory path caches dy beside y.
template <typename T>
int64_t backward_both_cached_max_cols();

/// Largest cols of the backward's cluster path (0 without a GPU): 16 blocks, each caching its
/// chunk of y and dy.
template <typename T>
int64_t backward_cluster_max_cols();

/// Rows from which the warp path gives each group of lanes two rows of `cols` columns stored as T
/// (the forward's group shape, or the backward's): the half-wave line of paths_warp.cuh. 0 where a
/// group takes one row at any number of rows, or without a GPU.
template <typename T>
int64_t warp_two_rows_min(int64_t cols, bool backward);

/// Fewer rows than this take the several-blocks-per-row (cluster) path for rows too long for
/// shared memory, when the GPU has clusters: half the SM count, where one block per row would
/// leave most SMs idle (0 without clusters).
int64_t cluster_rows_below();

/// True when this GPU and this build can launch thread-block clusters (sm_90 and later).
bool cluster_path_available();

/// Threads per block the block-registers path takes for a row of `cols` columns stored as T, with
/// 16-byte packs, for `op` (the forward's kernel for any forward op); 0 where it holds no such row
/// or without a GPU. The dispatch's choice from the kernels' occupancy (paths_block_regs.cuh).
template <typename T>
int block_regs_threads(course::Op op, int64_t cols);

/// The path the automatic dispatch takes for a forward op (softmax, log_softmax,
/// scale_mask_softmax) or a backward op on rows x cols stored as T.
template <typename T>
Path chosen_path(course::Op op, int64_t rows, int64_t cols);

}  // namespace ch12
