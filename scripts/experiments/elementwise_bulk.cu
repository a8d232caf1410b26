// elementwise_bulk.cu: does a block-wide bulk copy of the input (Hopper's cp.async.bulk) speed up
// chapter 11's elementwise kernels where they trail the peers: fp32 GELU and the fp32 -> fp16 cast
// at 2^20 and 2^24 elements? Chapter 12's tile path gained 3% at 6 MB tensors this way
// (plots/data/h100-80gb-hbm3/experiments/short_rows/bulk and tile).
//
// Variants, timed by the course's method (a memset of 2x L2 before each launch, one event pair around
// the launch, warm-up rounds, the median), in turns with the order rotated each round:
//   pack     chapter 11's launcher (ew::Unary: one 16-byte pack per thread, the grid holding them all);
//   bulkT_B  a block of T threads takes B bytes of the input: one thread asks the copy engine for
//            them (course::bulk_load), the block waits on an mbarrier, then each thread applies the
//            functor to its packs read from shared memory (consecutive threads, consecutive packs)
//            and stores them from registers;
//   memcpy   cudaMemcpyAsync of the input's bytes (GELU only: the same bytes each way).
// Every variant's output is checked bit for bit against chapter 11's `pack` (the same functor on the
// same input), on a poisoned output.
// Usage: elementwise_bulk [ROUNDS]
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "course/bulk_copy.cuh"
#include "elementwise.cuh"  // chapters/11_elementwise_template
#include "functors.cuh"

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "elementwise_bulk: %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

// kThreads threads, kBytes of input per block (a multiple of kThreads x 16); n a multiple of the
// tile's elements (the experiment's sizes are).
template <int kThreads, int kBytes, typename F, typename R, typename In>
__global__ void __launch_bounds__(kThreads) bulk_kernel(F f, const In* __restrict__ x, R* __restrict__ y) {
  constexpr int kPack = 16 / int(sizeof(In));
  constexpr int kElems = kBytes / int(sizeof(In));
  constexpr int kPacksPerThread = kElems / kPack / kThreads;
  static_assert(kPacksPerThread >= 1 && kElems % (kPack * kThreads) == 0, "tile");
  __shared__ alignas(128) In tile[kElems];
  __shared__ uint64_t landed;
  const int64_t first = int64_t(blockIdx.x) * kElems;
  if (threadIdx.x == 0) {
    course::bulk_barrier_init(&landed);
    course::bulk_load(tile, x + first, unsigned(kBytes), &landed);
  }
  __syncthreads();
  course::bulk_wait(&landed, 0);
#pragma unroll
  for (int k = 0; k < kPacksPerThread; ++k) {
    const int p = k * kThreads + threadIdx.x;
    const course::Pack<In, kPack> in = course::load_pack<In, kPack>(tile + p * kPack);
    course::Pack<R, kPack> out;
    ew::apply_pack<kPack>(f, out.elem, in.elem);
    course::store_pack<R, kPack>(y + first + int64_t(p) * kPack, out);
  }
}

struct Variant {
  std::string name;
  std::function<void()> launch;
  std::vector<float> us;
};

