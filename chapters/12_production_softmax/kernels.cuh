/// @file kernels.cuh
/// @brief Chapter 12's forward kernels: softmax and log-softmax over rows read through a `Load`
/// functor and written through a `Store` functor (softmax_functors.cuh). Six paths, each an earlier
/// chapter's idea or new here, picked per shape by dispatch.cuh:
///  - warp:       a group of lanes per row, the row in registers (chapters 03-05);
///  - tile:       the warp path's groups, the block's rows brought into shared memory by one bulk
///                copy (new here, sm_90: short rows);
///  - block_regs: a block per row, the row in registers (new here: rows too long for a warp's);
///  - smem:       a block per row, the row in shared memory in its narrowest exact type (06);
///  - uncached:   a block per row, the row read twice with the online (m, d) pair (07-08);
///  - cluster:    several blocks per row, a thread-block cluster, merging their (m, d) pairs
///                through distributed shared memory, when rows are too few to fill the GPU (new).
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "bulk_copy.cuh"
#include "blocks/convert.cuh"
#include "08_online_softmax/online_softmax.cuh"
#include "blocks/pack.cuh"
#include "blocks/warp.cuh"
#include "softmax_functors.cuh"

namespace ch12 {

/// Threads per block of the warp-per-row kernels. 64 and 256 were timed against it at rows of 32-512
/// columns on the H100 and were no better, nor were 32 and 64 at 256-2048 columns (2026-11).
constexpr int kWarpBlock = 128;

struct Max {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

/// The value every thread of the block gets: a warp all-reduce, the warps' results through
/// shared memory, then each warp reduces those (no second broadcast barrier). kBlock bounds the
/// block's threads; `warps` is how many warps it has (a kernel launched with a block size chosen
/// at run time passes blockDim.x / 32).
template <int kBlock, typename Op>
__device__ __forceinline__ float block_allreduce(float v, Op op, float identity, int warps = kBlock / 32) {
  __shared__ float partial[kBlock / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = course::group_reduce<32>(v, 0xffffffffu, op);
  __syncthreads();  // the previous call's readers are done with `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : identity;
  return course::group_reduce<32>(v, 0xffffffffu, op);
}

/// [for_each_pack]
/// Visits the packs p = threadIdx.x, + kBlock, ... < count of a row (from pack `first`),
/// calling f(p, values). kUnroll packs are loaded before any is used: several 16-byte loads in
/// flight per thread rather than one, which is what a block needs to cover the memory latency
/// when it is one of few on its SM (few rows, or long ones). Four packs of up to 4 floats, two of
/// 8 (16-bit): their registers cost occupancy. kReadOnly: through the read-only data path.
/// kHold keeps the packs as loaded (a 16-bit pack in half the registers of fp32) and converts
/// each as f takes it: for a kernel that wants more loads in flight than its registers hold as
/// floats (the uncached backward). Elsewhere converting on arrival measured as fast or faster.
template <int kBlock, int kPack, int kUnroll = (kPack >= 8 ? 2 : 4), bool kReadOnly = false, bool kHold = false,
          typename Load, typename F>
__device__ __forceinline__ void for_each_pack(const Load& load, int64_t row, int64_t first, int64_t count, F&& f) {
  for (int64_t p0 = threadIdx.x; p0 < count; p0 += int64_t(kBlock) * kUnroll) {
    typename Load::template Fetched<kPack> raw[kUnroll];
    float v[kHold ? 1 : kUnroll][kPack];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p >= count) continue;
      raw[u] = load.template fetch<kPack, kReadOnly>(row, (first + p) * kPack);
      if constexpr (!kHold) load.template convert<kPack>(raw[u], v[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + int64_t(u) * kBlock;
      if (p >= count) continue;
      if constexpr (kHold) load.template convert<kPack>(raw[u], v[0]);
      f(p, v[kHold ? 0 : u]);
    }
  }
}
/// [for_each_pack]

/// [row_exp]
/// exp(x) as the output's type needs it (Store::kFastExp, softmax_functors.cuh). For fp32 output,
/// expf: a range reduction in about six FMA-pipe instructions around the SFU's `ex2`. For 16-bit
/// output, that `ex2` alone (PTX ex2.approx.ftz.f32) on x * log2(e): one multiply and one
/// MUFU.EX2. This is __expf with results below 2^-126 flushed to zero. The CUDA Programming
/// Guide bounds __expf's error by 2 + 1.173|x| fp32 ulps: under 2^-16 relative down to the flush
/// (x ~ -87), under 2^-18 for x >= -17. The output's rounding is up to 2^-11 (fp16) or 2^-8
/// (bf16). __expf itself keeps subnormal results with a compare and two predicated multiplies,
/// which measured slower (the lesson's "A cheaper exponential for 16-bit output"). exp(-inf) = 0,
/// exp(NaN) = NaN.
template <bool kFast>
__device__ __forceinline__ float row_exp(float x) {
  if constexpr (kFast) {
    float e;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x * 1.44269504088896341f));
    return e;
  } else {
    return expf(x);
  }
}

/// Calls f(std::true_type{}) or f(std::false_type{}) as `log` says. A kernel's write pass is then
/// compiled once per operation, and neither copy carries the other's arithmetic. With a cheap
/// exponential the compiler may otherwise compute both sides of `log ? a : b` and select. Only the
/// backward's warp kernel uses it: there it won back 1% at 256 columns. In the other kernels it
/// changed register counts, and with them the block size chosen from occupancy, and measured
/// slower (up to 17% on the 16-bit backward cluster at 128 rows; H100, 2026-11).
template <typename F>
__device__ __forceinline__ void with_log(bool log, F&& f) {
  if (log)
    f(std::true_type{});
  else
    f(std::false_type{});
}
/// [row_exp]

/// [finish]
/// The output of one element from its value v, the row max m and the row's `k`: 1 / sum for
/// softmax, log(sum) for log-softmax. An all -inf row gives NaN in both, as PyTorch does.
__device__ __forceinline__ float row_constant(float sum, bool log) { return log ? logf(sum) : 1.0f / sum; }
template <bool kFast>
__device__ __forceinline__ float finish(float v, float m, float k, bool log) {
  return log ? (v - m) - k : row_exp<kFast>(v - m) * k;
}
/// [finish]

/// [row_regs]
/// A lane's packs of a row held in registers. Up to 32 columns per lane (every fp32 row of the
/// warp path, 16-bit rows up to 1024) they are held converted to fp32: each element converted
/// once. Past that (16-bit rows of 1025-3072 columns) they are held as fetched (Load::Fetched:
/// the storage type) and converted on each of the three passes: half the registers of fp32, so
/// that twice the warps, and twice the loads in flight, fit on an SM (a 16-bit row of 3072
/// columns: 72 registers where fp32 needed 255). Converting three times costs instructions,
/// which the short rows cannot afford (a tuning run on the H100, not kept as data: 16-bit rows of
/// 512 and 1024 columns held fetched ran 1-4% slower) and the long ones can. (One-element packs of
/// a misaligned row fetch no fewer registers; the fused scale-and-mask load at 80 and 96 columns
/// per lane then spills a few bytes: a fallback path.)
///
/// Held as fp32, a value can be replaced (keep): the softmax keeps each exponential in place of
/// its input, so that the write pass multiplies instead of computing it again.
template <typename Load, int kPack, int kPacks, bool kFetched = (kPacks * kPack > 32)>
struct RowRegs {
  static constexpr bool kFloat = true;
  float v[kPacks][kPack];
  __device__ __forceinline__ void fetch(const Load& load, int p, int64_t row, int64_t col) {
    load.template load<kPack>(v[p], row, col);
  }
  __device__ __forceinline__ const float* get(const Load&, int p, float*) const { return v[p]; }
  __device__ __forceinline__ void keep(int p, int j, float e) { v[p][j] = e; }
};
template <typename Load, int kPack, int kPacks>
struct RowRegs<Load, kPack, kPacks, true> {
  static constexpr bool kFloat = false;
  typename Load::template Fetched<kPack> x[kPacks];
  __device__ __forceinline__ void fetch(const Load& load, int p, int64_t row, int64_t col) {
    x[p] = load.template fetch<kPack>(row, col);
  }
  __device__ __forceinline__ const float* get(const Load& load, int p, float* tmp) const {
    load.template convert<kPack>(x[p], tmp);
    return tmp;
  }
  __device__ __forceinline__ void keep(int, int, float) {}  // nothing to keep: converted on each pass
};
/// [row_regs]

/// [warp_kernel]
/// Chapter 04's warp kernel with functors, and log-softmax as a flag (a uniform branch): each
/// group of kWidth lanes takes kRows rows at a time (warp_rows), grid-stride over the rows.
/// Every load of the group's rows is issued before any is used; the row stays in registers
/// (RowRegs) for the three passes: max, sum of exponentials, write. Where the row is held as
/// fp32, the softmax keeps the exponentials from the sum pass, as chapter 04 does: one `expf` per
/// element.
template <int kPack, int kPacks, int kWidth, int kRows, int kRowStride, typename Load, typename Store>
__device__ __forceinline__ void warp_rows(const Load& load, const Store& store, int64_t row0, int64_t rows,
                                          int64_t cols, bool log) {
  const int lane = threadIdx.x % kWidth;
  const unsigned mask = course::group_mask<kWidth>();
  auto col_of = [&](int p) { return (int64_t(p) * kWidth + lane) * kPack; };
  auto row_of = [&](int r) { return row0 + int64_t(r) * kRowStride; };  // the group's r-th row
  // Packs past the row's end (padding) and rows past the last are neither loaded nor used.
  auto here = [&](int r, int p) { return row_of(r) < rows && col_of(p) < cols; };

  RowRegs<Load, kPack, kPacks> x[kRows];
  const bool keep_exp = RowRegs<Load, kPack, kPacks>::kFloat && !log;
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(r, p)) x[r].fetch(load, p, row_of(r), col_of(p));
  float m[kRows], s[kRows], tmp[kPack];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    m[r] = -INFINITY;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (!here(r, p)) continue;
      const float* v = x[r].get(load, p, tmp);
#pragma unroll
      for (int j = 0; j < kPack; ++j) m[r] = fmaxf(m[r], v[j]);
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) m[r] = course::group_max<kWidth>(m[r], mask);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    s[r] = 0;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (!here(r, p)) continue;
      const float* v = x[r].get(load, p, tmp);
