/// @file dispatch.cuh
/// @brief Chapter 12's dispatch: argument checks, the path for each shape (the policy's rule,
/// policy.h; each path's kernel and launch: paths_*.cuh) and the forward launchers, over a path
/// set: BasePaths here, chapter 13's HopperPaths with the tile and cluster paths added. Included by
/// one .cu file per storage type (softmax_f32.cu, ...), which instantiates it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "blocks/warp_dispatch.cuh"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"
#include "paths_block_regs.cuh"
#include "paths_common.cuh"
#include "paths_smem.cuh"
#include "paths_uncached.cuh"
#include "paths_warp.cuh"
#include "policy.h"
#include "softmax.cuh"
#include "softmax_functors.cuh"

namespace ch12 {

/// [path_set]
/// The paths a dispatch is compiled with. BasePaths: this chapter's four (warp, block_regs, smem,
/// uncached). A set with kTile provides `tile<kMinPacks, kPack>(load, store, rows, cols, log,
/// stream)`, one with kCluster `cluster<kPack>(...)`: chapter 13's HopperPaths. The rule is the
/// same for every set: it sees the device without the set's absent paths (device_for), and
/// `if constexpr` keeps their kernels out of the binary.
struct BasePaths {
  static constexpr bool kTile = false, kCluster = false;
};

/// The device as a dispatch over Paths sees it: no bulk copy or clusters where it has no such path.
template <typename Paths>
policy::Device device_for() {
  policy::Device d = device();
  d.bulk_copy = d.bulk_copy && Paths::kTile;
  d.clusters = d.clusters && Paths::kCluster;
  return d;
}
/// [path_set]

namespace detail {

/// A plain load (x read as stored), which the tile path's bulk copy can replace.
template <typename Load>
struct IsDirectLoad : std::false_type {};
template <typename T>
struct IsDirectLoad<DirectLoad<T>> : std::true_type {};

/// Launches the tile path of the path set, where it has one and the row is read through a
/// DirectLoad in 16-byte packs; false where not (the lanes load: the warp path).
template <typename Paths, int kMinPacks, int kPack, typename Load, typename Store>
bool tile_of(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  if constexpr (Paths::kTile && IsDirectLoad<Load>::value && kPack * sizeof(typename Load::Cache) == 16) {
    Paths::template tile<kMinPacks, kPack>(load, store, rows, cols, log, stream);
    return true;
  }
  return false;
}
/// Launches the cluster path of the path set (kPeel, phase: the peel); false where it has none.
template <typename Paths, int kPack, bool kPeel = false, typename Load, typename Store>
bool cluster_of(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log, cudaStream_t stream,
                int phase = 0) {
  if constexpr (Paths::kCluster) {
    Paths::template cluster<kPack, kPeel>(load, store, rows, cols, log, stream, phase);
    return true;
  }
  return false;
}

/// [dispatch]
/// The forward on `path` (or the policy's choice for `op`), x stored as X, with packs of kMax =
/// 16 bytes of X or 1 element. kBlockRegs: the block-registers path is compiled for this Load and
/// Store (the plain softmax). A row read one element at a time takes the warp path where the tile
/// path was chosen. The path set's tile and cluster launchers are compiled only where it has them
/// (tile_of, cluster_of). `phase` (pick_phase, -1 for none): a row that is not a whole number of
/// packs is still read in packs on every path but the tile path, with its head and tail peeled
/// (blocks/peel.h).
template <typename Paths, typename X, bool kBlockRegs, typename Load, typename Store>
void forward(Path path, policy::Op op, int pack, const Load& load, const Store& store, int64_t rows, int64_t cols,
             bool log, cudaStream_t stream, int phase = -1) {
  constexpr int kMax = 16 / sizeof(X);
  if (path == Path::automatic)
    path = policy::forward_path(device_for<Paths>(), op, rows, cols, int(sizeof(X)), pack == kMax,
                                pack != kMax && phase >= 0);
  with_pack<kMax>(pack, [&](auto p) {
    constexpr int kPack = decltype(p)::value;
    switch (path) {
      case Path::block_regs:
        if constexpr (kBlockRegs) {
          if constexpr (kPack == 1 && kMax > 1)
            if (phase >= 0) return launch_block_regs<kMax, true>(load, store, rows, cols, log, stream, phase);
          return launch_block_regs<kPack>(load, store, rows, cols, log, stream);
        }
        throw course::UsageError("the block-registers path serves the plain softmax and log-softmax only");
      case Path::warp:
      case Path::tile:
        if constexpr (kPack == 1 && kMax > 1)
          if (phase >= 0)  // the peel: packs from each row's first boundary (the tile path needs whole rows of packs)
            return with_warp_min_packs<kMax>(cols, [&](auto min_packs) {
              launch_warp<decltype(min_packs)::value, kMax, kWarpColsPerLane<X>, true>(load, store, rows, cols, log,
                                                                                      stream, phase);
            });
        return with_warp_min_packs<kPack>(cols, [&](auto min_packs) {
          constexpr int kMinPacks = decltype(min_packs)::value;
          if (path == Path::tile && tile_of<Paths, kMinPacks, kPack>(load, store, rows, cols, log, stream)) return;
          launch_warp<kMinPacks, kPack, kWarpColsPerLane<X>>(load, store, rows, cols, log, stream);
        });
      case Path::cluster:
        if constexpr (kPack == 1 && kMax > 1)
          if (phase >= 0 && cluster_of<Paths, kMax, true>(load, store, rows, cols, log, stream, phase)) return;
        if (cluster_of<Paths, kPack>(load, store, rows, cols, log, stream)) return;
        throw course::UsageError("the cluster path is chapter 13's (ch13::softmax)");
      case Path::smem:
        if constexpr (kPack == 1 && kMax > 1)
          if (phase >= 0) return launch_smem<kMax, true>(load, store, rows, cols, log, stream, phase);
        return launch_smem<kPack>(load, store, rows, cols, log, stream);
      default:
        if constexpr (kPack == 1 && kMax > 1)
          if (phase >= 0) return launch_uncached<kMax, true>(load, store, rows, cols, log, stream, phase);
        return launch_uncached<kPack>(load, store, rows, cols, log, stream);
    }
  });
}
/// [dispatch]

/// The warp path's refusal message for storage type T.
template <typename T>
std::string warp_limit_text() {
  return "the warp path holds cols <= " + std::to_string(kWarpMaxCols<T>) + " in registers";
}

/// Checks the arguments of an op (forward or backward) forced onto the tile path.
template <typename T>
bool check_tile(const course::Args& a, course::Op op) {
  course::require(device().bulk_copy, "the tile path needs the bulk copy (sm_90 or later)");
  const bool backward = op == course::Op::softmax_backward || op == course::Op::log_softmax_backward;
  const int64_t max_bytes = backward ? policy::kBackwardTileMaxRowBytes : policy::kTileMaxRowBytes;
  const std::string why = "the tile path holds rows of up to " + std::to_string(max_bytes) + " bytes";
  return course::check_op_args(a, op, max_bytes / int64_t(sizeof(T)), why.c_str());
}

/// Checks the arguments of a rows-per-cluster launch: up to kMaxClusterBlocks blocks per row.
inline void check_cluster_rows(const course::Args& a) {
  course::require(device().clusters, "the cluster path needs thread-block clusters (sm_90 or later)");
  course::require(a.rows <= int64_t(INT32_MAX) / policy::kMaxClusterBlocks, "rows = ", a.rows,
                  ": the cluster path launches up to ", policy::kMaxClusterBlocks, " blocks per row");
}

/// Checks the arguments of a forward op on a forced path (its own limit) or the dispatch; the row
/// is stored as T and cached as Cache on the shared-memory path.
template <typename T, typename Paths, typename Cache = T>
bool check_forward(const course::Args& a, course::Op op, Path path) {
  if (path == Path::warp) return course::check_op_args(a, op, kWarpMaxCols<T>, warp_limit_text<T>().c_str());
  if (path == Path::block_regs) return course::check_op_args(a, op, policy::kBlockRegsMaxCols, block_regs_limit_text());
  if (path == Path::tile) {
    course::require(Paths::kTile, "the tile path is chapter 13's (ch13::softmax)");
    return check_tile<T>(a, op);
  }
  if (path == Path::smem) {
    const int64_t max_cols = cols_in_smem<Cache>(1);
    const std::string why = "the shared-memory path holds cols <= " + std::to_string(max_cols) + " on this GPU";
    if (!course::check_op_args(a, op, max_cols, why.c_str())) return false;
  } else if (!course::check_op_args(a, op)) {
    return false;
  }
  if (path == Path::cluster) {
    course::require(Paths::kCluster, "the cluster path is chapter 13's (ch13::softmax)");
    check_cluster_rows(a);
  }
  return true;
}

template <typename T, typename Paths>
void softmax_impl(const course::Args& a, cudaStream_t stream, Path path, bool log) {
  const course::Op op = log ? course::Op::log_softmax : course::Op::softmax;
  if (!check_forward<T, Paths>(a, op, path)) return;
  const DirectLoad<T> load{static_cast<const T*>(a.x), a.cols};
  const DirectStore<T> store{static_cast<T*>(a.y), a.cols};
  const int pack = pick_pack<16 / sizeof(T)>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}});
  const int phase = pick_phase<16 / sizeof(T)>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}});
  forward<Paths, T, true>(path, log ? policy::Op::log_softmax : policy::Op::softmax, pack, load, store, a.rows, a.cols,
                          log, stream, phase);
}

