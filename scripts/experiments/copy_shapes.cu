// copy_shapes.cu: how close can a copy kernel get to cudaMemcpyAsync at the sizes where chapters 11
// and 12 miss a peer's figure by 1-2% (49152 x 32 fp32: 6.3 MB each way; 2^24 fp32: 64 MB)?
// Times cudaMemcpyAsync device-to-device and copy kernels of several shapes by the course's method:
// a memset of 2x L2 before each launch, one event pair around the launch, warm-ups, the median of
// the timed launches. The variants are timed in turns (one launch of each per round, in an order
// rotated every round), so that clock drift falls on all of them alike.
// Usage: copy_shapes MB [ROUNDS]; prints one line per variant: median us, GB/s (read + written),
// spread (max-min)/median, and the median relative to cudaMemcpyAsync.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <cuda_runtime.h>
#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "copy_shapes: %s: %s\n", #call, cudaGetErrorString(e_));   \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// kPer uint4 per thread, all loads issued before any store. Within a block the k-th load of every
// thread is one contiguous run of blockDim uint4 (coalesced); blocks cover consecutive chunks.
template <int kPer>
__global__ void copy_chunk(const uint4* __restrict__ in, uint4* __restrict__ out, int64_t n) {
  const int64_t base = int64_t(blockIdx.x) * blockDim.x * kPer + threadIdx.x;
  uint4 v[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int64_t i = base + int64_t(k) * blockDim.x;
    if (i < n) v[k] = in[i];
  }
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int64_t i = base + int64_t(k) * blockDim.x;
    if (i < n) out[i] = v[k];
  }
}

// Grid-stride loop, kUnroll loads in flight per thread per trip (the elementwise template's shape).
template <int kUnroll>
__global__ void copy_stride(const uint4* __restrict__ in, uint4* __restrict__ out, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i0 < n; i0 += stride * kUnroll) {
    uint4 v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k)
      if (i0 + k * stride < n) v[k] = in[i0 + k * stride];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k)
      if (i0 + k * stride < n) out[i0 + k * stride] = v[k];
  }
}

struct Variant {
  std::string name;
  void (*kernel)(const uint4*, uint4*, int64_t);  // null: cudaMemcpyAsync
  int block = 0;
  int per = 1;     // uint4 per thread (chunk kernels)
  int waves = 0;   // grid-stride kernels: the grid in waves of resident blocks
  std::vector<float> us;
};

int main(int argc, char** argv) {
  const long long mb = argc > 1 ? atoll(argv[1]) : 6;
  const int rounds = argc > 2 ? atoi(argv[2]) : 25;
  if (argc > 3 || mb < 1 || mb > 8192 || rounds < 3 || rounds > 1000) {
    std::fprintf(stderr, "usage: copy_shapes [MB (1-8192)] [ROUNDS (3-1000)]\n");
    return 2;
  }
  int dev = 0, sms = 0, threads_per_sm = 0, l2 = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const int64_t bytes = int64_t(mb) << 20, n = bytes / 16;
  const size_t flush_bytes = 2 * size_t(l2);
  uint4 *in, *out;
  void* flush;
  CHECK(cudaMalloc(&in, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMemset(in, 7, bytes));

  std::vector<Variant> vs;
  vs.push_back({"cudaMemcpyAsync", nullptr});
  for (int b : {128, 256, 512, 1024}) vs.push_back({"chunk1 block" + std::to_string(b), copy_chunk<1>, b, 1});
  for (int b : {128, 256, 512, 1024}) vs.push_back({"chunk2 block" + std::to_string(b), copy_chunk<2>, b, 2});
  for (int b : {128, 256, 512}) vs.push_back({"chunk4 block" + std::to_string(b), copy_chunk<4>, b, 4});
  for (int b : {128, 256}) vs.push_back({"chunk8 block" + std::to_string(b), copy_chunk<8>, b, 8});
  for (int w : {1, 2, 4}) vs.push_back({"stride1 block256 waves" + std::to_string(w), copy_stride<1>, 256, 1, w});
  vs.push_back({"stride2 block256 waves1", copy_stride<2>, 256, 1, 1});

  auto launch = [&](const Variant& v) {
    if (!v.kernel) {
      CHECK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice));
      return;
    }
    int64_t grid;
    if (v.waves) grid = int64_t(sms) * (threads_per_sm / v.block) * v.waves;
    else grid = (n + int64_t(v.block) * v.per - 1) / (int64_t(v.block) * v.per);
    v.kernel<<<unsigned(grid), v.block>>>(in, out, n);
    CHECK(cudaGetLastError());
  };
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const int warmup = 5;
  unsigned value = 0;
  for (int r = 0; r < warmup + rounds; ++r) {
    for (size_t j = 0; j < vs.size(); ++j) {
      Variant& v = vs[(j + r) % vs.size()];
      CHECK(cudaMemsetAsync(flush, ++value & 0xff, flush_bytes));
      CHECK(cudaEventRecord(a));
      launch(v);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      if (r >= warmup) v.us.push_back(1e3f * ms);
    }
  }
  // The copies are checked: a wrong copy kernel would be a fast one.
  std::vector<uint4> host(static_cast<size_t>(n));
  CHECK(cudaMemset(out, 0, bytes));
  for (const Variant& v : vs) {
    launch(v);
    CHECK(cudaMemcpy(host.data(), out, bytes, cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < n; ++i)
      if (host[size_t(i)].x != 0x07070707u || host[size_t(i)].w != 0x07070707u) {
        std::fprintf(stderr, "copy_shapes: %s wrote a wrong value at uint4 %lld\n", v.name.c_str(), (long long)i);
        return 1;
      }
    CHECK(cudaMemset(out, 0, bytes));
  }
  auto median = [](std::vector<float> x) { std::sort(x.begin(), x.end()); return x[x.size() / 2]; };
  const float ref = median(vs[0].us);
  std::printf("copy of %lld MB (%d SMs, L2 %d MB, flush %zu MB, %d rounds)\n", mb, sms, l2 >> 20, flush_bytes >> 20, rounds);
  for (const Variant& v : vs) {
    const float m = median(v.us);
    const float lo = *std::min_element(v.us.begin(), v.us.end()), hi = *std::max_element(v.us.begin(), v.us.end());
    std::printf("%-28s %8.2f us %7.0f GB/s  spread %5.1f%%  vs memcpy %+6.1f%%\n", v.name.c_str(), m,
                2.0 * bytes / (m * 1e-6) / 1e9, 100.0 * (hi - lo) / m, 100.0 * (ref / m - 1.0));
  }
  return 0;
}
