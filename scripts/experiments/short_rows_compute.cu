// short_rows_compute.cu: does the arithmetic between a row's loads and its stores cost time at
// fp32 rows of 32 and 64 columns (49152 rows), where chapter 12's forward reads 1-2% under
// OneFlow's figure of shared/targets/h100-peers.md? There the grid is under one wave, every load
// is issued at once, and each thread's store waits on the reductions and exponentials of its rows.
//
// Times, by the course's method (a memset of 2x L2 before each launch, one event pair around the
// launch, warm-up rounds, the median), in turns with the order rotated each round:
//   prod   chapter 12's warp kernel (kernels.cuh) at the chapter's shape, launched as the chapter does;
//   base   the same arithmetic in a stand-alone kernel of the same shape (no grid-stride loop, the
//          log flag a template parameter): the reference for the variants below;
//   fexp   base with the exponential as ex2.approx.ftz on x*log2(e) (the 16-bit outputs' row_exp);
//   frcp   base with 1/sum (softmax) or log(sum) (log-softmax) from the SFU's approximations;
//   i32    base with 32-bit row and column arithmetic;
//   lean   fexp + frcp + i32;
//   copy   the same loads and stores, no arithmetic (what this launch shape reads with nothing
//          between load and store);
//   memcpy cudaMemcpyAsync of the same bytes.
// Every variant's output is checked against a double-precision softmax (|got - ref| <= 1e-6 +
// 1e-5 |ref|, the course's fp32 tolerance) on rows N(0, 1) and on rows N(0, 10) (exponents down to
// about -90: where an approximate exponential would err most), except `copy`, checked as a copy.
// Usage: short_rows_compute [ROUNDS]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels.cuh"  // chapters/12_production_softmax

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "short_rows_compute: %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

enum Mode : int { kFexp = 1, kFrcp = 2, kI32 = 4, kCopy = 8, kIlvMode = 16 };

template <int kMode>
__device__ __forceinline__ float xexp(float x) {
  if constexpr ((kMode & kFexp) != 0) {
    float e;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x * 1.44269504088896341f));
    return e;
  } else {
    return expf(x);
  }
}
template <int kMode, bool kLog>
__device__ __forceinline__ float xconstant(float s) {
  if constexpr ((kMode & kFrcp) != 0) {
    float r;
    if constexpr (kLog) {
      asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(s));
      return r * 0.693147180559945309f;
    } else {
      asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(s));
      return r;
    }
  } else {
    return kLog ? logf(s) : 1.0f / s;
  }
}

// A group of kWidth lanes per row, kRows rows per group, kPacks float4 per lane per row: the
// chapter's warp kernel for fp32 without the functors. At most 40 registers (12 blocks of 128 per
// SM), as the chapter's kernel at 64 columns: the grid of 1536 blocks stays within one wave.
template <int kPacks, int kWidth, int kRows, bool kLog, int kMode>
__global__ void __launch_bounds__(128, 12) xkernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows64,
                                               int64_t cols64) {
  using I = std::conditional_t<(kMode & kI32) != 0, int, int64_t>;
  const I rows = I(rows64), cols = I(cols64);
  const int lane = threadIdx.x % kWidth;
  const unsigned mask = course::group_mask<kWidth>();
  constexpr int kStride = (kMode & kIlvMode) != 0 ? 128 / kWidth : 1;  // as pkernel's kIlv
  const I row0 = (kMode & kIlvMode) != 0 ? I(blockIdx.x) * (128 / kWidth * kRows) + I(threadIdx.x) / kWidth
                                         : (I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x)) / kWidth * kRows;
  auto col_of = [&](int p) { return (I(p) * kWidth + lane) * 4; };
  auto here = [&](I row, int p) { return row < rows && col_of(p) < cols; };
  float4 v[kRows][kPacks];
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(row0 + r * kStride, p)) v[r][p] = *reinterpret_cast<const float4*>(x + (row0 + r * kStride) * cols + col_of(p));
  if constexpr ((kMode & kCopy) == 0) {
    float m[kRows], s[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      m[r] = -INFINITY;
#pragma unroll
      for (int p = 0; p < kPacks; ++p)
        if (here(row0 + r * kStride, p)) m[r] = fmaxf(fmaxf(fmaxf(m[r], v[r][p].x), fmaxf(v[r][p].y, v[r][p].z)), v[r][p].w);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) m[r] = course::group_max<kWidth>(m[r], mask);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      s[r] = 0;
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        if (!here(row0 + r * kStride, p)) continue;
        float4& q = v[r][p];
        const float ex = xexp<kMode>(q.x - m[r]), ey = xexp<kMode>(q.y - m[r]);
        const float ez = xexp<kMode>(q.z - m[r]), ew = xexp<kMode>(q.w - m[r]);
        s[r] += ex + ey + ez + ew;
        if constexpr (!kLog) q = make_float4(ex, ey, ez, ew);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) s[r] = xconstant<kMode, kLog>(course::group_sum<kWidth>(s[r], mask));
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        float4& q = v[r][p];
        if constexpr (kLog) {
          q = make_float4(q.x - m[r] - s[r], q.y - m[r] - s[r], q.z - m[r] - s[r], q.w - m[r] - s[r]);
        } else {
          q = make_float4(q.x * s[r], q.y * s[r], q.z * s[r], q.w * s[r]);
        }
      }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(row0 + r * kStride, p)) *reinterpret_cast<float4*>(y + (row0 + r * kStride) * cols + col_of(p)) = v[r][p];
}

