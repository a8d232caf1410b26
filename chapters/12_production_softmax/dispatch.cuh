/// @file dispatch.cuh
/// @brief Chapter 12's launchers: argument checks, the pack width, the path for each shape, and
/// each path's launch configuration, all from properties read from the device at run time.
/// Included by one .cu file per storage type (softmax_f32.cu, ...), which instantiate it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <tuple>
#include <string>
#include <type_traits>
#include <utility>

#include "backward.cuh"
#include "harness/device.h"
#include "harness/errors.h"
#include "harness/harness.h"
#include "harness/launch_math.h"
#include "blocks/occupancy.cuh"
#include "blocks/warp_dispatch.cuh"
#include "softmax_functors.cuh"
#include "kernels.cuh"
#include "softmax.cuh"

namespace ch12 {
namespace detail {

/// The widest pack, kMax elements, when cols is a multiple of it and every pointer is aligned
/// to kMax of its own elements (pointer, element bytes); otherwise one element at a time.
template <int kMax>
int pick_pack(int64_t cols, std::initializer_list<std::pair<const void*, int>> ptrs) {
  if (cols % kMax != 0) return 1;
  for (auto [p, bytes] : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % (uintptr_t(bytes) * kMax) != 0) return 1;
  return kMax;
}

/// Calls f(std::integral_constant<int, P>{}) for P = pack, which is kMax or 1.
template <int kMax, typename F>
void with_pack(int pack, F&& f) {
  if (pack == kMax) return f(std::integral_constant<int, kMax>{});
  f(std::integral_constant<int, 1>{});
}

/// [row_blocks]
/// Blocks of a kernel with a block per row: one for every row (the kernels' grid-stride loop only
/// serves rows past the hardware's 2^31 - 1 blocks). A block that takes a second row lives twice
/// as long, and the kernel's end waits on the last blocks to finish theirs. Capped at 64 waves of
/// the blocks an SM holds (this chapter's grid until the change), 49152 rows gave most blocks two
/// rows from 8192 fp32 columns on, and the shared-memory kernels ran 0.5-2.4% slower there
/// (same-session A/B on the H100, 2026-11).
inline unsigned row_blocks(int64_t rows) { return unsigned(std::clamp<int64_t>(rows, 1, INT32_MAX)); }
/// [row_blocks]

/// [half_wave]
/// Half a wave: half the threads the SMs hold at once (132 x 2048 / 2 on the H100).
inline int64_t half_wave_threads() { return int64_t(course::sm_count()) * course::threads_per_sm() / 2; }

/// Whether groups of `width` lanes taking `rows_per_group` rows each give the grid at least half a
/// wave of threads.
inline bool half_wave(int64_t rows, int width, int rows_per_group) {
  return course::ceil_div(rows, rows_per_group) * width >= half_wave_threads();
}
/// [half_wave]

/// [warp_launch]
// Short rows go two to a group (course::rows_per_group, at most two rows: up to four packs and 16
// columns per lane), for more loads in flight per lane, as long as the grid keeps half a wave of
// threads (half_wave); past that, one row per group. At 49152 rows only the 16-bit rows of 32
// columns (groups of 4 lanes) fall under it: two rows per group there are 98304 threads, a third
// of the H100's 270336, and one row per group ran the forward 10-12% and the backward 6-8% faster
// (same-session A/B on the H100, 2026-11). Chapter 04's four rows per group were
// measured here too (all of this chapter's warp kernels):
// they lost at the shortest 16-bit rows (32 columns: a grid of 384 blocks) and on the backward's
// rows of 32-256 columns. Four rows for full-warp groups only, A/B against two in one session:
// level on the forward, 10% slower on the 16-bit backward at 256 columns. So this
// chapter keeps two at most. kMinPacks > 1 gives short rows narrower groups, each lane holding more.
template <int kMinPacks, int kPack, int kColsPerLane, typename F>
void warp_shape(int64_t rows, int64_t cols, F&& f) {
  course::dispatch_warp_shape_min<kPack, kMinPacks, kColsPerLane>(cols, [&](auto cpt, auto width) {
    constexpr int kRows = course::rows_per_group<kPack, decltype(cpt)::value, 2>();
    if constexpr (kRows > 1) {
      if (!half_wave(rows, decltype(width)::value, kRows))
        return f(cpt, width, std::integral_constant<int, 1>{});
    }
    f(cpt, width, std::integral_constant<int, kRows>{});
  });
}

template <int kMinPacks, int kPack, int kColsPerLane, typename Load, typename Store>
void launch_warp(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  warp_shape<kMinPacks, kPack, kColsPerLane>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    constexpr int kRowsPerBlock = kWarpBlock / kWidth * kRows;
    const unsigned blocks = course::resident_grid(rows, kRowsPerBlock, kWarpBlock, 8);
    softmax_warp_kernel<Load, Store, kPack, kCols, kWidth, kRows>
        <<<blocks, kWarpBlock, 0, stream>>>(load, store, rows, cols, log);
    CUDA_CHECK_LAUNCH();
  });
}
/// [warp_launch]