#pragma unroll
      for (int j = 0; j < kPack; ++j) {
        const float e = row_exp<Store::kFastExp>(v[j] - m[r]);
        s[r] += e;
        if (keep_exp) x[r].keep(p, j, e);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) s[r] = row_constant(course::group_sum<kWidth>(s[r], mask), log);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (!here(r, p)) continue;
      const float* v = x[r].get(load, p, tmp);
      float out[kPack];
#pragma unroll
      for (int j = 0; j < kPack; ++j) out[j] = keep_exp ? v[j] * s[r] : finish<Store::kFastExp>(v[j], m[r], s[r], log);
      store.template store<kPack>(out, row_of(r), col_of(p));
    }
  }
}

template <typename Load, typename Store, int kPack, int kColsPerThread, int kWidth, int kRows>
__global__ void __launch_bounds__(kWarpBlock)
    softmax_warp_kernel(Load load, Store store, int64_t rows, int64_t cols, bool log) {
  const int64_t group = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWidth;
  const int64_t row_step = int64_t(gridDim.x) * blockDim.x / kWidth * kRows;
  for (int64_t row0 = group * kRows; row0 < rows; row0 += row_step)
    warp_rows<kPack, kColsPerThread / kPack, kWidth, kRows, 1>(load, store, row0, rows, cols, log);
}
/// [warp_kernel]

