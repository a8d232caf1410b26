/// @file dispatch.cuh
/// @brief Chapter 13's dispatch: chapter 12's (12_production_softmax/dispatch.cuh) over a path
/// set with the tile and cluster paths. The rule is the policy's, unchanged
/// (12_production_softmax/policy.h): on a GPU with the bulk copy and clusters it now takes them.
/// Included by one .cu file per storage type (softmax_f32.cu, ...), which instantiates it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "12_production_softmax/dispatch.cuh"
#include "12_production_softmax/softmax_functors.cuh"
#include "cluster_stream.cuh"
#include "paths_cluster.cuh"
#include "paths_tile.cuh"
#include "softmax.cuh"

namespace ch13 {

/// [hopper_paths]
/// Chapter 12's paths and Hopper's: the tile path for short rows, the cluster path for few long
/// rows. The dispatch calls these launchers where the policy chooses their paths.
struct HopperPaths : ch12::BasePaths {
  static constexpr bool kTile = true, kCluster = true;

  /// A DirectLoad with 16-byte packs: the warp path's groups, the block's rows by one bulk copy.
  template <int kMinPacks, int kPack, typename T, typename Store>
  static void tile(const ch12::DirectLoad<T>& load, const Store& store, int64_t rows, int64_t cols, bool log,
                   cudaStream_t stream) {
    detail::launch_tile<kMinPacks, kPack>(load, store, rows, cols, log, stream);
  }

  /// Several blocks per row in a cluster (kPeel: rows read in packs from their first boundary).
  template <int kPack, bool kPeel, typename Load, typename Store>
  static void cluster(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
                      cudaStream_t stream, int phase) {
    detail::launch_cluster<kPack, kPeel>(load, store, rows, cols, log, stream, phase);
  }
};
/// [hopper_paths]

template <typename T>
void softmax(const course::Args& a, cudaStream_t stream, Path path) {
  ch12::detail::softmax_impl<T, HopperPaths>(a, stream, path, false);
}
template <typename T>
void log_softmax(const course::Args& a, cudaStream_t stream, Path path) {
  ch12::detail::softmax_impl<T, HopperPaths>(a, stream, path, true);
}
template <typename T>
void scale_mask_softmax(const course::Args& a, cudaStream_t stream, Path path) {
  ch12::detail::scale_mask_impl<T, HopperPaths>(a, stream, path);
}
template <typename T>
void scale_mask_softmax_unfused(const course::Args& a, cudaStream_t stream) {
  ch12::detail::scale_mask_unfused_impl<T, HopperPaths>(a, stream);
}

}  // namespace ch13

#define CH13_INSTANTIATE(T)                                                                     \
  template void ch13::softmax<T>(const course::Args&, cudaStream_t, ch13::Path);              \
  template void ch13::log_softmax<T>(const course::Args&, cudaStream_t, ch13::Path);          \
  template void ch13::scale_mask_softmax<T>(const course::Args&, cudaStream_t, ch13::Path);   \
  template void ch13::scale_mask_softmax_unfused<T>(const course::Args&, cudaStream_t);