__device__ __forceinline__ bool flag_of(bool b) { return b; }
template <bool B>
__device__ __forceinline__ constexpr bool flag_of(std::integral_constant<bool, B>) { return B; }

// Chapter 12's warp kernel (kernels.cuh, softmax_warp_kernel) as it stands, with two switches:
// kHoist compiles the body once per operation (the log flag a compile-time constant: with_log, as
// the backward's warp kernel does) instead of branching on it; kOnePass runs the row loop once
// (valid here: the experiment's grid covers every row). With both off it is the chapter's kernel.
template <typename Load, typename Store, int kPack, int kColsPerThread, int kWidth, int kRows, bool kHoist,
          bool kOnePass, bool kIlv = false>
__global__ void __launch_bounds__(ch12::kWarpBlock)
    pkernel(Load load, Store store, int64_t rows, int64_t cols, bool log_flag) {
  using namespace ch12;
  constexpr int kPacks = kColsPerThread / kPack;
  const int lane = threadIdx.x % kWidth;
  const unsigned mask = course::group_mask<kWidth>();
  const int64_t group = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWidth;
  const int64_t row_step = int64_t(gridDim.x) * blockDim.x / kWidth * kRows;
  // kIlv: the block's groups take its kRows x groups rows so that the r-th row of every group
  // lies in one run of consecutive rows (one contiguous span per load instruction of the block).
  constexpr int kGroups = ch12::kWarpBlock / kWidth;
  const int64_t first = kIlv ? int64_t(blockIdx.x) * kGroups * kRows + threadIdx.x / kWidth : group * kRows;
  constexpr int kRowStride = kIlv ? kGroups : 1;
  auto col_of = [&](int p) { return (int64_t(p) * kWidth + lane) * kPack; };
  auto here = [&](int64_t row, int p) { return row < rows && col_of(p) < cols; };
  auto body = [&](auto log_c) {
    const bool log = flag_of(log_c);
    RowRegs<Load, kPack, kPacks> x[kRows];
    const bool keep_exp = RowRegs<Load, kPack, kPacks>::kFloat && !log;
    for (int64_t row0 = first; row0 < rows; row0 += row_step) {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int p = 0; p < kPacks; ++p)
          if (here(row0 + r * kRowStride, p)) x[r].fetch(load, p, row0 + r * kRowStride, col_of(p));
      float m[kRows], s[kRows], tmp[kPack];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        m[r] = -INFINITY;
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
          if (!here(row0 + r * kRowStride, p)) continue;
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
          if (!here(row0 + r * kRowStride, p)) continue;
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
          if (!here(row0 + r * kRowStride, p)) continue;
          const float* v = x[r].get(load, p, tmp);
          float out[kPack];
#pragma unroll
          for (int j = 0; j < kPack; ++j)
            out[j] = keep_exp ? v[j] * s[r] : finish<Store::kFastExp>(v[j], m[r], s[r], log);
          store.template store<kPack>(out, row0 + r * kRowStride, col_of(p));
        }
      }
      if constexpr (kOnePass) break;
    }
  };
  if constexpr (kHoist)
    with_log(log_flag, body);
  else
    body(log_flag);
}