/// The device's limits for the dispatch, read once.
struct DeviceLimits {
  int64_t smem_optin = 0;  // bytes of shared memory a block may opt into
  bool clusters = false;   // thread-block clusters launchable
  bool bulk_copy = false;  // the bulk copy (cp.async.bulk) in this build on this GPU: the tile path
};
const DeviceLimits& device_limits();

/// The longest row of which `copies` copies fit in a block's shared memory as C (1 KB kept for
/// the kernels' static shared memory), 0 without a GPU. cache_bytes<C>(cols) * copies + 1024 is
/// within the opt-in limit exactly when cols <= this.
template <typename C>
int64_t cols_in_smem(int copies) {
  const int64_t optin = device_limits().smem_optin;
  return optin > 1024 ? (optin - 1024) / copies / 16 * 16 / int64_t(sizeof(C)) : 0;
}

/// Shared-memory bytes of a row of cols elements cached as C (RowCache: whole packs).
template <typename C>
size_t cache_bytes(int64_t cols) {
  return size_t(course::round_up(cols * int64_t(sizeof(C)), 16));
}

/// [smem_min_packs]
/// The occupancy rule's floor of packs per thread on the shared-memory paths (below it a block
/// size is not a candidate). Chapter 06 asked for four. With a block per row (row_blocks), two
/// were faster for the fp32 forward (up to 0.8% at 2048-6144 columns) and for both backward ops
/// (up to 1.3% at 4096-16384 columns, in every dtype), and level elsewhere; the 16-bit softmax
/// lost 5-18% at 4096-12288 columns with two, and the 16-bit forward keeps four.
/// Same-session A/B on the H100, 2026-11.
template <int kPack>
constexpr int kSmemMinPacks = kPack >= 8 ? 4 : 2;
constexpr int kBackwardMinPacks = 2;
/// [smem_min_packs]

/// [smem_launch]
// Chapter 06's rule for the block size (occupancy.cuh): the most resident threads for this
// row's shared memory, at least kSmemMinPacks packs per thread. The cache type: fp32 (one
// exponential per element, one pack in flight per thread) unless the narrower Load::Cache keeps
// more threads resident, or the row is at most two packs per thread of a 128-thread block: the
// narrow cache's two packs in flight then read the row in one round trip, which outweighs the
// second exponential (a tuning run on the H100 with CH12_SMEM_CACHE=narrow|wide, not kept as data: fp16
// at 1536 columns 2.48 against 2.19 TB/s narrow; at 16384, 2.86 against 3.01 TB/s wide).
// Log-softmax always takes the narrow cache: it keeps no exponential, so the fp32 cache buys
// nothing (measured the same way: 16-bit at 3072 columns 2.85-2.89 against 2.76-2.79 TB/s).
template <typename C, int kPack, typename Load, typename Store>
auto smem_kernel_for() {
  return [](auto block) { return softmax_smem_kernel<C, Load, Store, kPack, decltype(block)::value>; };
}

template <typename C, int kPack, typename Load, typename Store>
void launch_smem_as(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  const size_t smem = cache_bytes<C>(cols);
  auto kernel_for = smem_kernel_for<C, kPack, Load, Store>();
  course::with_occupancy_block(cols / kPack, kSmemMinPacks<kPack>, smem, kernel_for, [&](auto block) {
    constexpr int kBlock = decltype(block)::value;
    kernel_for(block)<<<row_blocks(rows), kBlock, smem, stream>>>(load, store, rows, cols, log);
    CUDA_CHECK_LAUNCH();
  });
}

template <int kPack, typename Load, typename Store>
void launch_smem(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  using C = typename Load::Cache;
  if constexpr (!std::is_same_v<C, float>) {
    const int64_t packs = cols / kPack;
    const bool fits = cols <= cols_in_smem<float>(1);
    const int wide = fits ? course::occupancy_best_threads(packs, kSmemMinPacks<kPack>, cache_bytes<float>(cols),
                                                           smem_kernel_for<float, kPack, Load, Store>())
                          : 0;
    const int narrow = course::occupancy_best_threads(packs, kSmemMinPacks<kPack>, cache_bytes<C>(cols),
                                                      smem_kernel_for<C, kPack, Load, Store>());
    static const std::string forced = std::getenv("CH12_SMEM_CACHE") ? std::getenv("CH12_SMEM_CACHE") : "";
    if (forced == "wide" && fits) return launch_smem_as<float, kPack>(load, store, rows, cols, log, stream);
    if (forced == "narrow" || log || wide < narrow || packs <= 2 * 128)
      return launch_smem_as<C, kPack>(load, store, rows, cols, log, stream);
  }
  launch_smem_as<float, kPack>(load, store, rows, cols, log, stream);
}
/// [smem_launch]