template <typename F, typename R>
int run(const char* op, F f, int64_t n, int rounds, const float* x, R* y, void* flush, size_t flush_bytes) {
  const double bytes = double(n) * (sizeof(float) + sizeof(R));
  std::vector<Variant> vs;
  vs.push_back({"pack", [=] { ew::Unary(0, ew::SimpleFactory<F>{f}, n, y, x); }});
  if (sizeof(R) == sizeof(float))
    vs.push_back({"memcpy", [=] { CHECK(cudaMemcpyAsync(y, x, size_t(n) * 4, cudaMemcpyDeviceToDevice)); }});
  auto bulk = [&](auto kernel, int threads, int tile_bytes, const char* name) {
    const unsigned g = unsigned(n * 4 / tile_bytes);
    vs.push_back({name, [=] { kernel<<<g, threads>>>(f, x, y); }});
  };
  bulk(bulk_kernel<128, 4096, F, R, float>, 128, 4096, "bulk128_4k");
  bulk(bulk_kernel<256, 8192, F, R, float>, 256, 8192, "bulk256_8k");
  bulk(bulk_kernel<128, 8192, F, R, float>, 128, 8192, "bulk128_8k");
  bulk(bulk_kernel<256, 16384, F, R, float>, 256, 16384, "bulk256_16k");
  bulk(bulk_kernel<512, 16384, F, R, float>, 512, 16384, "bulk512_16k");
  // Correctness: every variant bit for bit against `pack` (memcpy: against x).
  std::vector<R> ref(static_cast<size_t>(n)), got(static_cast<size_t>(n));
  std::vector<float> hx(static_cast<size_t>(n));
  CHECK(cudaMemcpy(hx.data(), x, size_t(n) * 4, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < vs.size(); ++i) {
    CHECK(cudaMemset(y, 0xff, size_t(n) * sizeof(R)));
    vs[i].launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(i == 0 ? ref.data() : got.data(), y, size_t(n) * sizeof(R), cudaMemcpyDeviceToHost));
    if (i == 0) continue;
    const bool is_copy = vs[i].name == "memcpy";
    int64_t bad = 0;
    for (int64_t k = 0; k < n; ++k) {
      const void* want = is_copy ? static_cast<const void*>(&hx[size_t(k)]) : static_cast<const void*>(&ref[size_t(k)]);
      if (std::memcmp(want, &got[size_t(k)], sizeof(R)) != 0 && bad++ < 3)
        std::fprintf(stderr, "  %s %s n=%lld: element %lld differs\n", op, vs[i].name.c_str(), (long long)n, (long long)k);
    }
    if (bad) {
      std::fprintf(stderr, "elementwise_bulk: %s %s failed on %lld elements\n", op, vs[i].name.c_str(), (long long)bad);
      return 1;
    }
  }
  std::printf("  checked %s n=%lld: every variant equal to pack\n", op, (long long)n);
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
      v.launch();
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
  const float ref_us = median(vs[0].us);
  std::printf("%s n=%lld, %d rounds: median us, GB/s (read + written), spread (max-min)/median, vs pack\n", op,
              (long long)n, rounds);
  for (const Variant& v : vs) {
    const float med = median(v.us);
    const float lo = *std::min_element(v.us.begin(), v.us.end()), hi = *std::max_element(v.us.begin(), v.us.end());
    const double moved = v.name == "memcpy" ? double(n) * 8 : bytes;
    std::printf("  %-12s %8.3f us %6.0f GB/s  spread %6.1f%%  vs pack %+6.2f%%\n", v.name.c_str(), med,
                moved / (med * 1e-6) / 1e9, 100.0 * (hi - lo) / med, 100.0 * (ref_us / med - 1.0));
  }
  return 0;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 101;
  if (argc > 2 || rounds < 3 || rounds > 100000) {
    std::fprintf(stderr, "usage: elementwise_bulk [ROUNDS (3-100000)]\n");
    return 2;
  }
  int dev = 0, l2 = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const int64_t max_n = int64_t(1) << 24;
  const size_t flush_bytes = 2 * size_t(l2);
  float *x, *y;
  void* flush;
  CHECK(cudaMalloc(&x, size_t(max_n) * 4));
  CHECK(cudaMalloc(&y, size_t(max_n) * 4));
  CHECK(cudaMalloc(&flush, flush_bytes));
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> h(static_cast<size_t>(max_n));
  for (float& v : h) v = nd(gen);
  CHECK(cudaMemcpy(x, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  int rc = 0;
  for (int64_t n : {int64_t(1) << 20, int64_t(1) << 24}) {
    rc |= run("gelu_f32", ew::Gelu<float>{}, n, rounds, x, y, flush, flush_bytes);
    rc |= run("cast_f32_f16", ew::CastFromF32<__half>{}, n, rounds, x, reinterpret_cast<__half*>(y), flush, flush_bytes);
  }
  return rc;
}
