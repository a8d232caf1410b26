/// @file dispatch.cuh
/// @brief Chapter 12's dispatch: argument checks, the path for each shape (each path's kernel and
/// launch configuration: paths_*.cuh; the backward's launchers: backward_launch.cuh) and the
/// public launchers, all from properties read from the device at run time.
/// Included by one .cu file per storage type (softmax_f32.cu, ...), which instantiate it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "paths_common.cuh"
#include "paths_warp.cuh"
#include "paths_tile.cuh"
#include "paths_smem.cuh"
#include "paths_uncached.cuh"
#include "paths_cluster.cuh"
#include "paths_block_regs.cuh"
#include "backward.cuh"
#include "backward_launch.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"
#include "blocks/occupancy.cuh"
#include "blocks/warp_dispatch.cuh"
#include "softmax_functors.cuh"
#include "softmax.cuh"

namespace ch12 {
namespace detail {

/// [dispatch]
/// The forward dispatch. Each rule is a property of the row and of the device:
///  1. rows of more than 4 KB and under 16 KB, with rows enough for 32 warps per SM
///     (course::long_warp_rows_min, occupancy.cuh): block_regs (the row in a block's registers;
///     block_regs_forward_fits, the plain softmax and log-softmax only).
///  2. the row fits in registers (kWarpMaxCols: 32 lanes x 32 columns for fp32, x 96 for 16-bit):
///     warp; past 1024 columns only with those rows. Of these, rows of 65-256 bytes with
///     16-byte packs on a GPU with the bulk copy: tile (`tile`: tile_fits, the plain softmax and
///     log-softmax only), the same groups with the block's rows brought in at once.
///  3. the row fits in the device's shared memory per block (as Load::Cache): smem, read once.
///  4. rows < SMs / 2, clusters available: a block per row would leave most SMs idle: cluster,
///     each block's chunk in shared memory when the cluster's memory holds the row.
///  5. otherwise: uncached, a block per row reading its row twice (the second time mostly from L2).
/// (Measured on the H100: with 128 rows, one block per row beat every cluster shape wherever the
/// row fits in shared memory, and matched or beat them past it; see the lesson.)
template <typename Load>
Path forward_path(int64_t rows, int64_t cols, int64_t warp_max_cols, bool block_regs = false, bool tile = false) {
  if (block_regs && rows >= course::long_warp_rows_min()) return Path::block_regs;
  if (cols <= warp_max_cols && (cols <= 32 * 32 || rows >= course::long_warp_rows_min()))
    return tile && device_limits().bulk_copy ? Path::tile : Path::warp;
  if (cols <= cols_in_smem<typename Load::Cache>(1)) return Path::smem;
  if (device_limits().clusters && rows < cluster_rows_below()) return Path::cluster;
  return Path::uncached;
}
/// [dispatch]

/// The forward on `path` (or the dispatch's choice), with packs of kMax or 1 elements and up to
/// kColsPerLane columns per lane on the warp path. kBlockRegs: the block-registers path is
/// compiled for this Load and Store (the plain softmax), and the dispatch may take it where
/// block_regs_forward_fits; a row read one element at a time keeps the path it had without it.
template <int kMax, int kColsPerLane, bool kBlockRegs, typename Load, typename Store>
void forward(Path path, int pack, const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
             cudaStream_t stream) {
  if (path == Path::automatic) {
    const bool block_regs = kBlockRegs && pack == kMax && block_regs_forward_fits<typename Load::Cache>(cols);
    const bool tile = IsDirectLoad<Load>::value && pack == kMax && tile_fits<typename Load::Cache>(cols);
    path = forward_path<Load>(rows, cols, 32 * kColsPerLane, block_regs, tile);
  }
  with_pack<kMax>(pack, [&](auto p) {
    constexpr int kPack = decltype(p)::value;
    switch (path) {
      case Path::block_regs:
        if constexpr (kBlockRegs) return launch_block_regs<kPack>(load, store, rows, cols, log, stream);
        throw course::UsageError("the block-registers path serves the plain softmax and log-softmax only");
      case Path::warp:
      case Path::tile:  // with one-element packs (a misaligned or odd row) the lanes load: warp
        return launch_warp_path<kPack, kColsPerLane>(path == Path::tile, load, store, rows, cols, log, stream);
      case Path::cluster:
        return launch_cluster<kPack>(load, store, rows, cols, log, stream);
      case Path::smem:
        return launch_smem<kPack>(load, store, rows, cols, log, stream);
      default:
        return launch_uncached<kPack>(load, store, rows, cols, log, stream);
    }
  });
}

/// The warp path's refusal message for storage type T.
template <typename T>
std::string warp_limit_text() {
  return "the warp path holds cols <= " + std::to_string(kWarpMaxCols<T>) + " in registers";
}

/// Checks the arguments of an op (forward or backward) forced onto the tile path.
template <typename T>
bool check_tile(const course::Args& a, course::Op op) {
  course::require(device_limits().bulk_copy, "the tile path needs the bulk copy (sm_90 or later)");
  const bool backward = op == course::Op::softmax_backward || op == course::Op::log_softmax_backward;
  const int64_t max_bytes = backward ? kBackwardTileMaxRowBytes : kTileMaxRowBytes;
  const std::string why = "the tile path holds rows of up to " + std::to_string(max_bytes) + " bytes";
  return course::check_op_args(a, op, backward ? kBackwardTileMaxCols<T> : kTileMaxCols<T>, why.c_str());
}

/// Checks the arguments of a forward op on a forced path (its own limit) or the dispatch; the row
/// is stored as T and cached as Cache on the shared-memory path.
template <typename T, typename Cache = T>
bool check_forward(const course::Args& a, course::Op op, Path path) {
  if (path == Path::warp) return course::check_op_args(a, op, kWarpMaxCols<T>, warp_limit_text<T>().c_str());
  if (path == Path::block_regs) return course::check_op_args(a, op, kBlockRegsMaxCols, block_regs_limit_text());
  if (path == Path::tile) return check_tile<T>(a, op);
  if (path == Path::smem) {
    const int64_t max_cols = cols_in_smem<Cache>(1);
    const std::string why = "the shared-memory path holds cols <= " + std::to_string(max_cols) + " on this GPU";
    if (!course::check_op_args(a, op, max_cols, why.c_str())) return false;
  } else if (!course::check_op_args(a, op)) {
    return false;
  }
  if (path == Path::cluster) {
    course::require(device_limits().clusters, "the cluster path needs thread-block clusters (sm_90 or later)");
    course::require(a.rows <= int64_t(INT32_MAX) / 16, "rows = ", a.rows, ": the cluster path launches up to 16 blocks per row");
  }
  return true;
}

template <typename T>
void softmax_impl(const course::Args& a, cudaStream_t stream, Path path, bool log) {
  const course::Op op = log ? course::Op::log_softmax : course::Op::softmax;
  if (!check_forward<T>(a, op, path)) return;
  const DirectLoad<T> load{static_cast<const T*>(a.x), a.cols};
  const DirectStore<T> store{static_cast<T*>(a.y), a.cols};
  constexpr int kMax = 16 / sizeof(T);
  const int pack = pick_pack<kMax>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}});
  forward<kMax, kWarpColsPerLane<T>, true>(path, pack, load, store, a.rows, a.cols, log, stream);
}