/// The block-registers path's refusal message.
inline const char* block_regs_limit_text() {
  return "the block-registers path holds cols <= 16384 in registers (16 per thread of 1024)";
}

/// [block_regs_rule]
/// The block-registers path (softmax_block_regs_kernel, softmax_backward_block_regs_kernel): a
/// block per row, each thread holding up to 16 elements of each tensor in registers (four fp32
/// packs, two 16-bit ones, or 16 elements read one at a time), so rows of up to 1024 x 16 = 16384
/// columns. The dispatch takes it, with 16-byte packs only and from course::long_warp_rows_min()
/// rows (enough to fill every SM with resident rows), for
///  - the forward while a row of x is more than 4 KB and under 16 KB (fp32 1025 to 4095 columns,
///    16-bit 2049 to 8191), in every dtype, ahead of the warp path (16-bit rows of 2049-3072
///    columns fit a warp's registers too);
///  - the backward while a row's y and dy are 4 KB or more and under 32 KB together (fp32 512 to
///    4095 columns, 16-bit 1024 to 8191), in every dtype.
/// Same-session A/B on the H100 against the previous dispatch (smem for fp32, warp for 16-bit
/// rows to 3072, smem past it; 2026-11): the fp32
/// forward +0.2% to +2.0% at 1280-3584 columns, the backward +0.4% to +1.6% (fp32, 1280-3584) and
/// 0.0% to +1.5% (16-bit, 1280-6144). The fp32 forward lost 2.0-3.7% at 4096-5120 columns (and
/// gained 2% at 6144, not taken: one band is the rule), the fp32 backward up to 0.5% at
/// 4096-6144; hence the 16 KB and 32 KB ends. The backward's 4 KB start: that A/B began past the
/// warp path's 1024 columns, and the forced block_regs variants of the four committed data runs
/// that have them read above the warp path in every run at
/// 4 KB of y and dy (fp32 512 columns: +0.4% to +0.8%; 1024 columns, every dtype: 0.0% to
/// +0.5%), under it at 2 KB in 16-bit (512 columns: 1.6-5.6%) and either side of it at 2 KB in
/// fp32 (256 columns). The 16-bit forward took the path later, on the same row bytes as fp32
/// (22 alternating rounds, and the forced variant in seven
/// committed runs): +0.6% to +0.9% at 3072 columns and +1.9% to +2.0% at 6144 in every round,
/// -0.2% to -1.3% at 4096 in three of the four ops (the price of one band), level at 2048 (4 KB,
/// left on the warp path) and 8192 (16 KB, left on the shared-memory path). The 4096 loss is the
/// block size the target below picks there, 384 threads: forced to 256, those rows read above the
/// shared-memory path in every round (the target
/// is not changed on one row size).
constexpr int kBlockRegsMaxElems = 16;
constexpr int64_t kBlockRegsMaxCols = int64_t(kBlockRegsMaxBlock) * kBlockRegsMaxElems;

template <typename T>
bool block_regs_forward_fits(int64_t cols) {
  const int64_t bytes = cols * int64_t(sizeof(T));
  return bytes > kBlockRegsForwardMinBytes && bytes < kBlockRegsForwardEndBytes;
}
template <typename T>
bool block_regs_backward_fits(int64_t cols) {
  const int64_t bytes = 2 * cols * int64_t(sizeof(T));  // y and dy
  return bytes >= kBlockRegsBackwardMinBytes && bytes < 32 * 1024;
}

/// The block size. A block holds a whole row in flight, so an SM with r resident blocks has r rows
/// of loads in flight: r x row_bytes (the bytes a row reads). Of 128, 256, 384, 512, 768 and 1024
/// threads, each size that holds the row in at most kMaxPacks packs per thread is a candidate;
/// r comes from the occupancy of its kernel (registers grow with packs per thread), and the size
/// whose r x row_bytes is nearest `in_flight` wins (the smaller on a tie). The targets, 48 KB for
/// the forward and 64 KB for the backward, were the best of 40-64 KB in the A/B above. Fewer bytes
/// in flight starve DRAM (32 KB: the forward at 2048 columns lost 5% with 512 threads); more tie
/// the SM to many rows' reductions at once, level or slower. Two refinements were no better in a
/// later A/B: at least three resident blocks per SM (within 0.5%),
/// and 48 KB for the backward (up to 7% slower).
constexpr int64_t kBlockRegsForwardInFlight = 48 * 1024;
constexpr int64_t kBlockRegsBackwardInFlight = 64 * 1024;

