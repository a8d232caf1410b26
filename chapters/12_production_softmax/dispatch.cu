/// @file dispatch.cu
/// @brief Chapter 12: the dispatch's device properties, read once, and the launchers' helpers
/// that do not depend on the storage type.
#include <cuda_runtime.h>

#include "harness/device.h"
#include "harness/errors.h"
#include "blocks/occupancy.cuh"
#include "dispatch.cuh"

namespace ch12 {
namespace detail {

const DeviceLimits& device_limits() {
  static const DeviceLimits limits = [] {
    DeviceLimits l;
    l.smem_optin = course::smem_per_block_optin();
    int dev = 0, cluster = 0;
    // The cluster kernel is empty below sm_90: clusters need the device and this build's code.
    if (l.smem_optin > 0 && cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&cluster, cudaDevAttrClusterLaunch, dev) == cudaSuccess)
      l.clusters = cluster != 0 && course::device_code_version() >= 90;
    l.bulk_copy = l.smem_optin > 0 && course::bulk_copy_available();
    cudaGetLastError();
    return l;
  }();
  return limits;
}

}  // namespace detail

const char* path_name(Path p) {
  switch (p) {
    case Path::warp:
      return "warp";
    case Path::block_regs:
      return "block_regs";
    case Path::smem:
      return "smem";
    case Path::uncached:
      return "uncached";
    case Path::cluster:
      return "cluster";
    case Path::tile:
      return "tile";
    default:
      return "automatic";
  }
}

size_t unfused_workspace(int64_t rows, int64_t cols, course::DType) { return size_t(rows * cols) * sizeof(float); }

int64_t cluster_rows_below() { return detail::device_limits().clusters ? int64_t(course::sm_count()) / 2 : 0; }

bool cluster_path_available() { return detail::device_limits().clusters; }

bool tile_path_available() { return detail::device_limits().bulk_copy; }

}  // namespace ch12
