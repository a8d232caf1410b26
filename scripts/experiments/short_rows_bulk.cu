// short_rows_bulk.cu: can a block-wide bulk copy (Hopper's cp.async.bulk, the TMA's one-dimensional
// form) move fp32 rows of 32 and 64 columns faster than chapter 12's warp kernel?
//
// Background (plots/data/h100-80gb-hbm3/experiments/short_rows/compute): at 49152 x 32 a copy kernel
// whose load instructions each cover one contiguous span of the block ("copyilv") read 4-5% more
// than the chapter's launch shape, and level with or above cudaMemcpyAsync; the softmax laid out the
// same way did not gain, because each thread waits on both of its rows' loads before it reduces.
// A bulk copy asks for the block's whole tile of rows (one contiguous span) in one instruction and
// lands it in shared memory; the threads then read their rows from there.
//
// Variants, timed by the course's method (a memset of 2x L2 before each launch, one event pair around
// the launch, warm-up rounds, the median), in turns with the order rotated each round:
//   memcpy   cudaMemcpyAsync of the same bytes;
//   prod     chapter 12's warp kernel (kernels.cuh) at the chapter's shape and grid;
//   copyilv  a copy of the chapter's shape, the block's rows interleaved (the earlier experiment's);
//   bulkT    the block's tile of rows (T threads, 8 lanes and two rows per group) brought into shared
//            memory by one cp.async.bulk, waited on through an mbarrier; results stored from
//            registers, float4 per lane, four consecutive rows per warp instruction;
//   bulkstT  the same, the results written back to the tile and stored by one bulk copy;
//   bcopyT   bulkstT without the arithmetic (what the bulk copies alone read at this shape);
//   ch12tile chapter 12's tile kernel (kernels.cuh, softmax_tile_kernel), launched with the block its
//            dispatch takes (8 KB of rows: 256 threads at 32 columns, 128 at 64).
// Every variant's output is checked against a double-precision softmax (the course's fp32 tolerance)
// on rows N(0, 1) and N(0, 10), on a poisoned output; the copies are checked as copies.
// Usage: short_rows_bulk [ROUNDS]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels.cuh"  // chapters/12_production_softmax

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "short_rows_bulk: %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// The earlier experiment's interleaved copy: kWidth lanes of kPacks float4 per row, two rows per
// group, the r-th row of every group of the block in one run of consecutive rows.
template <int kPacks, int kWidth>
__global__ void __launch_bounds__(128) copy_ilv(const float* __restrict__ x, float* __restrict__ y, int64_t rows) {
  constexpr int64_t cols = 4 * kPacks * kWidth;
  constexpr int kGroups = 128 / kWidth;
  const int lane = threadIdx.x % kWidth;
  const int64_t row0 = int64_t(blockIdx.x) * kGroups * 2 + threadIdx.x / kWidth;
  float4 v[2][kPacks];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (row0 + r * kGroups < rows)
        v[r][p] = *reinterpret_cast<const float4*>(x + (row0 + r * kGroups) * cols + (p * kWidth + lane) * 4);
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (row0 + r * kGroups < rows)
        *reinterpret_cast<float4*>(y + (row0 + r * kGroups) * cols + (p * kWidth + lane) * 4) = v[r][p];
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// kStore: 0 stores from registers, 1 writes the tile back and stores it by one bulk copy, 2 the same
// with no arithmetic (a copy). Groups of 8 lanes, kPacks float4 per lane per row, two rows per group.
template <int kPacks, int kThreads, bool kLog, int kStore>
__global__ void __launch_bounds__(kThreads) bulk_kernel(const float* __restrict__ x, float* __restrict__ y,
                                                        int64_t rows) {
  constexpr int kWidth = 8;
  constexpr int kCols = 4 * kPacks * kWidth;
  constexpr int kGroups = kThreads / kWidth;
  constexpr int kTileRows = kGroups * 2;
  __shared__ alignas(128) float4 tile[kTileRows * kCols / 4];
  __shared__ alignas(8) unsigned long long bar;
  const int64_t first = int64_t(blockIdx.x) * kTileRows;
  const int tile_rows = int(rows - first < kTileRows ? rows - first : kTileRows);
  const unsigned bytes = unsigned(tile_rows) * kCols * 4;
  const unsigned sbar = smem_addr(&bar), stile = smem_addr(tile);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sbar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sbar), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(stile),
                 "l"(x + first * kCols), "r"(bytes), "r"(sbar)
                 : "memory");
  }
  __syncthreads();  // the barrier is initialized before anyone waits on it
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(sbar)
        : "memory");
  const int lane = threadIdx.x % kWidth, group = threadIdx.x / kWidth;
  // Row r of this group: tile row group + r * kGroups (a warp's four groups: four consecutive rows).
  float4 v[2][kPacks];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int p = 0; p < kPacks; ++p) v[r][p] = tile[((group + r * kGroups) * kCols + (p * kWidth + lane) * 4) / 4];
  if constexpr (kStore != 2) {
    const unsigned mask = 0xffffffffu;
    float m[2], s[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      m[r] = -INFINITY;
#pragma unroll
      for (int p = 0; p < kPacks; ++p)
        m[r] = fmaxf(fmaxf(fmaxf(m[r], v[r][p].x), fmaxf(v[r][p].y, v[r][p].z)), v[r][p].w);
#pragma unroll
      for (int o = kWidth / 2; o > 0; o /= 2) m[r] = fmaxf(m[r], __shfl_xor_sync(mask, m[r], o));
      s[r] = 0;
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        float4& q = v[r][p];
        const float ex = expf(q.x - m[r]), ey = expf(q.y - m[r]), ez = expf(q.z - m[r]), ew = expf(q.w - m[r]);
        s[r] += ex + ey + ez + ew;
        if constexpr (!kLog) q = make_float4(ex, ey, ez, ew);
      }
#pragma unroll
      for (int o = kWidth / 2; o > 0; o /= 2) s[r] += __shfl_xor_sync(mask, s[r], o);
      const float c = kLog ? logf(s[r]) : 1.0f / s[r];
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        float4& q = v[r][p];
        q = kLog ? make_float4(q.x - m[r] - c, q.y - m[r] - c, q.z - m[r] - c, q.w - m[r] - c)
                 : make_float4(q.x * c, q.y * c, q.z * c, q.w * c);
      }
    }
  }
  if constexpr (kStore == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int p = 0; p < kPacks; ++p)
        if (group + r * kGroups < tile_rows)
          *reinterpret_cast<float4*>(y + (first + group + r * kGroups) * kCols + (p * kWidth + lane) * 4) = v[r][p];
  } else {
    if constexpr (kStore == 1) {
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int p = 0; p < kPacks; ++p) tile[((group + r * kGroups) * kCols + (p * kWidth + lane) * 4) / 4] = v[r][p];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes, then the bulk copy reads
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(y + first * kCols), "r"(stile),
                   "r"(bytes)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // the tile outlives the copy's reads
    }
  }
}