struct BlockRegsShape {
  int block = 0;  // threads, 0: the row does not fit
  int packs = 0;  // packs per thread
};

template <typename Kernel, size_t kMaxPacks>
BlockRegsShape block_regs_shape(const std::array<Kernel, kMaxPacks>& kernels, int64_t num_packs, int64_t row_bytes,
                                int64_t in_flight) {
  BlockRegsShape best;
  int64_t best_gap = INT64_MAX;
  for (int block : {128, 256, 384, 512, 768, 1024}) {
    const int64_t packs = course::ceil_div(num_packs, int64_t(block));
    if (packs > int64_t(kMaxPacks)) continue;
    const int64_t rows_per_sm = course::resident_threads(kernels[packs - 1], block, 0) / block;
    const int64_t gap = std::abs(rows_per_sm * row_bytes - in_flight);
    if (rows_per_sm > 0 && gap < best_gap) best_gap = gap, best = {block, int(packs)};
  }
  return best;
}

/// The kernels of kernel_for(std::integral_constant<int, N>{}) for N = 1 .. kMaxPacks packs per
/// thread, indexed by N - 1 (they share one signature).
template <int kMaxPacks, typename KernelFor, int... N>
auto kernels_by_packs(KernelFor kernel_for, std::integer_sequence<int, N...>) {
  using Kernel = decltype(kernel_for(std::integral_constant<int, 1>{}));
  return std::array<Kernel, kMaxPacks>{kernel_for(std::integral_constant<int, N + 1>{})...};
}
template <int kMaxPacks, typename KernelFor>
auto kernels_by_packs(KernelFor kernel_for) {
  return kernels_by_packs<kMaxPacks>(kernel_for, std::make_integer_sequence<int, kMaxPacks>{});
}

/// The forward's kernels for a pack of kPack, and the shape it launches them with.
template <int kPack, typename Load, typename Store>
auto block_regs_forward_kernels() {
  return kernels_by_packs<kBlockRegsMaxElems / kPack>(
      [](auto packs) { return softmax_block_regs_kernel<Load, Store, kPack, decltype(packs)::value>; });
}
template <int kPack, typename Load, typename Store>
BlockRegsShape block_regs_forward_shape(int64_t cols) {
  static const auto kernels = block_regs_forward_kernels<kPack, Load, Store>();
  return block_regs_shape(kernels, cols / kPack, cols * int64_t(sizeof(typename Load::Cache)),
                          kBlockRegsForwardInFlight);
}

template <int kPack, typename Load, typename Store>
void launch_block_regs(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
                       cudaStream_t stream) {
  static const auto kernels = block_regs_forward_kernels<kPack, Load, Store>();
  const BlockRegsShape s = block_regs_forward_shape<kPack, Load, Store>(cols);
  course::require(s.block > 0, block_regs_limit_text(), ", got ", cols);
  kernels[s.packs - 1]<<<row_blocks(rows), s.block, 0, stream>>>(load, store, rows, cols, log);
  CUDA_CHECK_LAUNCH();
}
/// [block_regs_rule]

template <int kPack, typename Load, typename Store>
void launch_uncached(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
                     cudaStream_t stream) {
  constexpr int kBlock = 1024;
  softmax_uncached_kernel<Load, Store, kPack, kBlock>
      <<<row_blocks(rows), kBlock, 0, stream>>>(load, store, rows, cols, log);
  CUDA_CHECK_LAUNCH();
}

/// Launches `kernel` (when `launch` is set) as `rows` clusters of `csize` blocks of `block` threads,
/// each with `smem` bytes of dynamic shared memory, passing it `args`. Returns false, launching
/// nothing, when such a cluster cannot be resident on this GPU. Whether it can is asked once per
/// (kernel, cluster size, grid, shared memory): the query costs host time that would otherwise
/// land in every launch. Clusters of more than 8 blocks are opted into once per kernel.
template <typename Kernel, typename... Args>
bool launch_clusters(Kernel kernel, int64_t rows, int csize, int block, size_t smem, cudaStream_t stream, bool launch,
                     Args... args) {
  const size_t static_bytes = course::allow_max_smem(kernel);
  if (smem + static_bytes > size_t(course::smem_per_block_optin())) return false;
  const void* id = reinterpret_cast<const void*>(kernel);
  static std::map<const void*, bool> opted;
  if (!opted[id]) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    opted[id] = true;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(rows * csize));
  cfg.blockDim = dim3(unsigned(block));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(csize);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  static std::map<std::tuple<const void*, int, unsigned, size_t>, bool> fits;
  const auto key = std::make_tuple(id, csize, cfg.gridDim.x, smem);
  auto known = fits.find(key);
  if (known == fits.end()) {
    int clusters = 0;
    const bool ok = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) == cudaSuccess && clusters > 0;
    cudaGetLastError();
    known = fits.emplace(key, ok).first;
  }
  if (!known->second) return false;
  if (launch) {
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
    CUDA_CHECK_LAUNCH();
  }
  return true;
}