template <typename T, typename Paths>
void scale_mask_impl(const course::Args& a, cudaStream_t stream, Path path) {
  if (!check_forward<T, Paths, float>(a, course::Op::scale_mask_softmax, path)) return;
  const ScaleMaskLoad<T> load{static_cast<const T*>(a.x), static_cast<const uint8_t*>(a.b), a.cols, a.alpha};
  const DirectStore<T> store{static_cast<T*>(a.y), a.cols};
  const int pack = pick_pack<16 / sizeof(T)>(a.cols, {{a.x, sizeof(T)}, {a.b, 1}, {a.y, sizeof(T)}});
  const int phase = pick_phase<16 / sizeof(T)>(a.cols, {{a.x, sizeof(T)}, {a.b, 1}, {a.y, sizeof(T)}});
  forward<Paths, T, false>(path, policy::Op::scale_mask_softmax, pack, load, store, a.rows, a.cols, false, stream,
                           phase);
}

template <typename T, typename Paths>
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
  const int phase2 = pick_phase<4>(a.cols, {{a.workspace, 4}, {a.y, sizeof(T)}});
  forward<Paths, float, false>(Path::automatic, policy::Op::unfused_logits, pack2, load2, store, a.rows, a.cols, false,
                               stream, phase2);
}

}  // namespace detail