/// [tile_kernel]
/// A load functor over a tile of whole rows in shared memory: rows `first` onwards of a row-major
/// tensor of `row_size` columns, as the bulk copy of softmax_tile_kernel lays them out. It fetches
/// and converts exactly as DirectLoad<T> does, from shared memory instead of global.
template <typename T>
struct TileLoad {
  using Cache = T;
  template <int kPack>
  using Fetched = typename DirectLoad<T>::template Fetched<kPack>;
  const T* tile;
  int64_t first;
  int row_size;  // a tile holds a few KB: 32-bit offsets
  template <int kPack, bool kReadOnly = false>
  __device__ __forceinline__ Fetched<kPack> fetch(int64_t row, int64_t col) const {
    return DirectLoad<T>{tile + int(row - first) * row_size, 0}.template fetch<kPack>(0, col);
  }
  template <int kPack>
  __device__ __forceinline__ void convert(const Fetched<kPack>& f, float* dst) const {
    DirectLoad<T>{}.template convert<kPack>(f, dst);
  }
  template <int kPack, bool kReadOnly = false>
  __device__ __forceinline__ void load(float* dst, int64_t row, int64_t col) const {
    convert<kPack>(fetch<kPack>(row, col), dst);
  }
};

/// The warp path's rows brought in by the block at once (sm_90 and later). One thread asks the copy
/// engine for the block's tile of kBlock / kWidth x kRows consecutive rows, a single contiguous
/// span of global memory (course::bulk_load), and the block waits for it on an mbarrier; then each
/// group of lanes runs the warp path's passes (warp_rows) on its rows of the tile, reading them from
/// shared memory, and stores its results from registers. The group's rows are `kGroups` apart in
/// the tile, so a warp's groups hold consecutive rows and each store instruction of a warp writes
/// one contiguous span. One tile per block, no grid-stride loop: the launcher gives every tile a
/// block (a loop's barrier between tiles cost about 1% at 32 and 64 fp32 columns). The rows must be
/// contiguous (a row stride of `cols`) with x 16-byte aligned and rows a multiple of 16 bytes
/// long: the dispatch takes this path with 16-byte packs only.
template <typename T, typename Store, int kPack, int kColsPerThread, int kWidth, int kRows, int kBlock>
__global__ void __launch_bounds__(kBlock)
    softmax_tile_kernel(DirectLoad<T> load, Store store, int64_t rows, int64_t cols, bool log) {
#if __CUDA_ARCH__ >= 900
  constexpr int kGroups = kBlock / kWidth;
  constexpr int kTileRows = kGroups * kRows;
  extern __shared__ __align__(128) unsigned char tile_smem[];
  __shared__ uint64_t landed;  // the mbarrier
  T* tile = reinterpret_cast<T*>(tile_smem);
  const int64_t first = int64_t(blockIdx.x) * kTileRows;
  if (threadIdx.x == 0) {
    course::bulk_barrier_init(&landed);
    const int64_t tile_rows = rows - first < kTileRows ? rows - first : kTileRows;
    course::bulk_load(tile, load.src + first * cols, unsigned(tile_rows * cols * int64_t(sizeof(T))), &landed);
  }
  __syncthreads();  // the barrier is initialized before anyone waits on it
  course::bulk_wait(&landed, 0);
  warp_rows<kPack, kColsPerThread / kPack, kWidth, kRows, kGroups>(TileLoad<T>{tile, first, int(cols)}, store,
                                                                   first + threadIdx.x / kWidth, rows, cols, log);
#endif
}
/// [tile_kernel]