/// [cluster_launch]
// The cluster size: the smallest power of two that gives at least one block per SM over the
// rows, doubled further (up to 16) until a block's chunk fits in shared memory. If it never
// fits, the chunk is read twice instead (the second read mostly from L2). The occupancy API
// confirms that such a cluster can be resident, else the size is halved.
template <int kPack, int kBlock, bool kCached, typename Load, typename Store>
bool try_cluster(const Load& load, const Store& store, int64_t rows, int64_t cols, int csize, bool log,
                 cudaStream_t stream, bool launch) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  const size_t smem = kCached ? cache_bytes<typename Load::Cache>(chunk_packs * kPack) : 0;
  return launch_clusters(softmax_cluster_kernel<Load, Store, kPack, kBlock, kCached>, rows, csize, kBlock, smem,
                         stream, launch, load, store, cols, chunk_packs, log);
}

template <int kPack, bool kCached, typename Load, typename Store>
bool cluster_with_block(const Load& load, const Store& store, int64_t rows, int64_t cols, int csize, bool log,
                        cudaStream_t stream, bool launch) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  if (chunk_packs >= 4096) return try_cluster<kPack, 1024, kCached>(load, store, rows, cols, csize, log, stream, launch);
  if (chunk_packs >= 512) return try_cluster<kPack, 256, kCached>(load, store, rows, cols, csize, log, stream, launch);
  return try_cluster<kPack, 128, kCached>(load, store, rows, cols, csize, log, stream, launch);
}

/// CH12_CLUSTER="SIZE,CACHED" (e.g. "4,1") overrides the choice below, and SIZE the backward's
/// cluster size (backward_cluster_size): a measurement aid (the lesson's exercises), read once.
/// CH12_SMEM_CACHE=narrow|wide does the same for launch_smem.
inline std::pair<int, int> cluster_override() {
  static const std::pair<int, int> o = [] {
    std::pair<int, int> v{0, -1};
    if (const char* e = std::getenv("CH12_CLUSTER")) std::sscanf(e, "%d,%d", &v.first, &v.second);
    return v;
  }();
  return o;
}

template <int kPack, typename Load, typename Store>
void launch_cluster(const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
                    cudaStream_t stream) {
  constexpr int kMaxCluster = 16;
  const auto [forced_size, forced_cached] = cluster_override();
  if (forced_size >= 2) {
    const bool ok = forced_cached == 1
                        ? cluster_with_block<kPack, true>(load, store, rows, cols, forced_size, log, stream, true)
                        : cluster_with_block<kPack, false>(load, store, rows, cols, forced_size, log, stream, true);
    course::require(ok, "CH12_CLUSTER: no cluster of ", forced_size, " blocks fits on this GPU");
    return;
  }
  int csize = 2;  // enough blocks for one per SM
  while (csize < kMaxCluster && rows * csize < course::sm_count()) csize *= 2;
  for (int c = csize; c <= kMaxCluster; c *= 2)  // the smallest cluster whose chunks fit on chip
    if (cluster_with_block<kPack, true>(load, store, rows, cols, c, log, stream, true)) return;
  for (int c = csize; c >= 2; c /= 2)  // too long for shared memory: read each chunk twice
    if (cluster_with_block<kPack, false>(load, store, rows, cols, c, log, stream, true)) return;
  throw course::UsageError("no thread-block cluster of 2 or more blocks fits on this GPU");
}
/// [cluster_launch]

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

/// [warp_packs]
/// The packs per lane the forward's warp path gives a row of `cols` columns in packs of four
/// (fp32), in groups narrower to match (chapter 03's shapes take one pack per lane up to 32 x
/// kPack columns):
///  - 33-128 columns: two packs (64 columns: 8 lanes of 8 columns instead of 16 lanes of 4);
///  - 129-256 columns: four packs (256 columns: 16 lanes of 16 instead of 32 lanes of 8).
/// On the H100 at 49152 rows two packs gained 3.7-3.9% at 64 columns and 2.5% at 128
/// (2026-11), four packs 0.9-1.2% at 256 over 21 alternating rounds on one machine
/// and 1.5-2% on another. At 32 columns (4
/// lanes of 8) two packs lost 9%, on 16-bit rows they were mixed (-3% to +2%), and the backward,
/// which holds two tensors per lane, lost up to 5% with two and gained nothing with four. Every
/// other row: one pack per lane (returns 1).
template <int kPack>
int warp_min_packs(int64_t cols) {
  if (kPack != 4 || cols <= 8 * kPack || cols > 64 * kPack) return 1;
  return cols <= 32 * kPack ? 2 : 4;
}
/// [warp_packs]

