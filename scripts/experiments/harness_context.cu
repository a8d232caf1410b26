// harness_context.cu: why does chapter 12's fp32 softmax at 49152 x 32 read 2-3% less in the
// course's harness (ch12_production_softmax: 1399-1430 GB/s) than in short_rows_compute.cu (1451-1467)
// on the same board, with the same kernel, grid, flush and event pair?
// The harness differs from that loop in four ways, each a variant here (the same kernel and grid):
//   stream:  the harness launches on a stream it created, the loop on the legacy default stream;
//   data:    the harness fills x with normal values of which one in 61 is scaled by 20 (outliers),
//            the loop with plain normal values;
//   buffers: the harness allocates each tensor at its exact size per benchmark, the loop one
//            50 MB buffer for x and one for y, shared by all shapes;
//   order:   the harness times 25 launches of one benchmark in a row after >= 50 ms of warm-up,
//            the loop one launch of each variant per round.
// Variants: loop (default stream, plain data, big buffers), stream, data, buffers, all three
// (harness-like), each timed by the course's method in rotated rounds; then `all` again timed as
// the harness does (50 ms of warm-up launches, then 25 in a row) five times.
// Built with -DWITH_API and linked with the chapter's launchers (dispatch.cu, softmax_*.cu) and
// the course's libraries, it adds `api` and `api_all`: loop and all launched through
// ch12::softmax / ch12::log_softmax, the function the harness's benchmark calls, instead of the
// kernel directly (what the chapter's dispatch does on the host before the launch).
// `copy` and `copy_data`: a copy kernel of the same launch shape on plain and on the harness's
// data; `fexp` and `fexp_data`: the chapter's kernel with ex2.approx as its exponential, on both.
// Usage: harness_context [ROUNDS]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels.cuh"  // chapters/12_production_softmax
#ifdef WITH_API
#include "softmax.cuh"
#endif

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "harness_context: %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

// The kernel's launch shape with nothing between load and store: 8 lanes of one float4 per row,
// two adjacent rows per group, as the chapter's kernel at 32 columns.
__global__ void __launch_bounds__(128) copy_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t rows) {
  const int64_t g = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 8, lane = threadIdx.x % 8;
  float4 v[2];
#pragma unroll
  for (int r = 0; r < 2; ++r)
    if (g * 2 + r < rows) v[r] = x[(g * 2 + r) * 8 + lane];
#pragma unroll
  for (int r = 0; r < 2; ++r)
    if (g * 2 + r < rows) y[(g * 2 + r) * 8 + lane] = v[r];
}