/// [backward_dispatch]
/// The backward's cluster size for rows x cols stored as T: the smallest power of two from 2 to
/// 16 that gives at least one block per SM over the rows (as the forward's) and whose chunks of
/// y and dy both fit in a block's shared memory; 0 when none does or the GPU has no clusters.
/// CH12_CLUSTER's SIZE, when set, overrides it (a measurement aid).
template <typename T>
int backward_cluster_size(int64_t rows, int64_t cols) {
  if (!device_limits().clusters) return 0;
  if (cluster_override().first >= 2) return cluster_override().first;
  int csize = 2;
  while (csize < 16 && rows * csize < course::sm_count()) csize *= 2;
  for (; csize <= 16; csize *= 2)
    if (course::ceil_div(cols, csize) <= cols_in_smem<T>(2)) return csize;
  return 0;
}

/// The backward dispatch: warp while both rows fit in registers (past 1024 columns, with the
/// forward's rows condition; packed rows of 17-128 columns on a GPU with the bulk copy: tile,
/// backward_tile_fits), except that with those rows and 16-byte packs a block holds them in
/// its registers while y and dy are 4 KB or more and under 32 KB (block_regs_backward_fits: fp32
/// 512-4095 columns, 16-bit 1024-8191); then shared memory while y and dy both fit in a block's. Next,
/// log-softmax keeps dy alone in shared memory while it fits: its sum needs dy only, so each
/// tensor is still read once, by one block per row and no cluster. Then a cluster whose blocks'
/// shared memory holds both, then shared memory for one of them (softmax: y, dy read twice),
/// then uncached (y and dy read twice; log-softmax: dy).
template <typename T>
Path backward_path(int64_t rows, int64_t cols, bool log, bool packed = true) {
  const bool many_rows = rows >= course::long_warp_rows_min();
  if (packed && many_rows && block_regs_backward_fits<T>(cols)) return Path::block_regs;
  if (cols <= kWarpMaxCols<T> && (cols <= 32 * 32 || many_rows))
    return packed && backward_tile_fits(cols) && device_limits().bulk_copy ? Path::tile : Path::warp;
  if (cols <= cols_in_smem<T>(2)) return Path::smem;
  if (log && cols <= cols_in_smem<T>(1)) return Path::smem;
  if (backward_cluster_size<T>(rows, cols) > 0) return Path::cluster;
  if (cols <= cols_in_smem<T>(1)) return Path::smem;
  return Path::uncached;
}
/// [backward_dispatch]