template <typename T>
void softmax(const course::Args& a, cudaStream_t stream, Path path) {
  detail::softmax_impl<T, BasePaths>(a, stream, path, false);
}
template <typename T>
void log_softmax(const course::Args& a, cudaStream_t stream, Path path) {
  detail::softmax_impl<T, BasePaths>(a, stream, path, true);
}
template <typename T>
void scale_mask_softmax(const course::Args& a, cudaStream_t stream, Path path) {
  detail::scale_mask_impl<T, BasePaths>(a, stream, path);
}
template <typename T>
void scale_mask_softmax_unfused(const course::Args& a, cudaStream_t stream) {
  detail::scale_mask_unfused_impl<T, BasePaths>(a, stream);
}

/// The warp path with at least kMinPacks packs per lane (the lesson's measurement of the group
/// shape for short rows).
template <typename T, int kMinPacks>
void softmax_warp_min_packs(const course::Args& a, cudaStream_t stream) {
  if (!detail::check_forward<T, BasePaths>(a, course::Op::softmax, Path::warp)) return;
  constexpr int kMax = 16 / sizeof(T);
  const int pack = detail::pick_pack<kMax>(a.cols, {{a.x, sizeof(T)}, {a.y, sizeof(T)}});
  detail::with_pack<kMax>(pack, [&](auto p) {
    detail::launch_warp<kMinPacks, decltype(p)::value, kWarpColsPerLane<T>>(
        DirectLoad<T>{static_cast<const T*>(a.x), a.cols}, DirectStore<T>{static_cast<T*>(a.y), a.cols}, a.rows,
        a.cols, false, stream);
  });
}

}  // namespace ch12

#define CH12_INSTANTIATE(T)                                                              \
  template void ch12::softmax<T>(const course::Args&, cudaStream_t, ch12::Path);       \
  template void ch12::log_softmax<T>(const course::Args&, cudaStream_t, ch12::Path);   \
  template void ch12::scale_mask_softmax<T>(const course::Args&, cudaStream_t, ch12::Path); \
  template void ch12::scale_mask_softmax_unfused<T>(const course::Args&, cudaStream_t); \
  template void ch12::softmax_warp_min_packs<T, 2>(const course::Args&, cudaStream_t);