struct Variant {
  std::string name;
  std::function<void(const float*)> launch;
  bool copy = false;  // its output is its input
  std::vector<float> us;
};

template <int kPacks>
int run(bool log, int rounds, float* y, void* flush, size_t flush_bytes, int64_t rows,
        const std::vector<float>& hx_normal, const std::vector<float>& hx_wide, float* dx) {
  constexpr int kWidth = 8;
  constexpr int64_t cols = 4 * kPacks * kWidth;
  const int64_t n = rows * cols, bytes = n * 4;
  const unsigned grid = unsigned(rows / (128 / kWidth * 2));  // the chapter's grid at these shapes
  using L = ch12::DirectLoad<float>;
  using S = ch12::DirectStore<float>;
  std::vector<Variant> vs;
  vs.push_back({"memcpy", [=](const float* in) { CHECK(cudaMemcpyAsync(y, in, bytes, cudaMemcpyDeviceToDevice)); }, true});
  vs.push_back({"prod", [=](const float* in) {
                  ch12::softmax_warp_kernel<L, S, 4, 4 * kPacks, kWidth, 2>
                      <<<grid, ch12::kWarpBlock>>>(L{in, cols}, S{y, cols}, rows, cols, log);
                }});
  vs.push_back({"copyilv", [=](const float* in) { copy_ilv<kPacks, kWidth><<<grid, 128>>>(in, y, rows); }, true});
  auto bulk = [&](auto kernel, int threads, const char* name, bool copy) {
    const int tile = threads / kWidth * 2;
    const unsigned g = unsigned((rows + tile - 1) / tile);
    vs.push_back({name, [=](const float* in) { kernel<<<g, threads>>>(in, y, rows); }, copy});
  };
  if (log) {
    bulk(bulk_kernel<kPacks, 64, true, 0>, 64, "bulk64", false);
    bulk(bulk_kernel<kPacks, 128, true, 0>, 128, "bulk128", false);
    bulk(bulk_kernel<kPacks, 256, true, 0>, 256, "bulk256", false);
    bulk(bulk_kernel<kPacks, 128, true, 1>, 128, "bulkst128", false);
  } else {
    bulk(bulk_kernel<kPacks, 64, false, 0>, 64, "bulk64", false);
    bulk(bulk_kernel<kPacks, 128, false, 0>, 128, "bulk128", false);
    bulk(bulk_kernel<kPacks, 256, false, 0>, 256, "bulk256", false);
    bulk(bulk_kernel<kPacks, 128, false, 1>, 128, "bulkst128", false);
  }
  if (kPacks == 1) {
    if (log) bulk(bulk_kernel<kPacks, 512, true, 0>, 512, "bulk512", false);
    else bulk(bulk_kernel<kPacks, 512, false, 0>, 512, "bulk512", false);
  }
  {  // chapter 12's tile kernel (kernels.cuh) with the dispatch's block: 8 KB of rows
    constexpr int kBlock = kPacks == 1 ? 256 : 128;
    constexpr int kTile = kBlock / kWidth * 2;
    const unsigned g = unsigned((rows + kTile - 1) / kTile);
    const size_t smem = size_t(kTile) * cols * 4;
    vs.push_back({"ch12tile", [=](const float* in) {
                    ch12::softmax_tile_kernel<float, S, 4, 4 * kPacks, kWidth, 2, kBlock>
                        <<<g, kBlock, smem>>>(L{in, cols}, S{y, cols}, rows, cols, log);
                  }});
  }
  bulk(bulk_kernel<kPacks, 128, false, 2>, 128, "bcopy128", true);
  bulk(bulk_kernel<kPacks, 256, false, 2>, 256, "bcopy256", true);
  auto launch = [&](const Variant& v, const float* in) {
    v.launch(in);
    CHECK(cudaGetLastError());
  };
  std::vector<float> got(size_t(n), 0.0f);
  for (const std::vector<float>* hx : {&hx_normal, &hx_wide}) {
    CHECK(cudaMemcpy(dx, hx->data(), size_t(bytes), cudaMemcpyHostToDevice));
    for (const Variant& v : vs) {
      CHECK(cudaMemset(y, 0xff, size_t(bytes)));  // poisoned: NaN
      launch(v, dx);
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpy(got.data(), y, size_t(bytes), cudaMemcpyDeviceToHost));
      int64_t bad = 0;
      double worst = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = hx->data() + r * cols;
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < cols; ++c) m = std::max(m, double(xr[c]));
        for (int64_t c = 0; c < cols; ++c) s += std::exp(double(xr[c]) - m);
        for (int64_t c = 0; c < cols; ++c) {
          double ref;
          if (v.copy) ref = xr[c];
          else ref = log ? double(xr[c]) - m - std::log(s) : std::exp(double(xr[c]) - m) / s;
          const double g = got[size_t(r * cols + c)], err = std::fabs(g - ref);
          const double tol = (log ? 1e-6 * std::max(1.0, std::fabs(m)) : 1e-6) + 1e-5 * std::fabs(ref);
          if (!(err <= tol)) {
            if (bad++ < 3)
              std::fprintf(stderr, "  %s %s cols %lld row %lld col %lld: got %.9g ref %.9g\n", v.name.c_str(),
                           log ? "log_softmax" : "softmax", (long long)cols, (long long)r, (long long)c, g, ref);
          } else if (ref != 0) {
            worst = std::max(worst, err / std::fabs(ref));
          }
        }
      }
      if (bad) {
        std::fprintf(stderr, "short_rows_bulk: %s failed on %lld elements\n", v.name.c_str(), (long long)bad);
        return 1;
      }
      std::printf("  checked %-9s %-11s cols %-3lld input %-6s worst relative error %.2e\n", v.name.c_str(),
                  log ? "log_softmax" : "softmax", (long long)cols, hx == &hx_normal ? "N(0,1)" : "N(0,10)", worst);
    }
  }
  CHECK(cudaMemcpy(dx, hx_normal.data(), size_t(bytes), cudaMemcpyHostToDevice));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const int warmup = 10;
  unsigned value = 0;
  for (int r = 0; r < warmup + rounds; ++r)
    for (size_t j = 0; j < vs.size(); ++j) {
      Variant& v = vs[(j + size_t(r)) % vs.size()];
      CHECK(cudaMemsetAsync(flush, ++value & 0xff, flush_bytes));
      CHECK(cudaEventRecord(a));
      launch(v, dx);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      if (r >= warmup) v.us.push_back(1e3f * ms);
    }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  auto median = [](std::vector<float> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const float ref = median(vs[1].us);
  std::printf("%s fp32 %lld x %lld, %d rounds: median us, GB/s (read + written), spread (max-min)/median, vs prod\n",
              log ? "log_softmax" : "softmax", (long long)rows, (long long)cols, rounds);
  for (const Variant& v : vs) {
    const float med = median(v.us);
    const float lo = *std::min_element(v.us.begin(), v.us.end()), hi = *std::max_element(v.us.begin(), v.us.end());
    std::printf("  %-9s %7.3f us %6.0f GB/s  spread %6.1f%%  vs prod %+6.2f%%\n", v.name.c_str(), med,
                2.0 * double(bytes) / (med * 1e-6) / 1e9, 100.0 * (hi - lo) / med, 100.0 * (ref / med - 1.0));
  }
  return 0;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 101;
  if (argc > 2 || rounds < 3 || rounds > 100000) {
    std::fprintf(stderr, "usage: short_rows_bulk [ROUNDS (3-100000)]\n");
    return 2;
  }
  int dev = 0, l2 = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const int64_t rows = 49152, max_n = rows * 64;
  const size_t flush_bytes = 2 * size_t(l2);
  float *x, *y;
  void* flush;
  CHECK(cudaMalloc(&x, size_t(max_n) * 4));
  CHECK(cudaMalloc(&y, size_t(max_n) * 4));
  CHECK(cudaMalloc(&flush, flush_bytes));
  std::mt19937 gen(12);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> normal(static_cast<size_t>(max_n)), wide(static_cast<size_t>(max_n));
  for (size_t i = 0; i < normal.size(); ++i) normal[i] = nd(gen), wide[i] = 10.0f * nd(gen);
  int rc = 0;
  for (bool log : {false, true}) {
    rc |= run<1>(log, rounds, y, flush, flush_bytes, rows, normal, wide, x);
    rc |= run<2>(log, rounds, y, flush, flush_bytes, rows, normal, wide, x);
  }
  return rc;
}