/// [tile_rule]
/// The tile path (softmax_tile_kernel): the warp path's group shapes, the block's rows brought in
/// by one bulk copy. The dispatch takes it for the forward's rows of more than kTileMinRowBytes
/// and at most kTileMaxRowBytes (softmax.cuh) read through DirectLoad with 16-byte packs, where
/// the warp path would take them, on GPUs with the bulk copy. A block takes about kTileBytes of
/// rows: the most threads, from 128 to 512, whose tile of full-width rows stays within it.
/// Measured on the H100 (2026-11):
///  - the tile's size, in a stand-alone program: fp32 rows of 32 columns read 4-6% faster than
///    the warp kernel with 8 KB tiles (256 threads) and 3-4% with 4 KB, rows of 64 columns 1-3%
///    faster with 8 KB (128 threads) and level with 16 KB;
///  - the rows it takes, in the harness (the medians of six processes): +2.8-3.2% at 32 fp32
///    columns and +1.4-3.1% on 16-bit rows of 64 and 128 columns, level at 64 fp32 columns; 5-8%
///    slower on 16-bit rows of 32 columns (64 bytes), and from 1.1% slower to 1.4% faster past
///    256 bytes in a first sweep.
constexpr int kTileBytes = 8 * 1024;

constexpr int tile_block(int width, int rows_per_group, int row_bytes) {
  int block = 128;
  while (block < 512 && 2 * block / width * rows_per_group * row_bytes <= kTileBytes) block *= 2;
  return block;
}

template <typename Load>
struct IsDirectLoad : std::false_type {};
template <typename T>
struct IsDirectLoad<DirectLoad<T>> : std::true_type {};

/// Whether the dispatch takes the tile path for a row of `cols` columns stored as T (16-byte packs
/// assumed).
template <typename T>
bool tile_fits(int64_t cols) {
  const int64_t bytes = cols * int64_t(sizeof(T));
  return bytes > kTileMinRowBytes && bytes <= kTileMaxRowBytes;
}

/// x's rows must be contiguous (load.row_size == cols), x 16-byte aligned and cols a multiple of
/// 16 bytes: the caller's 16-byte pack says so.
template <int kMinPacks, int kPack, typename T, typename Store>
void launch_tile(const DirectLoad<T>& load, const Store& store, int64_t rows, int64_t cols, bool log,
                 cudaStream_t stream) {
  static_assert(kPack * sizeof(T) == 16, "the tile path takes 16-byte packs");
  constexpr int kColsPerLane = int(kTileMaxRowBytes / int64_t(sizeof(T)) / 32);
  warp_shape<kMinPacks, kPack, kColsPerLane>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    constexpr int kBlock = tile_block(kWidth, kRows, kWidth * kCols * int(sizeof(T)));
    constexpr int kTileRows = kBlock / kWidth * kRows;
    const size_t smem = size_t(kTileRows) * size_t(cols) * sizeof(T);
    const int64_t tiles = course::ceil_div(rows, int64_t(kTileRows));  // a block per tile
    if (tiles > INT32_MAX)  // over 2^37 rows: more tiles than a grid has blocks
      return launch_warp<kMinPacks, kPack, kColsPerLane>(load, store, rows, cols, log, stream);
    softmax_tile_kernel<T, Store, kPack, kCols, kWidth, kRows, kBlock>
        <<<unsigned(tiles), kBlock, smem, stream>>>(load, store, rows, cols, log);
    CUDA_CHECK_LAUNCH();
  });
}

/// The forward's warp path: its group shape for short rows (warp_min_packs), the rows loaded by
/// each group's lanes (launch_warp) or, with `tile`, by the block's bulk copy (launch_tile; a
/// DirectLoad with 16-byte packs only, else the lanes load).
template <int kPack, int kColsPerLane, typename Load, typename Store>
void launch_warp_path(bool tile, const Load& load, const Store& store, int64_t rows, int64_t cols, bool log,
                      cudaStream_t stream) {
  auto go = [&](auto min_packs) {
    constexpr int kMinPacks = decltype(min_packs)::value;
    if constexpr (IsDirectLoad<Load>::value && kPack * sizeof(typename Load::Cache) == 16) {
      if (tile) return launch_tile<kMinPacks, kPack>(load, store, rows, cols, log, stream);
    }
    launch_warp<kMinPacks, kPack, kColsPerLane>(load, store, rows, cols, log, stream);
  };
  if constexpr (kPack == 4) {
    const int packs = warp_min_packs<kPack>(cols);
    if (packs == 2) return go(std::integral_constant<int, 2>{});
    if (packs == 4) return go(std::integral_constant<int, 4>{});
  }
  go(std::integral_constant<int, 1>{});
}
/// [tile_rule]

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