template <typename T>
void backward_impl(const course::Args& a, cudaStream_t stream, Path path, bool log) {
  const course::Op op = log ? course::Op::log_softmax_backward : course::Op::softmax_backward;
  if (path == Path::warp) {
    if (!course::check_op_args(a, op, kWarpMaxCols<T>, warp_limit_text<T>().c_str())) return;
  } else if (path == Path::tile) {
    if (!check_tile<T>(a, op)) return;
  } else if (path == Path::block_regs) {
    if (!course::check_op_args(a, op, kBlockRegsMaxCols, block_regs_limit_text())) return;
  } else if (path == Path::smem) {
    const int64_t max_cols = cols_in_smem<T>(1);
    const std::string why =
        std::string("the shared-memory path holds ") + (log ? "dy" : "y") + ": cols <= " + std::to_string(max_cols);
    if (!course::check_op_args(a, op, max_cols, why.c_str())) return;
  } else if (path == Path::cluster) {
    course::require(device_limits().clusters, "the cluster path needs thread-block clusters (sm_90 or later)");
    const int64_t max_cols = backward_cluster_max_cols<T>();
    const std::string why = "the backward's cluster path holds y and dy in 16 blocks: cols <= " + std::to_string(max_cols);
    if (!course::check_op_args(a, op, max_cols, why.c_str())) return;
    course::require(a.rows <= int64_t(INT32_MAX) / 16, "rows = ", a.rows, ": the cluster path launches up to 16 blocks per row");
  } else if (!course::check_op_args(a, op)) {
    return;
  }
  constexpr int kMax = 16 / sizeof(T);
  const int pack = pick_pack<kMax>(a.cols, {{a.x, sizeof(T)}, {a.dy, sizeof(T)}, {a.y, sizeof(T)}});
  const bool automatic = path == Path::automatic;
  if (automatic) path = backward_path<T>(a.rows, a.cols, log, pack == kMax);
  const DirectLoad<T> load_y{static_cast<const T*>(a.x), a.cols};
  const DirectLoad<T> load_dy{static_cast<const T*>(a.dy), a.cols};
  const DirectStore<T> store{static_cast<T*>(a.y), a.cols};
  with_pack<kMax>(pack, [&](auto p) {
    constexpr int kPack = decltype(p)::value;
    const int64_t rows = a.rows, cols = a.cols;
    if (path == Path::cluster) {
      const int csize = backward_cluster_size<T>(rows, cols);  // > 0: cols was checked against the limit
      if (launch_backward_cluster<kPack>(load_y, load_dy, store, rows, cols, csize, log, stream)) return;
      course::require(automatic, "the backward's cluster path: no cluster of ", csize, " blocks fits on this GPU");
      path = cols <= cols_in_smem<T>(1) ? Path::smem : Path::uncached;  // the dispatch's next choice
    }
    if (path == Path::tile) {
      if constexpr (kPack * sizeof(T) == 16)
        return launch_backward_tile<kPack>(load_y, load_dy, store, rows, cols, log, stream);
      path = Path::warp;  // one-element packs (a misaligned or odd row): the lanes load
    }
    if (path == Path::warp) return launch_backward_warp<kPack>(load_y, load_dy, store, rows, cols, log, stream);
    if (path == Path::block_regs)
      return launch_backward_block_regs<kPack>(load_y, load_dy, store, rows, cols, log, stream);
    if (path == Path::smem) return launch_backward_smem<kPack>(load_y, load_dy, store, rows, cols, log, stream);
    launch_backward_uncached<kPack>(load_y, load_dy, store, rows, cols, log, stream);
  });
}