// The chapter's store with the 16-bit outputs' exponential (ex2.approx.ftz on x * log2(e)).
struct FastExpStore : ch12::DirectStore<float> {
  static constexpr bool kFastExp = true;
};

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 201;
  if (argc > 2 || rounds < 3 || rounds > 100000) {
    std::fprintf(stderr, "usage: harness_context [ROUNDS (3-100000)]\n");
    return 2;
  }
  int dev = 0, l2 = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  constexpr int64_t rows = 49152, cols = 32, n = rows * cols, big = rows * 256;
  const size_t bytes = size_t(n) * 4, flush_bytes = 2 * size_t(l2);
  float *x_big, *y_big, *x_exact, *y_exact, *x_out_big;
  void* flush;
  CHECK(cudaMalloc(&x_big, size_t(big) * 4));
  CHECK(cudaMalloc(&y_big, size_t(big) * 4));
  CHECK(cudaMalloc(&x_out_big, size_t(big) * 4));
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMalloc(&x_exact, bytes));
  CHECK(cudaMalloc(&y_exact, bytes));
  std::mt19937 gen(12);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> one_in(0, 60);
  std::vector<float> plain(static_cast<size_t>(n)), outl(static_cast<size_t>(n));
  for (size_t i = 0; i < plain.size(); ++i) {
    plain[i] = nd(gen);
    outl[i] = one_in(gen) == 0 ? 20.0f * plain[i] : plain[i];
  }
  CHECK(cudaMemcpy(x_big, plain.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(x_out_big, outl.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(x_exact, plain.data(), bytes, cudaMemcpyHostToDevice));
  cudaStream_t created;
  CHECK(cudaStreamCreate(&created));

  struct Variant {
    std::string name;
    cudaStream_t s;
    const float* x;
    float* y;
    std::vector<float> us;
    bool api = false;  // through the chapter's launcher
    int kernel = 0;    // 0 the chapter's kernel, 1 the copy kernel, 2 the chapter's kernel with FastExpStore
  };
  std::vector<Variant> vs = {{"loop", 0, x_big, y_big, {}},         {"stream", created, x_big, y_big, {}},
                             {"data", 0, x_out_big, y_big, {}},    {"buffers", 0, x_exact, y_exact, {}},
                             {"all", created, nullptr, y_exact, {}}};
  // `all`: exact buffers, outlier data, the created stream. Its x is an exact-size copy of outl.
  float* x_exact_out;
  CHECK(cudaMalloc(&x_exact_out, bytes));
  CHECK(cudaMemcpy(x_exact_out, outl.data(), bytes, cudaMemcpyHostToDevice));
  vs[4].x = x_exact_out;
  vs.push_back({"copy", 0, x_big, y_big, {}, false, 1});
  vs.push_back({"copy_data", 0, x_out_big, y_big, {}, false, 1});
  vs.push_back({"fexp", 0, x_big, y_big, {}, false, 2});
  vs.push_back({"fexp_data", 0, x_out_big, y_big, {}, false, 2});
#ifdef WITH_API
  vs.push_back({"api", 0, x_big, y_big, {}, true});
  vs.push_back({"api_all", created, x_exact_out, y_exact, {}, true});
#endif

  using L = ch12::DirectLoad<float>;
  using S = ch12::DirectStore<float>;
  const unsigned grid = unsigned(rows / 32);  // the chapter's grid at this shape: 8 lanes, 2 rows, 128 threads
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  unsigned value = 0;
  auto time_one = [&](const Variant& v, bool log) {
    CHECK(cudaMemsetAsync(flush, ++value & 0xff, flush_bytes, v.s));
    CHECK(cudaEventRecord(a, v.s));
    if (v.api) {
#ifdef WITH_API
      course::Args args;
      args.rows = rows;
      args.cols = cols;
      args.x = v.x;
      args.y = v.y;
      if (log) ch12::log_softmax<float>(args, v.s);
      else ch12::softmax<float>(args, v.s);
#endif
    } else if (v.kernel == 1) {
      copy_kernel<<<grid, 128, 0, v.s>>>(reinterpret_cast<const float4*>(v.x), reinterpret_cast<float4*>(v.y), rows);
    } else if (v.kernel == 2) {
      ch12::softmax_warp_kernel<L, FastExpStore, 4, 4, 8, 2><<<grid, ch12::kWarpBlock, 0, v.s>>>(
          L{v.x, cols}, FastExpStore{{v.y, cols}}, rows, cols, log);
    } else {
      ch12::softmax_warp_kernel<L, S, 4, 4, 8, 2><<<grid, ch12::kWarpBlock, 0, v.s>>>(L{v.x, cols}, S{v.y, cols},
                                                                                       rows, cols, log);
    }
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(b, v.s));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return 1e3f * ms;
  };
  auto median = [](std::vector<float> t) { std::sort(t.begin(), t.end()); return t[t.size() / 2]; };
  auto gbps = [&](float us) { return 2.0 * double(bytes) / (us * 1e-6) / 1e9; };
  for (bool log : {false, true}) {
    for (Variant& v : vs) v.us.clear();
    for (int r = 0; r < 10 + rounds; ++r)
      for (size_t j = 0; j < vs.size(); ++j) {
        Variant& v = vs[(j + size_t(r)) % vs.size()];
        const float us = time_one(v, log);
        if (r >= 10) v.us.push_back(us);
      }
    std::printf("%s fp32 %lld x %lld, %d rotated rounds: median us, GB/s, vs loop\n", log ? "log_softmax" : "softmax",
                (long long)rows, (long long)cols, rounds);
    const float ref = median(vs[0].us);
    for (const Variant& v : vs)
      std::printf("  %-8s %7.3f us %6.0f GB/s  vs loop %+6.2f%%\n", v.name.c_str(), median(v.us), gbps(median(v.us)),
                  100.0 * (ref / median(v.us) - 1.0));
    // As the harness times: warm-up for 50 ms, then 25 launches in a row; five times, alternating
    // `all` and `loop`.
    std::vector<int> order = {4, 0};
    if (vs.size() > 9) order = {4, 0, 10, 9};  // with the launcher: api_all and api too
    for (int rep = 0; rep < 5; ++rep)
      for (int which : order) {
        const Variant& v = vs[size_t(which)];
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 10 || std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50); ++i)
          time_one(v, log);
        std::vector<float> t;
        for (int i = 0; i < 25; ++i) t.push_back(time_one(v, log));
        std::printf("  harness-order %-7s rep %d: %7.3f us %6.0f GB/s\n", v.name.c_str(), rep, median(t),
                    gbps(median(t)));
      }
  }
  return 0;
}