/// [backward_tile_rule]
/// Whether the backward dispatch takes the tile path for a row of `cols` columns (16-byte packs
/// assumed): more than kBackwardTileMinCols and at most kBackwardTileEndCols, in every dtype. The
/// forward's rule counts bytes; the backward's ends are where its A/Bs turned, in columns.
/// Measured on the H100, 2026-11 (both paths forced, medians of 6-12
/// rounds of alternating processes), the tile path against the warp path:
///  - fp32 rows of 20-128 columns: +0.2% to +12.5% (the most at 20-24 columns);
///  - 16-bit rows of 24-56, 72, 96 and 128 columns: +0.0% to +5.0%;
///  - 16-bit rows of 64 columns: level to 1.8% slower; kept in the band: one band is the rule;
///  - 16 columns or fewer: level (fp32 16) to 6.3% slower, in every dtype;
///  - past 128 columns: 16-bit rows of 144 columns 3.4-4.3% slower, 192 level (-1.2% to +0.5%),
///    240 and 256 +0.5% to +1.2%; rows of 1 KB (fp32 256, 16-bit 512) level (-0.7% to +1.1%).
inline bool backward_tile_fits(int64_t cols) {
  return cols > kBackwardTileMinCols && cols <= kBackwardTileEndCols;
}
/// [backward_tile_rule]

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

template <int kPack, typename T>
void launch_backward_warp(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                          int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  warp_shape<1, kPack, kWarpColsPerLane<T>>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    const unsigned blocks = course::resident_grid(rows, kWarpBlock / kWidth * kRows, kWarpBlock, 8);
    softmax_backward_warp_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, kCols, kWidth, kRows>
        <<<blocks, kWarpBlock, 0, stream>>>(load_y, load_dy, store, rows, cols, log);
    CUDA_CHECK_LAUNCH();
  });
}

/// [backward_tile_launch]
/// The backward's tile path: the backward warp path's group shapes, each block's tiles of y and dy
/// (each within kTileBytes, as the forward's tile) brought in by two bulk copies. y, dy and dx
/// must be 16-byte aligned with rows a multiple of 16 bytes: the caller's 16-byte pack says so.
template <int kPack, typename T>
void launch_backward_tile(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                          int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  static_assert(kPack * sizeof(T) == 16, "the tile path takes 16-byte packs");
  constexpr int kColsPerLane = int(kBackwardTileMaxRowBytes / int64_t(sizeof(T)) / 32);
  warp_shape<1, kPack, kColsPerLane>(rows, cols, [&](auto cpt, auto width, auto rows_per_group) {
    constexpr int kCols = decltype(cpt)::value, kWidth = decltype(width)::value;
    constexpr int kRows = decltype(rows_per_group)::value;
    constexpr int kBlock = tile_block(kWidth, kRows, kWidth * kCols * int(sizeof(T)));
    constexpr int kTileRows = kBlock / kWidth * kRows;
    const size_t smem = 2 * size_t(kTileRows) * size_t(cols) * sizeof(T);  // y's tile, then dy's
    const int64_t tiles = course::ceil_div(rows, int64_t(kTileRows));    // a block per tile
    if (tiles > INT32_MAX)  // over 2^37 rows: more tiles than a grid has blocks
      return launch_backward_warp<kPack>(load_y, load_dy, store, rows, cols, log, stream);
    softmax_backward_tile_kernel<T, kPack, kCols, kWidth, kRows, kBlock>
        <<<unsigned(tiles), kBlock, smem, stream>>>(load_y, load_dy, store, rows, cols, log);
    CUDA_CHECK_LAUNCH();
  });
}
/// [backward_tile_launch]