/// [row_cache]
/// A row (or a chunk of one) in shared memory, in type C, kPack elements per thread-visit. A
/// pack is kept in 16-byte pieces laid out piece-major (chapter 06's transposed16 layout): piece
/// c of pack p at (c * num_packs + p). Consecutive threads touch consecutive 16-byte words, so a
/// warp's access is conflict-free whatever the pack's size; with one piece per pack (the usual
/// case: C is the storage type) it is the natural layout.
template <typename C, int kPack>
struct RowCache {
  static constexpr int kPiece = ch12::kPiece<C, kPack>;
  static constexpr int kPieces = kPack / kPiece;
  C* base;
  int num_packs;  // shared memory holds at most a few hundred KB: 32-bit indices
  __device__ __forceinline__ void put(int p, const float* v) const {
#pragma unroll
    for (int c = 0; c < kPieces; ++c) {
      course::Pack<C, kPiece> pk;
      course::ScalarConvert<C>::from_floats(v + c * kPiece, pk);
      course::store_pack<C, kPiece>(base + (c * num_packs + p) * kPiece, pk);
    }
  }
  __device__ __forceinline__ void get(int p, float* v) const {
#pragma unroll
    for (int c = 0; c < kPieces; ++c)
      course::ScalarConvert<C>::to_floats(course::load_pack<C, kPiece>(base + (c * num_packs + p) * kPiece),
                                          v + c * kPiece);
  }
};
/// [row_cache]