struct Variant {
  std::string name;
  std::function<void(const float*)> launch;
  bool copy = false;  // its output is its input
  std::vector<float> us;
};

// One shape (kWidth lanes of kPacks float4 per row, two rows per group: the chapter's shape at
// 32, 64, 128 and 256 columns), one operation.
template <int kPacks, int kWidth>
int run(bool log, int rounds, float* y, void* flush, size_t flush_bytes, int64_t rows,
        const std::vector<float>& hx_normal, const std::vector<float>& hx_wide, float* dx) {
  constexpr int64_t cols = 4 * kPacks * kWidth;
  const int64_t n = rows * cols, bytes = n * 4;
  const unsigned grid = unsigned(rows / (128 / kWidth * 2));  // the chapter's grid at these shapes
  using L = ch12::DirectLoad<float>;
  using S = ch12::DirectStore<float>;
  auto prod = [&](auto kernel) {
    return [=](const float* in) { kernel<<<grid, ch12::kWarpBlock>>>(L{in, cols}, S{y, cols}, rows, cols, log); };
  };
  auto alone = [&](auto kernel) { return [=](const float* in) { kernel<<<grid, 128>>>(in, y, rows, cols); }; };
  std::vector<Variant> vs;
  vs.push_back({"memcpy", [=](const float* in) { CHECK(cudaMemcpyAsync(y, in, bytes, cudaMemcpyDeviceToDevice)); }, true});
  vs.push_back({"prod", prod(ch12::softmax_warp_kernel<L, S, 4, 4 * kPacks, kWidth, 2>)});
  vs.push_back({"pcopy", prod(pkernel<L, S, 4, 4 * kPacks, kWidth, 2, false, false>)});
  vs.push_back({"onepass", prod(pkernel<L, S, 4, 4 * kPacks, kWidth, 2, false, true>)});
  vs.push_back({"ilv", prod(pkernel<L, S, 4, 4 * kPacks, kWidth, 2, false, false, true>)});
  vs.push_back({"copy", alone(xkernel<kPacks, kWidth, 2, false, kCopy>), true});
  vs.push_back({"copyilv", alone(xkernel<kPacks, kWidth, 2, false, kCopy | kIlvMode>), true});
  auto launch = [&](const Variant& v, const float* in) {
    v.launch(in);
    CHECK(cudaGetLastError());
  };
  // Correctness first: each variant on both inputs against float64.
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
        std::fprintf(stderr, "short_rows_compute: %s failed on %lld elements\n", v.name.c_str(), (long long)bad);
        return 1;
      }
      std::printf("  checked %-7s %-11s cols %-3lld input %-6s worst relative error %.2e\n", v.name.c_str(),
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
  auto median = [](std::vector<float> t) { std::sort(t.begin(), t.end()); return t[t.size() / 2]; };
  const float ref = median(vs[1].us);
  std::printf("%s fp32 %lld x %lld, %d rounds: median us, GB/s (read + written), spread (max-min)/median, vs prod\n",
              log ? "log_softmax" : "softmax", (long long)rows, (long long)cols, rounds);
  for (const Variant& v : vs) {
    const float med = median(v.us);
    const float lo = *std::min_element(v.us.begin(), v.us.end()), hi = *std::max_element(v.us.begin(), v.us.end());
    std::printf("  %-8s %7.3f us %6.0f GB/s  spread %6.1f%%  vs prod %+6.2f%%\n", v.name.c_str(), med,
                2.0 * double(bytes) / (med * 1e-6) / 1e9, 100.0 * (hi - lo) / med, 100.0 * (ref / med - 1.0));
  }
  return 0;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 101;
  if (argc > 2 || rounds < 3 || rounds > 100000) {
    std::fprintf(stderr, "usage: short_rows_compute [ROUNDS (3-100000)]\n");
    return 2;
  }
  int dev = 0, l2 = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const int64_t rows = 49152, max_n = rows * 256;
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
    rc |= run<1, 8>(log, rounds, y, flush, flush_bytes, rows, normal, wide, x);
    rc |= run<2, 8>(log, rounds, y, flush, flush_bytes, rows, normal, wide, x);
    rc |= run<2, 16>(log, rounds, y, flush, flush_bytes, rows, normal, wide, x);
    rc |= run<4, 16>(log, rounds, y, flush, flush_bytes, rows, normal, wide, x);
  }
  return rc;
}