/// The backward's block-registers launch: the block size as the forward's (block_regs_shape),
/// aiming at kBlockRegsBackwardInFlight bytes of y and dy in flight per SM.
template <int kPack, typename T>
auto block_regs_backward_kernels() {
  return kernels_by_packs<kBlockRegsMaxElems / kPack>([](auto packs) {
    return softmax_backward_block_regs_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack,
                                              decltype(packs)::value>;
  });
}
template <int kPack, typename T>
BlockRegsShape block_regs_backward_shape(int64_t cols) {
  static const auto kernels = block_regs_backward_kernels<kPack, T>();
  return block_regs_shape(kernels, cols / kPack, 2 * cols * int64_t(sizeof(T)), kBlockRegsBackwardInFlight);
}
template <int kPack, typename T>
void launch_backward_block_regs(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                                int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  static const auto kernels = block_regs_backward_kernels<kPack, T>();
  const BlockRegsShape s = block_regs_backward_shape<kPack, T>(cols);
  course::require(s.block > 0, block_regs_limit_text(), ", got ", cols);
  kernels[s.packs - 1]<<<row_blocks(rows), s.block, 0, stream>>>(load_y, load_dy, store, rows, cols, log);
  CUDA_CHECK_LAUNCH();
}

/// [backward_smem_launch]
/// The shared-memory path's cache: y and dy while both fit; past that, dy alone for log-softmax
/// (its sum needs nothing else: each tensor is still read once) and y alone for softmax (dy read
/// twice). Where both fit, dy alone was no faster for log-softmax (A/B on the H100, not kept as
/// data: level or up to 1.4% slower at rows = 49152, 7-28% slower at 128 rows, where its write
/// pass waits on DRAM for y instead of reading shared memory).
template <int kPack, typename T>
void launch_backward_smem(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                          int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  using L = DirectLoad<T>;
  using S = DirectStore<T>;
  auto launch = [&](auto cache) {
    constexpr BackwardCache kCache = decltype(cache)::value;
    const size_t row_bytes = cache_bytes<T>(cols);
    const size_t dy_offset = kCache == BackwardCache::dy ? 0 : row_bytes;  // dy after y, when y is cached
    const size_t smem = kCache == BackwardCache::y_dy ? 2 * row_bytes : row_bytes;
    auto kernel_for = [&](auto block) {
      return softmax_backward_smem_kernel<L, L, S, kPack, decltype(block)::value, kCache>;
    };
    course::with_occupancy_block(cols / kPack, kBackwardMinPacks, smem, kernel_for, [&](auto block) {
      constexpr int kBlock = decltype(block)::value;
      kernel_for(block)<<<row_blocks(rows), kBlock, smem, stream>>>(load_y, load_dy, store, rows, cols, dy_offset,
                                                                    log);
      CUDA_CHECK_LAUNCH();
    });
  };
  using Cache = BackwardCache;
  if (cols <= cols_in_smem<T>(2))
    launch(std::integral_constant<Cache, Cache::y_dy>{});
  else if (log)
    launch(std::integral_constant<Cache, Cache::dy>{});
  else
    launch(std::integral_constant<Cache, Cache::y>{});
}
/// [backward_smem_launch]

/// [backward_cluster_launch]
/// A cluster of `csize` blocks per row, each caching its chunk of y and dy; the block size from
/// occupancy as on the shared-memory path. False, launching nothing, when such a cluster cannot
/// be resident.
template <int kPack, typename T>
bool launch_backward_cluster(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                             int64_t rows, int64_t cols, int csize, bool log, cudaStream_t stream) {
  const int64_t chunk_packs = course::ceil_div(cols / kPack, csize);
  const size_t dy_offset = cache_bytes<T>(chunk_packs * kPack);
  const size_t smem = 2 * dy_offset;
  auto kernel_for = [](auto block) {
    return softmax_backward_cluster_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, decltype(block)::value>;
  };
  bool ok = false;
  course::with_occupancy_block(chunk_packs, 4, smem, kernel_for, [&](auto block) {
    ok = launch_clusters(kernel_for(block), rows, csize, decltype(block)::value, smem, stream, true, load_y, load_dy,
                         store, cols, chunk_packs, dy_offset, log);
  });
  return ok;
}
/// [backward_cluster_launch]

template <int kPack, typename T>
void launch_backward_uncached(const DirectLoad<T>& load_y, const DirectLoad<T>& load_dy, const DirectStore<T>& store,
                              int64_t rows, int64_t cols, bool log, cudaStream_t stream) {
  constexpr int kBlock = 1024;
  const unsigned grid = row_blocks(rows);
  if (log)
    softmax_backward_uncached_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, kBlock, true>
        <<<grid, kBlock, 0, stream>>>(load_y, load_dy, store, rows, cols);
  else
    softmax_backward_uncached_kernel<DirectLoad<T>, DirectLoad<T>, DirectStore<T>, kPack, kBlock, false>
        <<<grid, kBlock, 0, stream>>>(load_y, load_dy, store, rows, cols);
  CUDA_CHECK_LAUNCH();
}

/// Largest cols of the backward's cluster path: 16 blocks, each caching its chunk of y and dy.
template <typename T>
int64_t backward_cluster_max_cols() {
  return 16 * cols_in_smem<T>(2);
}

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