/// [smem_kernel]
/// A block per row (grid-stride over rows), the row cached in shared memory as C: read once from
/// global memory, then twice from shared memory (sum, write). C is Load::Cache (the storage type
/// for a plain load: half the shared memory of fp32 for 16-bit rows) or float. With a float cache
/// the softmax writes each exponential back in the sum pass (chapter 06), so the write pass only
/// multiplies; with a narrower cache it computes the exponential again. Each thread revisits only
/// its own packs, so the only barriers are the two reductions'. The launch bound asks for 1536
/// resident threads (at most 40 registers), measured to spill nothing where 2048 (32) spills.
/// The row is read through the read-only data path (x must not overlap y), each element once,
/// into shared memory. Measured on the H100 (same-session A/B, not kept as data): fp32 at 16384
/// columns +0.8%; the warp kernel with the same change lost up to 1% at 512 columns, so it keeps
/// plain loads.
template <typename C, typename Load, typename Store, int kPack, int kBlock>
__global__ void __launch_bounds__(kBlock, kPack >= 8 ? 1536 / kBlock : 1)
    softmax_smem_kernel(Load load, Store store, int64_t rows, int64_t cols, bool log) {
  constexpr bool kKeepExp = std::is_same_v<C, float>;  // the cache holds the exponentials exactly
  extern __shared__ __align__(16) unsigned char smem[];
  const int num_packs = int(cols / kPack);  // a row in shared memory: 32-bit indices (fewer registers)
  const RowCache<C, kPack> cache{reinterpret_cast<C*>(smem), num_packs};
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float m = -INFINITY;
    // A 16-bit row cached as fp32 loads one pack at a time: two would spill at 40 registers, and
    // four at 64 registers (fewer blocks) measured slower from 3072 to 16384 columns.
    constexpr int kUnroll = kKeepExp && kPack >= 8 ? 1 : (kPack >= 8 ? 2 : 4);
    for_each_pack<kBlock, kPack, kUnroll, true>(load, row, 0, num_packs, [&](int64_t p, const float* v) {
      cache.put(int(p), v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) m = fmaxf(m, v[j]);
    });
    m = block_allreduce<kBlock>(m, Max{}, -INFINITY);
    const bool keep_exp = kKeepExp && !log;
    float s = 0;
#pragma unroll 1  // one pack at a time: unrolling costs registers, and occupancy is what hides latency here
    for (int p = threadIdx.x; p < num_packs; p += kBlock) {
      float v[kPack];
      cache.get(p, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) {
        const float e = row_exp<Store::kFastExp>(v[j] - m);
        s += e;
        v[j] = e;
      }
      if (keep_exp) cache.put(p, v);
    }
    const float k = row_constant(block_allreduce<kBlock>(s, Sum{}, 0.0f), log);
#pragma unroll 1
    for (int p = threadIdx.x; p < num_packs; p += kBlock) {
      float v[kPack];
      cache.get(p, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) v[j] = keep_exp ? v[j] * k : finish<Store::kFastExp>(v[j], m, k, log);
      store.template store<kPack>(v, row, int64_t(p) * kPack);
    }
  }
}
/// [smem_kernel]

/// A block per row, nothing cached: the online pair in one read, then a second read to write
/// (chapter 08), for rows too long for shared memory when there are enough of them.
template <typename Load, typename Store, int kPack, int kBlock>
__global__ void __launch_bounds__(kBlock)
    softmax_uncached_kernel(Load load, Store store, int64_t rows, int64_t cols, bool log) {
  const int64_t num_packs = cols / kPack;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    course::MaxSum t;
    for_each_pack<kBlock, kPack>(load, row, 0, num_packs,
                                 [&](int64_t, const float* v) { course::online_update<kPack>(t, v); });
    t = course::block_merge<kBlock>(t);
    const float k = row_constant(t.d, log);
    for_each_pack<kBlock, kPack>(load, row, 0, num_packs, [&](int64_t p, const float* v) {
      float out[kPack];
#pragma unroll
      for (int j = 0; j < kPack; ++j) out[j] = finish<Store::kFastExp>(v[j], t.m, k, log);
      store.template store<kPack>(out, row, p * kPack);
    });
  }
}

