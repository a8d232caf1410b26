// copy_data.cu: does a copy's time depend on the values it moves? harness_context.cu found a copy
// kernel 2% slower on the harness's input (normal values, one in 61 scaled by 20) than on plain
// normal values, at 6 MB each way. The course's 100% line copies a buffer memset to 0x01.
// Times cudaMemcpyAsync (device to device) of one buffer per fill, by the course's method (a memset
// of 2x L2 before each copy, one event pair around it, warm-up rounds, the median), the fills in
// turns with the order rotated each round. Fills: bytes 0x00, bytes 0x01 (the copy line's), plain
// normal floats, the harness's normal floats with outliers, uniformly random 32-bit words.
// Usage: copy_data MB [ROUNDS]   (MB each way)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "copy_data: %s: %s\n", #call, cudaGetErrorString(e_));  \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

int main(int argc, char** argv) {
  const long long mb = argc > 1 ? std::atoll(argv[1]) : 6;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 101;
  if (argc > 3 || mb < 1 || mb > 4096 || rounds < 3 || rounds > 100000) {
    std::fprintf(stderr, "usage: copy_data [MB (1-4096)] [ROUNDS (3-100000)]\n");
    return 2;
  }
  int dev = 0, l2 = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const size_t bytes = size_t(mb) << 20, n = bytes / 4, flush_bytes = 2 * size_t(l2);
  const char* names[] = {"zeros", "bytes01", "normal", "outliers", "random"};
  constexpr int kFills = 5;
  std::vector<float*> src(kFills);
  float* dst;
  void* flush;
  CHECK(cudaMalloc(&dst, bytes));
  CHECK(cudaMalloc(&flush, flush_bytes));
  std::mt19937 gen(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> one_in(0, 60);
  std::vector<float> host(n);
  for (int f = 0; f < kFills; ++f) {
    CHECK(cudaMalloc(&src[size_t(f)], bytes));
    if (f < 2) {
      CHECK(cudaMemset(src[size_t(f)], f, bytes));
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      if (f == 4) {
        const uint32_t w = uint32_t(gen());
        std::memcpy(&host[i], &w, 4);
      } else {
        const float v = nd(gen);
        host[i] = f == 3 && one_in(gen) == 0 ? 20.0f * v : v;
      }
    }
    CHECK(cudaMemcpy(src[size_t(f)], host.data(), bytes, cudaMemcpyHostToDevice));
  }
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<std::vector<float>> us(kFills);
  unsigned value = 0;
  for (int r = 0; r < 5 + rounds; ++r)
    for (int j = 0; j < kFills; ++j) {
      const int f = (j + r) % kFills;
      CHECK(cudaMemsetAsync(flush, ++value & 0xff, flush_bytes));
      CHECK(cudaEventRecord(a));
      CHECK(cudaMemcpyAsync(dst, src[size_t(f)], bytes, cudaMemcpyDeviceToDevice));
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      if (r >= 5) us[size_t(f)].push_back(1e3f * ms);
    }
  auto median = [](std::vector<float> t) { std::sort(t.begin(), t.end()); return t[t.size() / 2]; };
  const float ref = median(us[1]);
  std::printf("cudaMemcpyAsync of %lld MB, %d rounds: median us, GB/s (read + written), vs bytes01\n", mb, rounds);
  for (int f = 0; f < kFills; ++f) {
    const float m = median(us[size_t(f)]);
    std::printf("  %-9s %9.3f us %6.0f GB/s  vs bytes01 %+6.2f%%\n", names[f], m, 2.0 * double(bytes) / (m * 1e-6) / 1e9,
                100.0 * (ref / m - 1.0));
  }
  return 0;
}