template <typename T>
void scale_mask_impl(const course::Args& a, cudaStream_t stream, Path path) {
  if (!check_forward<T, float>(a, course::Op::scale_mask_softmax, path)) return;
  const ScaleMaskLoad<T> load{static_cast<const T*>(a.x), static_cast<const uint8_t*>(a.b), a.cols, a.alpha};
  const DirectStore<T> store{static_cast<T*>(a.y), a.cols};
  constexpr int kMax = 16 / sizeof(T);
  const int pack = pick_pack<kMax>(a.cols, {{a.x, sizeof(T)}, {a.b, 1}, {a.y, sizeof(T)}});
  forward<kMax, kWarpColsPerLane<T>, false>(path, pack, load, store, a.rows, a.cols, false, stream);
}

template <typename T>
void scale_mask_unfused_impl(const course::Args& a, cudaStream_t stream) {
  if (!course::check_op_args(a, course::Op::scale_mask_softmax)) return;
  course::require(a.workspace && a.workspace_bytes >= unfused_workspace(a.rows, a.cols, course::DTypeOf<T>::value),
                  "scale_mask_softmax_unfused needs rows x cols fp32 of workspace");
  const ScaleMaskLoad<T> load{static_cast<const T*>(a.x), static_cast<const uint8_t*>(a.b), a.cols, a.alpha};
  float* logits = static_cast<float*>(a.workspace);
  constexpr int kMax = 16 / sizeof(T);
  const int pack = pick_pack<kMax>(a.cols, {{a.x, sizeof(T)}, {a.b, 1}, {a.workspace, 4}});
  with_pack<kMax>(pack, [&](auto p) {  // kernel 1: the logits, in fp32 so that both versions compute the same
    constexpr int kPack = decltype(p)::value;
    const int64_t items = a.rows * (a.cols / kPack);
    const unsigned blocks = course::resident_grid(items, 256, 256, 4);
    apply_load_kernel<ScaleMaskLoad<T>, DirectStore<float>, kPack>
        <<<blocks, 256, 0, stream>>>(load, DirectStore<float>{logits, a.cols}, a.rows, a.cols);
    CUDA_CHECK_LAUNCH();
  });
  const DirectLoad<float> load2{logits, a.cols};  // kernel 2: the production softmax of the logits
  const DirectStore<T> store{static_cast<T*>(a.y), a.cols};
  const int pack2 = pick_pack<4>(a.cols, {{a.workspace, 4}, {a.y, sizeof(T)}});
  forward<4, kWarpColsPerLane<float>, false>(Path::automatic, pack2, load2, store, a.rows, a.cols, false, stream);
}

}  // namespace detail

/// The warp path with at least kMinPacks packs per lane (the lesson's measurement of the group
/// shape for short rows).
template <typename T, int kMinPacks>
void softmax_warp_min_packs(const course::Args& a, cudaStream_t stream) {
  if (!detail::check_forward<T>(a, course::Op::softmax, Path::warp)) return;
  constexpr int kMax = 16 / sizeof(T);
  const int pack = detail::pick_pack<kMax>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}});
  detail::with_pack<kMax>(pack, [&](auto p) {
    detail::launch_warp<kMinPacks, decltype(p)::value, kWarpColsPerLane<T>>(DirectLoad<T>{static_cast<const T*>(a.x), a.cols},
                                                       DirectStore<T>{static_cast<T*>(a.y), a.cols}, a.rows, a.cols,
                                                       false, stream);
  });
}

template <typename T>
void softmax(const course::Args& a, cudaStream_t stream, Path path) {
  detail::softmax_impl<T>(a, stream, path, false);
}
template <typename T>
void log_softmax(const course::Args& a, cudaStream_t stream, Path path) {
  detail::softmax_impl<T>(a, stream, path, true);
}
template <typename T>
void softmax_backward(const course::Args& a, cudaStream_t stream, Path path) {
  detail::backward_impl<T>(a, stream, path, false);
}
template <typename T>
void log_softmax_backward(const course::Args& a, cudaStream_t stream, Path path) {
  detail::backward_impl<T>(a, stream, path, true);
}
template <typename T>
void scale_mask_softmax(const course::Args& a, cudaStream_t stream, Path path) {
  detail::scale_mask_impl<T>(a, stream, path);
}
template <typename T>
void scale_mask_softmax_unfused(const course::Args& a, cudaStream_t stream) {
  detail::scale_mask_unfused_impl<T>(a, stream);
}