/// [cluster_chunk]
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// The part of a row that one block of a cluster takes: the row is the cluster's (a cluster's
/// blocks are consecutive in blockIdx.x), and block `rank` takes packs [first, first + count),
/// chunk_packs of them or what is left (none for the last blocks of a short row).
struct ClusterChunk {
  int64_t row, first, count;
};
__device__ __forceinline__ ClusterChunk cluster_chunk(const cooperative_groups::cluster_group& cluster,
                                                      int64_t num_packs, int64_t chunk_packs) {
  const int64_t first = int64_t(cluster.block_rank()) * chunk_packs;
  const int64_t left = num_packs - first;
  return {int64_t(blockIdx.x / cluster.num_blocks()), first, left < chunk_packs ? (left > 0 ? left : 0) : chunk_packs};
}

/// Every block's `v` (its chunk's partial result, the same in all its threads) combined over the
/// cluster, returned to every thread: thread 0 publishes it in `mine`, and each warp reads the
/// blocks' values through distributed shared memory, lane r block r's, and reduces them with
/// `warp_reduce` (`identity` in the lanes past the cluster). Every block reads them in the same
/// order, so all get the same result.
template <typename V, typename WarpReduce>
__device__ __forceinline__ V cluster_allreduce(const cooperative_groups::cluster_group& cluster, V* mine, V v,
                                               V identity, WarpReduce warp_reduce) {
  if (threadIdx.x == 0) *mine = v;
  cluster.sync();  // every block's value is published
  const unsigned lane = threadIdx.x % 32;
  v = warp_reduce(lane < cluster.num_blocks() ? *cluster.map_shared_rank(mine, lane) : identity);
  cluster.sync();  // no block leaves (freeing its `mine`) while another may still read it
  return v;
}
#endif
/// [cluster_chunk]

/// [cluster_kernel]
/// Several blocks per row: a cluster of `csize` blocks (launch attribute) shares one row, block
/// `rank` taking packs [rank * chunk_packs, (rank + 1) * chunk_packs). Each block finds its
/// chunk's (m, d) pair, from its chunk cached in shared memory (kCached) or in one online read;
/// the blocks then read each other's pairs through distributed shared memory (DSMEM), merge them,
/// and write their chunk: from shared memory, or by reading it again (an L2 hit while the chunk
/// is fresh). One launch, no workspace, no second kernel. Needs sm_90 (clusters).
template <typename Load, typename Store, int kPack, int kBlock, bool kCached>
__global__ void __launch_bounds__(kBlock)
    softmax_cluster_kernel(Load load, Store store, int64_t cols, int64_t chunk_packs, bool log) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const ClusterChunk chunk = cluster_chunk(cluster, cols / kPack, chunk_packs);
  const int64_t row = chunk.row, first = chunk.first, count = chunk.count;
  extern __shared__ __align__(16) unsigned char smem[];
  const RowCache<typename Load::Cache, kPack> cache{reinterpret_cast<typename Load::Cache*>(smem), int(count)};
  __shared__ course::MaxSum mine;

  course::MaxSum t;
  if constexpr (kCached) {  // two passes over the cached chunk: exact max, then the sum
    float m = -INFINITY;
    for_each_pack<kBlock, kPack>(load, row, first, count, [&](int64_t p, const float* v) {
      cache.put(int(p), v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) m = fmaxf(m, v[j]);
    });
    m = block_allreduce<kBlock>(m, Max{}, -INFINITY);
    float s = 0;
    for (int64_t p = threadIdx.x; p < count; p += kBlock) {
      float v[kPack];
      cache.get(p, v);
#pragma unroll
      for (int j = 0; j < kPack; ++j) s += m == -INFINITY ? (isnan(v[j]) ? v[j] : 0.0f) : row_exp<Store::kFastExp>(v[j] - m);
    }
    t = {m, block_allreduce<kBlock>(s, Sum{}, 0.0f)};  // a chunk of -inf only: (-inf, 0), merged as such
  } else {
    for_each_pack<kBlock, kPack>(load, row, first, count,
                                 [&](int64_t, const float* v) { course::online_update<kPack>(t, v); });
    t = course::block_merge<kBlock>(t);
  }
  t = cluster_allreduce(cluster, &mine, t, course::MaxSum{}, [](course::MaxSum v) { return course::warp_merge(v); });
  const float k = row_constant(t.d, log);
  for (int64_t p = threadIdx.x; p < count; p += kBlock) {
    float v[kPack];
    if constexpr (kCached)
      cache.get(p, v);
    else
      load.template load<kPack>(v, row, (first + p) * kPack);
#pragma unroll
    for (int j = 0; j < kPack; ++j) v[j] = finish<Store::kFastExp>(v[j], t.m, k, log);
    store.template store<kPack>(v, row, (first + p) * kPack);
  }
#else
  __trap();  // the host never launches it below sm_90 (see cluster_path_available)
#endif
}
/// [cluster_kernel]

/// [block_regs_kernel]
/// Threads per block of the block-registers kernels at most: their block size is chosen at run
/// time (dispatch.cuh, block_regs_block), a multiple of 128 up to this.
constexpr int kBlockRegsMaxBlock = 1024;

/// A block per row with the row in registers: thread t holds packs t, t + blockDim.x, ... (kPacks
/// of them, a block apart, so that a warp's loads are contiguous), all loaded before any is used.
/// Then the warp kernel's three passes over registers, with the block's reductions in between:
/// no shared memory for the row, and every load of the row in flight at once. It serves fp32 rows
/// past the warp path's 1024 columns (a warp's registers hold no more), where cuDNN's kernel does
/// the same; the dispatch picks the block size that puts a given number of bytes in flight per SM.
template <typename Load, typename Store, int kPack, int kPacks>
__global__ void __launch_bounds__(kBlockRegsMaxBlock)
    softmax_block_regs_kernel(Load load, Store store, int64_t rows, int64_t cols, bool log) {
  const int num_packs = int(cols / kPack), block = int(blockDim.x);
  auto here = [&](int p) { return p * block + int(threadIdx.x) < num_packs; };
  auto col_of = [&](int p) { return int64_t(p * block + int(threadIdx.x)) * kPack; };
  const bool keep_exp = !log;  // the softmax keeps each exponential in place of its input
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float v[kPacks][kPack];
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(p)) load.template load<kPack>(v[p], row, col_of(p));
    float m = -INFINITY;
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(p))
#pragma unroll
        for (int j = 0; j < kPack; ++j) m = fmaxf(m, v[p][j]);
    m = block_allreduce<kBlockRegsMaxBlock>(m, Max{}, -INFINITY, block / 32);
    float s = 0;
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(p))
#pragma unroll
        for (int j = 0; j < kPack; ++j) {
          const float e = row_exp<Store::kFastExp>(v[p][j] - m);
          s += e;
          if (keep_exp) v[p][j] = e;
        }
    const float k = row_constant(block_allreduce<kBlockRegsMaxBlock>(s, Sum{}, 0.0f, block / 32), log);
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(p)) {
        float out[kPack];
#pragma unroll
        for (int j = 0; j < kPack; ++j) out[j] = keep_exp ? v[p][j] * k : finish<Store::kFastExp>(v[p][j], m, k, log);
        store.template store<kPack>(out, row, col_of(p));
      }
  }
}
/// [block_regs_kernel]

/// Attention's scale-and-mask as its own elementwise kernel, writing fp32 logits: the first of
/// the two kernels that the fused load replaces (the lesson measures both).
template <typename Load, typename Store, int kPack>
__global__ void apply_load_kernel(Load load, Store store, int64_t rows, int64_t cols) {
  const int64_t num_packs = cols / kPack;
  const int64_t n = rows * num_packs;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v[kPack];
    load.template load<kPack>(v, i / num_packs, (i % num_packs) * kPack);
    store.template store<kPack>(v, i / num_packs, (i % num_packs) * kPack);
  }
}

}  // namespace ch12