template <typename T>
int64_t smem_max_cols(course::Op op) {
  return op == course::Op::scale_mask_softmax ? detail::cols_in_smem<float>(1) : detail::cols_in_smem<T>(1);
}

template <typename T>
int64_t backward_both_cached_max_cols() {
  return detail::cols_in_smem<T>(2);
}

template <typename T>
int64_t backward_cluster_max_cols() {
  return detail::backward_cluster_max_cols<T>();
}

template <typename T>
int64_t warp_two_rows_min(int64_t cols, bool backward) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return 0;
  }
  if (cols < 1 || cols > kWarpMaxCols<T>) return 0;
  constexpr int kPack = 16 / sizeof(T);
  int64_t first = 0;
  // half_wave(rows, width, 2) holds from ceil(rows / 2) x width >= half a wave.
  auto line = [&](auto cpt, auto width) {
    constexpr int kRows = course::rows_per_group<kPack, decltype(cpt)::value, 2>();
    if (kRows > 1) first = 2 * course::ceil_div(detail::half_wave_threads(), decltype(width)::value) - 1;
  };
  const int packs = backward ? 1 : detail::warp_min_packs<kPack>(cols);
  if (packs == 2)
    course::dispatch_warp_shape_min<kPack, 2, kWarpColsPerLane<T>>(cols, line);
  else if (packs == 4)
    course::dispatch_warp_shape_min<kPack, 4, kWarpColsPerLane<T>>(cols, line);
  else
    course::dispatch_warp_shape_min<kPack, 1, kWarpColsPerLane<T>>(cols, line);
  return first;
}

template <typename T>
int block_regs_threads(course::Op op, int64_t cols) {
  constexpr int kPack = 16 / sizeof(T);
  if (cols < 1 || cols > detail::kBlockRegsMaxCols || cols % kPack != 0) return 0;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return 0;
  }
  const bool backward = op == course::Op::softmax_backward || op == course::Op::log_softmax_backward;
  return backward ? detail::block_regs_backward_shape<kPack, T>(cols).block
                  : detail::block_regs_forward_shape<kPack, DirectLoad<T>, DirectStore<T>>(cols).block;
}

template <typename T>
Path chosen_path(course::Op op, int64_t rows, int64_t cols) {
  switch (op) {
    case course::Op::softmax_backward:
    case course::Op::log_softmax_backward:
      return detail::backward_path<T>(rows, cols, op == course::Op::log_softmax_backward,
                                      cols % (16 / int64_t(sizeof(T))) == 0);
    case course::Op::scale_mask_softmax:
      return detail::forward_path<ScaleMaskLoad<T>>(rows, cols, kWarpMaxCols<T>);
    default:
      return detail::forward_path<DirectLoad<T>>(rows, cols, kWarpMaxCols<T>, detail::block_regs_forward_fits<T>(cols),
                                                 cols % (16 / int64_t(sizeof(T))) == 0 && detail::tile_fits<T>(cols));
  }
}

}  // namespace ch12

#define CH12_INSTANTIATE(T)                                                                      \
  template void ch12::softmax<T>(const course::Args&, cudaStream_t, ch12::Path);               \
  template void ch12::log_softmax<T>(const course::Args&, cudaStream_t, ch12::Path);           \
  template void ch12::softmax_backward<T>(const course::Args&, cudaStream_t, ch12::Path);      \
  template void ch12::log_softmax_backward<T>(const course::Args&, cudaStream_t, ch12::Path);  \
  template void ch12::scale_mask_softmax<T>(const course::Args&, cudaStream_t, ch12::Path);    \
  template void ch12::scale_mask_softmax_unfused<T>(const course::Args&, cudaStream_t);         \
  template int64_t ch12::smem_max_cols<T>(course::Op);                                         \
  template int64_t ch12::backward_both_cached_max_cols<T>();                                    \
  template int64_t ch12::backward_cluster_max_cols<T>();                                        \
  template ch12::Path ch12::chosen_path<T>(course::Op, int64_t, int64_t);                      \
  template int ch12::block_regs_threads<T>(course::Op, int64_t);                               \
  template int64_t ch12::warp_two_rows_min<T>(int64_t, bool);                                   \
  template void ch12::softmax_warp_min_packs<T, 2>(const course::Args&, cudaStream_t);
